"""This month's real recordings (tests/data/corpus, from public Entire checkpoint branches)
imported, against counts worked out once over each file with Python's ``json`` alone.

The requests, tokens and costs of these files are in ``test_corpus_costs.py``; here the
conversation: compactions with their recorded figures, tool calls live and compacted away,
messages, subagents, usage on its own call.
"""

from __future__ import annotations

from collections import Counter

from engine.messages.harness import INPUT_KEY
from engine.recordings.figures import session_figures
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.corpus import (
    AGENTV_CODEX,
    ENTIRE_CODEX,
    OMP_BOUNDARY,
    OMP_MANUAL,
    STARCAR_COPILOT,
    TESLAMINT_EXEC,
    TESLAMINT_MCP,
)
from tests.engine.recordings.helpers import import_all


def test_claude_code_2_1_219_beginning_at_its_compaction(store: Store) -> None:
    """By hand: line 5 is the file's only ``compact_boundary`` (``parentUuid`` null, its
    ``logicalParentUuid`` in no record of the file): ``compactMetadata`` trigger auto,
    ``preTokens`` 998,659, ``postTokens`` 18,101, ``durationMs`` 156,437,
    ``cumulativeDroppedTokens`` 2,052,198, so 2,052,198 − (998,659 − 18,101) = 1,071,640
    tokens were dropped by compactions before the file; line 6 the ``isCompactSummary``
    message. 250 distinct assistant ``message.id`` (356 records), 245 ``tool_use`` ids, each
    answered by one ``tool_result``; all after the boundary, so all live."""
    (one,) = import_all(store, OMP_BOUNDARY)
    report, sid = one.report, one.report.session.id
    assert sid is not None
    assert report.agent_version == "2.1.219"
    [comp] = store.compactions(sid)
    assert comp.trigger.value == "auto"
    assert (
        comp.stats["recorded_pre_tokens"],
        comp.stats["recorded_post_tokens"],
        comp.stats["recorded_duration_ms"],
        comp.stats["recorded_cumulative_dropped_tokens"],
    ) == (998_659, 18_101, 156_437, 2_052_198)
    assert report.recorded["compacted_before_file"] == 1_071_640
    history = store.history(sid)
    [summary] = history.summaries
    assert summary.content.startswith("This session is being continued")
    roles = Counter(m.role for m in one.messages)
    assert (roles["assistant"], roles["tool"]) == (250, 245)
    assert sum(len(m.tool_calls) for m in history.messages) == 245
    assert len(one.usages) == 250


def test_claude_code_2_1_217_manual_compact_mid_file(store: Store) -> None:
    """By hand: line 543 is a manual ``compact_boundary`` (297,190 → 16,970 tokens,
    ``durationMs`` 174,437, ``cumulativeDroppedTokens`` 280,220 = 297,190 − 16,970: the
    session's first); its ``preservedSegment`` names lines 536 (head), 544 (anchor: the summary)
    and 542 (tail), and the records after the summary hang off the tail. ``tool_use`` ids in
    lines 1-542: 129 (125 distinct responses), after line 543: 85 (83 responses); none of the
    129 is in ``preservedMessages``. So 129 calls are compacted away and 85 live."""
    (one,) = import_all(store, OMP_MANUAL)
    sid = one.report.session.id
    assert sid is not None
    assert one.report.agent_version == "2.1.217"
    [comp] = store.compactions(sid)
    assert comp.trigger.value == "manual"
    assert (
        comp.stats["recorded_pre_tokens"],
        comp.stats["recorded_post_tokens"],
        comp.stats["recorded_duration_ms"],
        comp.stats["recorded_cumulative_dropped_tokens"],
    ) == (297_190, 16_970, 174_437, 280_220)
    history = store.history(sid)
    assert len(history.summaries) == 1
    live = {m.id for m in history.messages}
    assert sum(len(m.tool_calls) for m in history.messages) == 85
    assert sum(len(m.tool_calls) for m in one.messages if m.id not in live) == 129
    assert sum(1 for m in one.messages if m.role == "assistant") == 125 + 83
    assert "compacted before this file begins" not in " ".join(one.report.warnings)


