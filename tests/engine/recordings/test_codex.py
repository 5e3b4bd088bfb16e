"""Codex CLI rollouts: the real 0.47 corpus file and a newer (0.104-form) rollout with a
compaction, imported through the real path and read back from the store."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from engine.models import RoundStatus
from engine.store import Store
from tests.engine.recordings.helpers import CORPUS, FIXTURES, import_all

CODEX = CORPUS / "yoavf__ai-sessions__codex-pomodor-timer.jsonl"


def test_corpus_rollout_keeps_every_call_input_and_answer(store: Store) -> None:
    """Tool calls by name: ``jq -r 'select(.payload.type=="function_call" or
    .payload.type=="custom_tool_call")|.payload.name' $X | sort | uniq -c`` → apply_patch 11,
    update_plan 4, shell 3; 18 outputs. User messages: ``jq -r 'select(.type=="response_item"
    and .payload.type=="message").payload.role' $X | sort | uniq -c`` → user 4 (one is the
    ``<environment_context>``), assistant 3."""
    (one,) = import_all(store, CODEX)
    assert one.report.fmt == "codex"
    assert one.calls() == Counter({"apply_patch": 11, "update_plan": 4, "shell": 3})
    assert len(one.role("tool")) == 18
    assert [m.content for m in one.role("user")] == [
        one.role("user")[0].content,
        "add smooth transitions between states",
        "add a Pause/Resume feature",
    ]
    assert one.role("user")[0].content.startswith("Build a simple Pomodoro timer web app")
    assert one.report.rounds == 3
    assert one.report.missing_results == 0
    # 20 reasoning items with one summary_text each: every one kept as thinking
    thinking = [b for m in one.role("assistant") for b in (m.meta.origin or {}).get("thinking", [])]
    assert len(thinking) == 20
    finals = [m for m in one.role("assistant") if m.content and not m.tool_calls]
    assert len(finals) == 3


def test_corpus_rollout_errors_usage_model_and_cwd(store: Store) -> None:
    """The one failed call: ``jq -r 'select(.payload.type=="custom_tool_call_output")
    |.payload.output[0:40]' $X`` shows one plain ``apply_patch verification failed`` among JSON
    outputs whose exit_code is 0. Usage: the last token_count's ``total_token_usage`` is
    input 215755 (cached 181760 of them), output 14976, and the ``last_token_usage`` of the
    21 events whose total changed add up to it (corpus facts §5); window 272000; model
    gpt-5-codex in all 21 turn_context; cwd from session_meta."""
    (one,) = import_all(store, CODEX)
    errors = [m for m in one.role("tool") if m.meta.is_error]
    assert [m.meta.tool_name for m in errors] == ["apply_patch"]
    assert len(one.usages) == 21
    assert sum(u.usage.input_tokens + u.usage.cache_read_input_tokens for u in one.usages) == (
        215755
    )
    assert sum(u.usage.cache_read_input_tokens for u in one.usages) == 181760
    assert sum(u.usage.output_tokens for u in one.usages) == 14976
    sid = one.report.session.id
    assert sid is not None
    assert store.get_session(sid).model == "gpt-5-codex"
    origin = one.role("user")[0].meta.origin or {}
    assert origin["recorded"]["cwd"] == "/Users/yoavfarhi/dev/pomodoro/codex"
    assert origin["recorded"]["cli_version"] == "0.47.0"
    assert origin["recorded"]["context_window"] == 272000
    (hidden,) = origin["hidden_prefix"]
    assert hidden["text"].startswith("<environment_context>")
    # Nothing dropped silently: the records not stored, by kind (jq counts, facts §5).
    assert one.report.skipped == {
        "turn_context": 21,
        "token_count_repeat": 21,  # 20 repeats + the first, whose info is null
        "event_msg:agent_reasoning": 20,
        "event_msg:user_message": 3,
        "event_msg:agent_message": 3,
    }
    assert all(r.status == RoundStatus.FINISHED for r in store.rounds(sid))


def test_newer_rollout_with_compaction(store: Store) -> None:
    """``fixtures/codex-0.104-compacted.jsonl``, written from openai/codex's
    ``RolloutItem`` / ``ResponseItem`` (protocol.rs, models.rs): session_meta with
    base_instructions and git, a developer message and AGENTS.md / environment context before
    the input, exec_command whose output says ``Process exited with code 1``, an apply_patch,
    token counts after each response (the newer order), then ``compacted`` with a
    replacement history and its ``context_compacted`` event. By hand: 2 calls, 1 error,
    3 usage records (input 9000+9500+1200 with 3000+8000+0 cached, output 200+150+30), one
    compaction whose context before was the last call's total_tokens, 9650."""
    (one,) = import_all(store, FIXTURES / "codex-0.104-compacted.jsonl")
    assert one.calls() == Counter({"exec_command": 1, "apply_patch": 1})
    assert [m.meta.is_error for m in one.role("tool")] == [True, False]
    assert [u.usage.input_tokens for u in one.usages] == [6000, 1500, 1200]
    assert [u.usage.cache_read_input_tokens for u in one.usages] == [3000, 8000, 0]
    assert [u.usage.output_tokens for u in one.usages] == [200, 150, 30]
    sid = one.report.session.id
    assert sid is not None
    assert store.get_session(sid).model == "gpt-5.3-codex"
    (compaction,) = store.compactions(sid)
    assert compaction.stats["recorded_pre_tokens"] == 9650
    (summary,) = store.summaries(sid)
    assert summary.content == (
        "[user]\nFix the failing cart test\n\n[user]\nAnother language model started to solve "
        "this problem and produced a summary of its thinking process.\nThe total was off by "
        "one in cart.py; the patch removed the - 1."
    )
    assert one.report.compactions == 1
    assert one.report.skipped["event_msg:context_compacted"] == 1
    assert one.report.skipped["reasoning_encrypted"] == 1
    assert one.report.skipped["base_instructions"] == 1
    origin = one.role("user")[0].meta.origin or {}
    assert [h["role"] for h in origin["hidden_prefix"]] == ["developer", "user", "user"]
    assert origin["recorded"]["git"]["branch"] == "main"
    assert origin["recorded"]["context_window"] == 258400
    # The answer after the compaction is the last step and ends the round.
    assert one.messages[-1].content == "Fixed: cart.total no longer subtracts one."


def test_half_written_last_line_imports_with_a_warning(store: Store, tmp_path: Path) -> None:
    """A rollout still being written: the corpus file's first 12 lines plus half of line 13
    (``head -c``); lines 1-12 hold one input and one shell call with its output."""
    lines = CODEX.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "rollout-live.jsonl"
    cut.write_text("".join(lines[:12]) + lines[12][:40], encoding="utf-8")
    (one,) = import_all(store, cut)
    assert one.calls() == Counter({"shell": 1})
    assert one.report.skipped["partial_line"] == 1
    assert one.report.warnings == [
        "line 13: cut mid-way (the file is still being written?); left out"
    ]
