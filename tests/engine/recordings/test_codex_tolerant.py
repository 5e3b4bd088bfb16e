"""Codex rollouts as the next release may write them: records and items of types this version
does not know, a garbage line in the middle, a record in an unexpected shape, an output whose
call is missing, ``<turn_aborted>`` notes. Each is left out and counted by kind; the
conversation imports to the same counts as the untouched file."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.recordings import codex
from engine.recordings.base import Parsed
from engine.store import Store
from tests.engine.recordings.helpers import CORPUS, import_all

CODEX = CORPUS / "yoavf__ai-sessions__codex-pomodor-timer.jsonl"


def line(kind: str, payload: dict[str, object], stamp: str = "2025-10-21T20:05:00.000Z") -> str:
    return json.dumps({"timestamp": stamp, "type": kind, "payload": payload})


def test_unknown_records_and_lines_are_counted_and_the_rest_imports_the_same(
    store: Store, tmp_path: Path
) -> None:
    """After line 20 of the corpus rollout: a record of an unknown type, a response item and an
    event of unknown types, a line that is not JSON, a JSON line that is not a record, a
    token count whose numbers are words (a known type in a shape not expected); every payload
    also gets a field nobody knows. The untouched file's figures are in test_codex.py: 18 calls
    (apply_patch 11, update_plan 4, shell 3), 21 usage records, 3 rounds."""
    lines = CODEX.read_text(encoding="utf-8").splitlines()
    widened = []
    for text in lines:
        obj = json.loads(text)
        obj["payload"]["added_next_release"] = {"x": 1}
        widened.append(json.dumps(obj))
    inserted = [
        line("ai_note", {"text": "a record type from a later release"}),
        line("response_item", {"type": "hologram", "id": "h1"}),
        line("event_msg", {"type": "future_event"}),
        "this line is not JSON {",
        "[1, 2, 3]",
        line(
            "event_msg",
            {
                "type": "token_count",
                "info": {
                    "total_token_usage": {"input_tokens": 1},
                    "last_token_usage": {"input_tokens": "many"},
                },
            },
        ),
    ]
    mutated = widened[:20] + inserted + widened[20:]
    path = tmp_path / "rollout-mutated.jsonl"
    path.write_text("\n".join(mutated) + "\n", encoding="utf-8")
    (plain,) = import_all(store, CODEX)
    (one,) = import_all(store, path)
    assert (
        one.calls() == plain.calls() == Counter({"apply_patch": 11, "update_plan": 4, "shell": 3})
    )
    assert [(m.role, m.content) for m in one.messages] == [
        (m.role, m.content) for m in plain.messages
    ]
    assert len(one.usages) == len(plain.usages) == 21
    assert one.report.rounds == plain.report.rounds == 3
    # Known record types the parser could not use are counted by the parser (``skipped``);
    # lines the shared line reader could not take as a rollout record are named with their
    # numbers in the report's "not read" (the inserted lines are 21..26).
    new = {k: v for k, v in one.report.skipped.items() if plain.report.skipped.get(k) != v}
    assert new == {
        "response_item:hologram": 1,
        "event_msg:future_event": 1,
        "unexpected_shape:event_msg": 1,
    }
    assert one.report.not_read.kinds == {"ai_note": [21]}
    assert one.report.not_read.lines == {"not JSON": [24], "not a record (list)": [25]}
    assert one.report.warnings == ["line 26: unexpected shape (event_msg); left out"]


def test_the_agents_version_is_the_rollouts_cli_version() -> None:
    """``session_meta.payload.cli_version`` of the corpus file (line 1) is ``0.47.0``."""
    parsed = codex.parse(CODEX.read_text(encoding="utf-8"), CODEX.name)
    assert parsed.agent_version == "0.47.0"


def test_an_output_whose_call_is_missing_is_left_out_not_refused(
    store: Store, tmp_path: Path
) -> None:
    """The corpus file without its first ``shell`` call (a cut or resumed rollout): that
    call's output answers nothing and is counted; the other 17 calls import."""
    lines = CODEX.read_text(encoding="utf-8").splitlines()
    first_call = next(n for n, text in enumerate(lines) if '"type":"function_call"' in text)
    path = tmp_path / "rollout-cut.jsonl"
    path.write_text("\n".join(lines[:first_call] + lines[first_call + 1 :]) + "\n", "utf-8")
    (one,) = import_all(store, path)
    assert one.calls() == Counter({"apply_patch": 11, "update_plan": 4, "shell": 2})
    assert one.report.skipped["output_without_call"] == 1
    output_line = next(
        n
        for n, text in enumerate(lines[first_call + 1 :], start=first_call + 1)
        if '"type":"function_call_output"' in text
    )
    assert f"line {output_line}: output without call; left out" in one.report.warnings