def test_copilot_cli_1_0_74_with_a_background_subagent(store: Store) -> None:
    """By hand over the 627 events: ``user.message`` at lines 9 (typed: "pick up where we left
    off"), 13 and 14 (``source: "system"``: an empty steering message, a
    ``<system_reminder>``) and 585 (``source: "agent-…"``: the subagent's prompt, after
    ``subagent.started`` for ``toolu_01838…`` at 581); ``assistant.message`` 59, of which 2
    carry ``parentToolCallId`` (the subagent's, claude-sonnet-5, outputs 133 at line 590 and
    519 at line 597); their ``toolRequests``: 73 in the session's own messages (powershell 44,
    grep 10, view 9, …), 5 in the subagent's; ``tool.execution_complete`` 73 + 5."""
    (one,) = import_all(store, STARCAR_COPILOT)
    report = one.report
    assert report.agent_version == "1.0.74"
    # Event kinds counted (the user's hooks: 144 ``hook.start``, 143 ``hook.end``), none unread;
    # the system prompt (line 8, ``system.message``) kept as the hidden prefix.
    assert (report.skipped["hook.start"], report.skipped["hook.end"]) == (144, 143)
    assert report.not_read.as_json()["kinds"] == {}
    origin = one.role("user")[0].meta.origin or {}
    [prompt] = origin["hidden_prefix"]
    assert (prompt["line"], prompt["role"]) == (8, "system")
    assert prompt["text"].startswith("You are the GitHub Copilot CLI")
    users = one.role("user")
    assert [u.content for u in users][0] == "pick up where we left off"
    assert [(u.meta.origin or {}).get(INPUT_KEY) for u in users][1:] == ["harness", "harness"]
    assert Counter(m.role for m in one.messages) == Counter(user=3, assistant=57, tool=73)
    calls = one.calls()
    assert sum(calls.values()) == 73
    assert (calls["powershell"], calls["grep"], calls["view"]) == (44, 10, 9)
    [child] = report.children
    assert child.session.agent_id == "toolu_01838NQjBeRWEtQvqP6L5B5o"
    assert child.session.id is not None
    sub = store.all_messages(child.session.id)
    assert Counter(m.role for m in sub) == Counter(user=1, assistant=2, tool=5)
    assert sub[0].content.startswith("You are Car 51-fix-car-r1")
    outputs = [u.usage.output_tokens for u in store.usages(child.session.id)]
    assert outputs == [133, 519]


def test_copilot_cli_context_is_the_estimate_said_so(store: Store) -> None:
    """The file records no input: the gauge's context is ctxscope's estimate of the last
    request's input (its usage record's ``local_estimate``) + the output that request recorded,
    437 (``outputTokens`` of the last ``assistant.message``, line 625), and says so; not the
    437 alone as if it were the whole request."""
    (one,) = import_all(store, STARCAR_COPILOT)
    last = one.usages[-1]
    assert (last.usage.input_tokens, last.usage.output_tokens) == (0, 437)
    assert last.local_estimate is not None and last.local_estimate > 437
    figures = session_figures(store, one.report.session, Settings())
    assert figures.context_tokens == last.local_estimate + 437
    assert figures.context_source.startswith("ctxscope's estimate of the last API call's input")


def test_codex_0_130_usage_on_its_own_call(store: Store) -> None:
    """By hand: 19 lines; the step's reasoning and two ``exec_command`` ``function_call``s
    (lines 11-12), then its ``token_count`` (line 13: last input 28,356, cached 2,432, output
    1,088), then the two outputs; the final answer (line 17) and its ``token_count`` (line 18:
    32,962, cached 28,032, output 1,117). A ``token_count`` with ``info: null`` (line 10) is no
    call. So the step with the calls carries 1,088 output tokens, the answer 1,117."""
    (one,) = import_all(store, ENTIRE_CODEX)
    assert one.report.agent_version == "0.130.0"
    assert Counter(m.role for m in one.messages) == Counter(user=1, assistant=2, tool=2)
    steps = one.role("assistant")
    assert [c.name for c in steps[0].tool_calls] == ["exec_command", "exec_command"]
    assert steps[1].tool_calls == []
    assert [
        (u.usage.input_tokens, u.usage.cache_read_input_tokens, u.usage.output_tokens)
        for u in one.usages
    ] == [(28_356 - 2_432, 2_432, 1_088), (32_962 - 28_032, 28_032, 1_117)]


