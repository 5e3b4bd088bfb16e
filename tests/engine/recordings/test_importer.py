"""``ctxscope import``: recorded sessions become rounds, steps, tool pairs and usage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.context.builder import validate_conversation
from engine.models import RoundStatus
from engine.recordings.importing import ImportError_, import_session
from engine.store import Store

RECORDED = Path(__file__).parents[2] / "data" / "recorded_session.jsonl"


def test_recorded_session_is_stored_as_rounds_with_tool_pairs(store: Store) -> None:
    report = import_session(store, RECORDED, "/ws", limit=2000)
    sid = report.session.id
    assert sid is not None
    assert (report.rounds, report.usage_records) == (3, 3)
    # toolu_03 (second parallel Read) and toolu_06 (last line) never got a result
    assert report.missing_results == 2

    history = store.history(sid)
    users = [m for m in history.messages if m.role == "user"]
    assert [u.content for u in users] == [
        "Find where the retry delay is configured and double it.",
        "Now run the tests.",
        "ok, update it",
    ]
    tools = [m for m in history.messages if m.role == "tool"]
    assert [t.meta.tool_use_id for t in tools] == [
        "toolu_01",
        "toolu_02",
        "toolu_03",
        "toolu_04",
        "toolu_05",
        "toolu_06",
    ]
    assert [t.meta.tool_name for t in tools] == ["Grep", "Read", "Read", "Edit", "Bash", "Edit"]
    missing = json.loads(tools[2].content)
    assert missing["status"] == "error" and tools[2].meta.interrupted
    bash = json.loads(tools[4].content)
    assert bash["error"]["message"].startswith("E   AssertionError")
    assert all(m.tokens and m.tokens > 0 for m in history.messages)

    assert [r.status for r in store.rounds(sid)] == [
        RoundStatus.FINISHED,
        RoundStatus.FINISHED,
        RoundStatus.INTERRUPTED,
    ]
    usage = store.usages(sid)
    assert [u.usage.input_side for u in usage] == [3300, 1800, 1920]
    assert [(u.round_index, u.step) for u in usage] == [(1, 1), (1, 2), (1, 4)]

    wire = []
    for m in history.messages:  # the stored conversation is valid for the API
        if m.role == "user":
            wire.append({"role": "user", "content": [{"type": "text", "text": m.content}]})
        elif m.role == "assistant":
            blocks = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.input}
                for c in m.tool_calls
            ]
            wire.append({"role": "assistant", "content": blocks})
        else:
            block = {"type": "tool_result", "tool_use_id": m.meta.tool_use_id, "content": m.content}
            if wire[-1]["role"] == "user" and wire[-1]["content"][0]["type"] == "tool_result":
                wire[-1]["content"].append(block)
            else:
                wire.append({"role": "user", "content": [block]})
    assert validate_conversation(wire) == []


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            ['{"role": "assistant", "content": "hello"}'],
            "line 1: the conversation must start with a user input",
        ),
        (['{"role": "user", "content": 5}'], "bad.jsonl holds no messages"),
        (["not json", "[1]"], "not a recognised session format"),
    ],
)
def test_files_without_a_conversation_are_refused_and_store_nothing(
    store: Store, tmp_path: Path, lines: list[str], expected: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportError_) as info:
        import_session(store, path, "/ws", limit=2000)
    assert any(p.startswith(expected) for p in info.value.problems), info.value.problems
    assert store.list_sessions() == []


@pytest.mark.parametrize(
    ("bad", "skipped"),
    [
        ("not json", {"not_json": 1}),
        ("[1]", {"not_a_message": 1}),
        ('{"role": "system", "content": "x"}', {"role:system": 1}),
        ('{"role": "user", "content": 5}', {"unexpected_shape": 1}),
        (
            '{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope"}]}',
            {"result_without_call": 1},
        ),
        (
            '{"role": "assistant", "content": [{"type": "hologram"}, {"type": "text", '
            '"text": "ok"}]}',
            {"block:hologram": 1},
        ),
    ],
)
def test_a_line_not_understood_is_left_out_and_counted(
    store: Store, tmp_path: Path, bad: str, skipped: dict[str, int]
) -> None:
    """Line 2 of three is one the reader does not understand: the other two import (an
    assistant line whose only known block is kept keeps its text), the line is counted by
    why and named in a warning."""
    path = tmp_path / "odd.jsonl"
    lines = ['{"role": "user", "content": "a"}', bad, '{"role": "assistant", "content": "b"}']
    path.write_text("\n".join(lines) + "\n")
    report = import_session(store, path, "/ws", limit=2000)
    assert report.skipped == skipped
    (why,) = skipped
    assert report.warnings == [f"line 2: {why}; left out"]
    sid = report.session.id
    assert sid is not None
    texts = [m.content for m in store.all_messages(sid)]
    assert texts[0] == "a" and texts[-1] == "b"
    assert len(texts) == (3 if why == "block:hologram" else 2)


def test_every_bad_line_is_named(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"role": "user", "content": "a"}\n{oops\n\n[1]\n')
    report = import_session(store, path, "/ws", limit=2000)
    assert report.skipped == {"not_json": 1, "not_a_message": 1}
    assert report.warnings == ["line 2: not_json; left out", "line 4: not_a_message; left out"]