def test_turn_aborted_notes_open_no_round(store: Store, tmp_path: Path) -> None:
    """An interrupted turn as codex-rs records it (``tasks/mod.rs``): the pending call's
    output ``aborted``, a user-role ``<turn_aborted>`` message, an ``event_msg`` of type
    ``turn_aborted``; then the user's next input. Two inputs: two rounds, not three."""
    rows = [
        line("session_meta", {"id": "s1", "cwd": "/w", "cli_version": "0.120.0"}),
        line("turn_context", {"cwd": "/w", "model": "gpt-5.3-codex"}),
        line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "run the slow tests"}],
            },
        ),
        line(
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": "pytest -q", "workdir": "/w"}),
                "call_id": "c1",
            },
        ),
        line(
            "response_item", {"type": "function_call_output", "call_id": "c1", "output": "aborted"}
        ),
        line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": "<turn_aborted>\n  <turn_id>t1</turn_id>\n"
                        "  <reason>interrupted</reason>\n</turn_aborted>",
                    }
                ],
            },
        ),
        line("event_msg", {"type": "turn_aborted", "turn_id": "t1", "reason": "interrupted"}),
        line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "only the fast ones"}],
            },
        ),
        line(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Run `pytest -q -m 'not slow'`."}],
            },
        ),
    ]
    path = tmp_path / "rollout-aborted.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    (one,) = import_all(store, path)
    assert [m.content for m in one.role("user")] == ["run the slow tests", "only the fast ones"]
    assert one.report.rounds == 2
    assert one.report.skipped["turn_aborted"] == 1
    assert one.report.skipped["event_msg:turn_aborted"] == 1


def test_line_level_changes_import_to_the_same_conversation(store: Store, tmp_path: Path) -> None:
    """The corpus rollout with CRLF line ends, a BOM, its line 30 written twice and a last
    line cut half-way (a copy of line 10 cut to 40 characters, as a rollout still being
    written ends): the same messages, calls and usage; the copy and the cut line counted."""
    lines = CODEX.read_text(encoding="utf-8").splitlines()
    changed = "\ufeff" + "\r\n".join(lines[:30] + [lines[29]] + lines[30:]) + "\r\n"
    changed += lines[9][:40]
    path = tmp_path / "rollout-crlf.jsonl"
    path.write_bytes(changed.encode("utf-8"))
    (plain,) = import_all(store, CODEX)
    (one,) = import_all(store, path)
    assert [(m.role, m.content, m.tool_calls) for m in one.messages] == [
        (m.role, m.content, m.tool_calls) for m in plain.messages
    ]
    assert [u.usage for u in one.usages] == [u.usage for u in plain.usages]
    assert one.report.recorded == plain.report.recorded  # line 1 read despite the BOM
    new = {k: v for k, v in one.report.skipped.items() if plain.report.skipped.get(k) != v}
    assert new == {"partial_line": 1}
    # line 31 repeats line 30 byte for byte: the shared line reader names it
    assert one.report.not_read.lines == {
        "repeats an earlier line": [31],
        "cut last line": [len(lines) + 2],
    }
    assert one.report.warnings == [
        f"line {len(lines) + 2}: cut mid-way (the file is still being written?); left out"
    ]


_STRANGERS = {
    "ai_note": lambda n: line("ai_note", {"text": f"from a later release {n}"}),
    "response_item:hologram": lambda n: line("response_item", {"type": "hologram", "n": n}),
    "event_msg:future_event": lambda n: line("event_msg", {"type": "future_event", "n": n}),
    "not JSON": lambda n: f"{{this is not JSON {n}",
    "not a record (no type)": lambda n: json.dumps({"neither": "type nor payload", "n": n}),
}
"""Lines of kinds this version does not read, each one different (``n``): a line that repeats
another whole is a copy, counted as such. Keyed by the name the report counts each under."""


def _signature(parsed: Parsed) -> list[tuple[object, ...]]:
    return [
        (i.kind, i.text, [(c.id, c.name, c.input) for c in i.calls], i.tool_use_id, i.usage)
        for i in parsed.items
    ]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=10_000), st.sampled_from(sorted(_STRANGERS))),
        max_size=8,
    )
)
def test_inserted_strangers_leave_the_conversation_as_it_was(
    insertions: list[tuple[int, str]],
) -> None:
    """Lines of kinds this version does not read, anywhere in the corpus rollout (never the
    last line, which would be a cut line), read by ``codex.parse``, the reader ``import`` and
    ``watch`` use: the same items, calls, results and usage, and each insertion counted under
    its kind."""
    lines = CODEX.read_text(encoding="utf-8").splitlines()
    plain = codex.parse("\n".join(lines) + "\n", CODEX.name)
    changed = list(lines)
    for n, (position, kind) in enumerate(sorted(insertions, reverse=True)):
        changed.insert(position % len(lines), _STRANGERS[kind](n))
    parsed = codex.parse("\n".join(changed) + "\n", CODEX.name)
    assert _signature(parsed) == _signature(plain)
    added = _counted(parsed) - _counted(plain)
    assert added == Counter(kind for _, kind in insertions)


def _counted(parsed: Parsed) -> Counter[str]:
    """What the report counts by kind: the parser's ``skipped`` (known record types it could
    not use) and the line reader's "not read" kinds (record types it does not know) and lines
    (not JSON, not a record)."""
    not_read = parsed.not_read
    return (
        parsed.skipped
        + Counter({k: len(v) for k, v in not_read.kinds.items()})
        + Counter({why: len(v) for why, v in not_read.lines.items()})
    )