def test_codex_0_140_usage_after_the_outputs_and_a_step_cut_by_the_commit(store: Store) -> None:
    """By hand (``json`` over the 92 lines, once): ``session_meta`` cli_version 0.140.0,
    originator ``codex-tui``; ``response_item`` messages: developer 1 (line 3), user 3 (line 4
    ``# AGENTS.md instructions``, the typed prompts at lines 6 and 76), assistant 8;
    ``function_call`` 22 (exec_command 20, update_plan 2) + ``custom_tool_call`` 1
    (apply_patch); outputs 20 + 1: the calls of lines 91-92 have none (the file ends there, cut
    by the commit that made Entire's checkpoint). Model responses (runs of reasoning / assistant
    message / calls): 11, of which 10 are followed, after their outputs, by a ``token_count``
    with ``info`` (lines 19 … 87, each ``total_token_usage`` new); the 11th (lines 88-92) has
    none. Outputs saying ``Process exited with code`` ≠ 0: lines 29 (2), 41 (1), 62 (1).
    Reasoning items: 9, each ``{"summary": [], "type": "reasoning"}``. The window as recorded:
    ``task_started`` and every ``token_count`` say ``model_context_window`` 258,400; the last
    count (line 87): input 29,162 (cached 22,400), output 405."""
    (one,) = import_all(store, AGENTV_CODEX)
    report = one.report
    assert report.agent_version == "0.140.0"
    assert report.recorded["originator"] == "codex-tui"
    assert Counter(m.role for m in one.messages) == Counter(user=2, assistant=11, tool=23)
    assert [m.content for m in one.role("user")] == [
        "remove agentv-claude-trace plugin no longer needed, can merge directly",
        "please push",
    ]
    origin = one.role("user")[0].meta.origin or {}
    assert [(h["line"], h["role"]) for h in origin["hidden_prefix"]] == [
        (3, "developer"),
        (4, "user"),
    ]
    assert one.calls() == Counter(exec_command=20, update_plan=2, apply_patch=1)
    assert [len(m.tool_calls) for m in one.role("assistant")] == [4, 1, 3, 3, 2, 1, 3, 1, 0, 3, 2]
    # 21 recorded results (3 with an exit code above 0) and the 2 the file never got
    assert report.missing_results == 2
    assert sum(m.meta.is_error for m in one.role("tool")) == 3 + 2
    # The two results the file never got are dated by the response that made their calls (its
    # first record, line 88's reasoning, 01:07:25.404), not by the import: the session's last
    # time stays the recording's (it was the import's clock, months later, in `sessions`).
    missing = [m for m in one.role("tool") if m.meta.interrupted]
    assert [m.created_at.isoformat() for m in missing] == ["2026-06-18T01:07:25.404000+00:00"] * 2
    assert max(m.created_at for m in one.messages).isoformat() == "2026-06-18T01:07:25.404000+00:00"
    # Each count goes to the step it measures (the one before its outputs), none to the next
    assert len(one.usages) == 10
    assert [u.usage.output_tokens for u in one.usages] == [
        351,
        177,
        230,
        301,
        211,
        676,
        242,
        162,
        203,
        405,
    ]
    last = one.usages[-1].usage
    assert (last.input_tokens, last.cache_read_input_tokens) == (29_162 - 22_400, 22_400)
    assert "token_count_unmatched" not in report.skipped
    # Nothing unread; the reasoning items Entire emptied counted as what they are
    assert report.not_read.as_json()["kinds"] == {}
    assert report.skipped["reasoning_empty"] == 9
    assert "reasoning_encrypted" not in report.skipped
    assert report.recorded["context_window"] == 258_400
    figures = session_figures(store, report.session, Settings())
    assert figures.context_tokens == 29_162 + 405
    # Codex records 95 % of the raw window (effective_context_window_percent): 258,400 / 0.95
    assert figures.window == 272_000
    assert "258,400" in figures.window_source


