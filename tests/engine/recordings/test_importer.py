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
        (['{"role": "user", "content": "hi"}', "not json"], "line 2: not JSON"),
        (
            ['{"role": "user", "content": "hi"}', '{"role": "system", "content": "x"}'],
            "line 2: role must be 'user' or 'assistant'",
        ),
        (
            ['{"role": "assistant", "content": "hello"}'],
            "line 1: the conversation must start with a user input",
        ),
        (['{"role": "user", "content": 5}'], "line 1: content must be a string"),
        (
            [
                '{"role": "user", "content": "a"}',
                '{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope"}]}',
            ],
            "line 2: tool_result for 'nope'",
        ),
    ],
)
def test_malformed_files_are_refused_by_line_and_store_nothing(
    store: Store, tmp_path: Path, lines: list[str], expected: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportError_) as info:
        import_session(store, path, "/ws", limit=2000)
    assert any(p.startswith(expected) for p in info.value.problems), info.value.problems
    assert store.list_sessions() == []


def test_every_bad_line_is_reported(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"role": "user", "content": "a"}\n{oops\n\n[1]\n')
    with pytest.raises(ImportError_) as info:
        import_session(store, path, "/ws", limit=2000)
    assert [p.split(":")[0] for p in info.value.problems] == ["line 2", "line 4"]