def test_codex_0_147_exec_with_world_state(store: Store) -> None:
    """By hand (``json`` over the 17 lines, once): ``session_meta`` 0.147.0, ``codex_exec``,
    ``history_mode`` legacy, ``context_window.window_id``; line 7 a ``world_state`` record (a
    kind this reader does not read); messages: developer at lines 3, 4, 5, 9 and 12, user at
    line 6 (three ``input_text`` items: ``<recommended_plugins>``, ``# AGENTS.md instructions``,
    ``<environment_context>``; no ``user_message`` event mirrors it) and line 10 (the prompt,
    mirrored by the ``user_message`` event of line 11), assistant at line 15 (phase
    ``final_answer``); one reasoning item with neither summary nor ``encrypted_content``; one
    ``token_count`` (line 16): input 39,623 (cached 15,104, ``cache_write_input_tokens`` 0),
    output 152; ``task_started`` and the count record ``model_context_window`` 353,400."""
    (one,) = import_all(store, TESLAMINT_EXEC)
    report = one.report
    assert report.agent_version == "0.147.0"
    assert (report.recorded["originator"], report.recorded["history_mode"]) == (
        "codex_exec",
        "legacy",
    )
    assert Counter(m.role for m in one.messages) == Counter(user=1, assistant=1)
    [user] = one.role("user")
    assert user.content.startswith("You are a futures analyst grounded in Kent Beck's \"Tidy")
    hidden = (user.meta.origin or {})["hidden_prefix"]
    assert [(h["line"], h["role"]) for h in hidden] == [
        (3, "developer"),
        (4, "developer"),
        (5, "developer"),
        (6, "user"),
        (9, "developer"),
    ]
    assert report.skipped["context_message"] == 1  # line 12, after the prompt
    assert report.not_read.as_json()["kinds"] == {"world_state": {"count": 1, "lines": [7]}}
    assert report.skipped["reasoning_empty"] == 1
    [usage] = one.usages
    assert (
        usage.usage.input_tokens,
        usage.usage.cache_read_input_tokens,
        usage.usage.cache_creation_input_tokens,
        usage.usage.output_tokens,
    ) == (39_623 - 15_104, 15_104, 0, 152)
    assert report.recorded["context_window"] == 353_400
    figures = session_figures(store, report.session, Settings())
    assert figures.context_tokens == 39_623 + 152
    assert figures.window == 372_000  # 353,400 is 95 % of it


def test_codex_0_147_as_an_mcp_server_with_code_mode_exec(store: Store) -> None:
    """By hand (``json`` over the 64 lines, once): ``session_meta`` 0.147.0, ``codex_cli_rs``,
    ``source: "mcp"`` (no ``thread_source``), turn id ``"3"``; the same context messages as the
    exec file (developer 3, 4, 5, 9, 12; user 6 with three context items; the prompt at line
    10, mirrored at 11); 9 ``custom_tool_call`` ``exec`` (lines 16 … 53), each answered by a
    ``custom_tool_call_output`` whose ``output`` is a list of ``input_text`` items beginning
    ``Script completed`` (none records an exit code); assistant messages at lines 15, 25
    (``commentary``) and 62 (``final_answer``); 17 reasoning items, all empty; 10
    ``token_count`` events, each after the outputs of its response (lines 18 … 63), outputs
    266, 184, 213, 123, 680, 1,375, 986, 104, 119, 2,682; the last input 62,510 (cached
    62,208)."""
    (one,) = import_all(store, TESLAMINT_MCP)
    report = one.report
    assert report.agent_version == "0.147.0"
    assert (report.recorded["originator"], report.recorded["source"]) == ("codex_cli_rs", "mcp")
    assert Counter(m.role for m in one.messages) == Counter(user=1, assistant=10, tool=9)
    assert one.role("user")[0].content.startswith("Independently review only the staged diff")
    assert one.calls() == Counter(exec=9)
    assert [len(m.tool_calls) for m in one.role("assistant")] == [1] * 9 + [0]
    tools = one.role("tool")
    assert all("Script completed" in m.content for m in tools)
    assert not any(m.meta.is_error for m in tools)
    assert report.missing_results == 0
    assert report.skipped["reasoning_empty"] == 17
    assert report.not_read.as_json()["kinds"] == {"world_state": {"count": 1, "lines": [7]}}
    assert [u.usage.output_tokens for u in one.usages] == [
        266, 184, 213, 123, 680, 1_375, 986, 104, 119, 2_682
    ]  # fmt: skip
    last = one.usages[-1].usage
    assert (last.input_tokens, last.cache_read_input_tokens) == (62_510 - 62_208, 62_208)
    assert "token_count_unmatched" not in report.skipped
    figures = session_figures(store, report.session, Settings())
    assert figures.context_tokens == 62_510 + 2_682
