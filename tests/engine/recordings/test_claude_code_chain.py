"""The chain walk over what real Claude Code sessions do to the uuid tree, in files built
here from the documented shapes (``tests/data/corpus/README.md``, issue 28):

- a resumed session (2.1.11 → 2.1.14) replays the earlier records under new uuids and keeps
  only the last ``tool_use`` of each parallel batch;
- a ``compact_boundary`` (``parentUuid: null``) whose ``logicalParentUuid`` names a record that
  is not in the file, with the ``agent-acompact-*`` file that wrote its summary beside it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from engine.recordings import claude_code
from engine.recordings.importing import parse_sessions
from engine.recordings.writer import check

SESSION = "5e55-resumed"


def rec(kind: str, uuid: str, parent: str | None, line_time: int, **fields: Any) -> str:
    return json.dumps(
        {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "isSidechain": False,
            "sessionId": SESSION,
            "cwd": "/ws",
            "timestamp": f"2026-03-20T10:00:{line_time:02d}.000Z",
            **fields,
        }
    )


def user(uuid: str, parent: str | None, t: int, text: str, **fields: Any) -> str:
    return rec("user", uuid, parent, t, message={"role": "user", "content": text}, **fields)


def call(uuid: str, parent: str, t: int, mid: str, tool_id: str, command: str, v: str) -> str:
    block = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
    message = {"role": "assistant", "id": mid, "model": "claude-opus-4-6", "content": [block]}
    return rec("assistant", uuid, parent, t, message=message, version=v)


def answer(uuid: str, parent: str, t: int, mid: str, text: str, v: str) -> str:
    message = {
        "role": "assistant",
        "id": mid,
        "model": "claude-opus-4-6",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return rec("assistant", uuid, parent, t, message=message, version=v)


def result(uuid: str, parent: str, t: int, tool_id: str, text: str) -> str:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": text}
    return rec("user", uuid, parent, t, message={"role": "user", "content": [block]})


ASK = "Count the files in src and tests"
BEFORE_RESUME = [  # lines 1-6, written by 2.1.11
    user("a1", None, 1, ASK, version="2.1.11"),
    call("a2", "a1", 2, "msg_1", "toolu_src", "ls src", "2.1.11"),
    call("a3", "a2", 3, "msg_1", "toolu_tests", "ls tests", "2.1.11"),
    result("a4", "a2", 4, "toolu_src", "a.py\nb.py\nc.py"),
    result("a5", "a3", 5, "toolu_tests", "t1.py\nt2.py"),
    answer("a6", "a5", 6, "msg_2", "src 3, tests 2", "2.1.11"),
]
REPLAY = [  # lines 7-10, the same under new uuids, the batch's last tool_use only
    user("b1", None, 1, ASK, version="2.1.14"),
    call("b2", "b1", 3, "msg_1", "toolu_tests", "ls tests", "2.1.14"),
    result("b3", "b2", 5, "toolu_tests", "t1.py\nt2.py"),
    answer("b4", "b3", 6, "msg_2", "src 3, tests 2", "2.1.14"),
]
AFTER_RESUME = [  # lines 11-12: the resumed session goes on
    user("b5", "b4", 20, "Now count docs", version="2.1.14"),
    answer("b6", "b5", 21, "msg_3", "docs 1", "2.1.14"),
]


def test_a_resumed_session_takes_the_batch_siblings_from_the_earlier_copy_in_place() -> None:
    """The chain is lines 7-12; ``toolu_src`` is only in the earlier copy (line 2). It goes
    with its batch (one step calling both, in the batch's order), its result (line 4) after
    it, and the conversation still starts with the user's input: both calls answered."""
    parsed = claude_code.parse("\n".join(BEFORE_RESUME + REPLAY + AFTER_RESUME) + "\n", "r.jsonl")
    assert [(i.kind, i.line) for i in parsed.items] == [
        ("user", 7),
        ("assistant", 2),  # the step's first record: the earlier copy's sibling
        ("result", 4),
        ("result", 9),
        ("assistant", 10),
        ("user", 11),
        ("assistant", 12),
    ]
    step = parsed.items[1]
    assert [c.id for c in step.calls] == ["toolu_src", "toolu_tests"]
    assert [i.tool_use_id for i in parsed.items if i.kind == "result"] == [
        "toolu_src",
        "toolu_tests",
    ]
    # The earlier copies of what the chain holds: a3 (toolu_tests), a5 (its result), a6.
    assert parsed.skipped["replayed_copy"] == 3
    assert parsed.skipped["off_chain:user"] == 1  # a1, the earlier copy of the input
    assert parsed.agent_version == "2.1.11 → 2.1.14"
    assert check(parsed) == []


def test_a_sibling_replayed_on_the_chains_side_is_taken_from_there() -> None:
    """When the replay did write the sibling (line 8, off the chain under ``b1``), that copy
    is the one taken and the earlier one (line 2) is a replayed copy."""
    sibling = call("b2x", "b1", 2, "msg_1", "toolu_src", "ls src", "2.1.14")
    sibling_result = result("b3x", "b2x", 4, "toolu_src", "a.py\nb.py\nc.py")
    replay = [REPLAY[0], sibling, REPLAY[1], sibling_result, *REPLAY[2:]]
    parsed = claude_code.parse("\n".join(BEFORE_RESUME + replay + AFTER_RESUME) + "\n", "r.jsonl")
    assert [(i.kind, i.line) for i in parsed.items][:4] == [
        ("user", 7),
        ("assistant", 8),
        ("result", 10),
        ("result", 11),
    ]
    assert [c.id for c in parsed.items[1].calls] == ["toolu_src", "toolu_tests"]
    assert parsed.skipped["replayed_copy"] == 5  # a2, a3, a4, a5, a6
    assert check(parsed) == []


PRE_TOKENS = 167_094
COMPACTED = [
    user("u1", None, 1, "Build the parser"),  # 1
    call("x1", "u1", 2, "msg_a", "toolu_1", "ls", "2.1.88"),  # 2
    result("r1", "x1", 3, "toolu_1", "parser.py"),  # 3
    answer("x2", "r1", 4, "msg_b", "Read it.", "2.1.88"),  # 4
    rec(  # 5: its logicalParentUuid names a record that was never written
        "system",
        "cb",
        None,
        30,
        subtype="compact_boundary",
        content="Conversation compacted",
        logicalParentUuid="00000000-gone",
        compactMetadata={"trigger": "auto", "preTokens": PRE_TOKENS},
    ),
    user(
        "s1",
        "cb",
        31,
        "This session is being continued. Summary: parser built.",
        isCompactSummary=True,
    ),
    user("u2", "s1", 32, "Go on"),  # 7
    call("x3", "u2", 33, "msg_c", "toolu_2", "pytest", "2.1.88"),  # 8
    result("r2", "x3", 34, "toolu_2", "1 passed"),  # 9
    answer("x4", "r2", 35, "msg_d", "Done.", "2.1.88"),  # 10
]


def acompact(agent: str) -> str:
    """The call that wrote the summary: a sidechain of two records, ended before line 5."""
    common = {"isSidechain": True, "agentId": agent, "sessionId": SESSION}
    first = {
        **common,
        "type": "user",
        "uuid": "c1",
        "parentUuid": None,
        "timestamp": "2026-03-20T10:00:20.000Z",
        "message": {"role": "user", "content": "Summarise the conversation"},
    }
    second = {
        **common,
        "type": "assistant",
        "uuid": "c2",
        "parentUuid": "c1",
        "timestamp": "2026-03-20T10:00:29.000Z",
        "message": {
            "role": "assistant",
            "id": "msg_sum",
            "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": "Summary: parser built."}],
            "usage": {"input_tokens": 1000, "output_tokens": 200},
        },
    }
    return json.dumps(first) + "\n" + json.dumps(second) + "\n"


def test_a_dangling_logical_parent_keeps_what_came_before_and_the_compaction() -> None:
    """Everything before the boundary is kept (the walk goes on from line 4, the last
    conversation record before it), the compaction is recognised with its preTokens, and the
    warning says so."""
    parsed = claude_code.parse("\n".join(COMPACTED) + "\n", "c.jsonl")
    assert [i.kind for i in parsed.items] == [
        "user", "assistant", "result", "assistant",
        "summary",
        "user", "assistant", "result", "assistant",
    ]  # fmt: skip
    summary = parsed.items[4]
    assert summary.pre_tokens == PRE_TOKENS and summary.trigger == "auto"
    assert summary.text.startswith("This session is being continued.")
    assert parsed.warnings == [
        "line 5: the compaction's logicalParentUuid 00000000-gone is not in the file; the "
        "conversation goes on from line 4, the last conversation record before it"
    ]
    assert check(parsed) == []


@pytest.mark.usefixtures("no_key")
def test_the_dangling_compaction_gets_its_acompact_call_and_imports_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = tmp_path / "sess.jsonl"
    session.write_text("\n".join(COMPACTED) + "\n")
    agents = tmp_path / "sess" / "subagents"
    agents.mkdir(parents=True)
    (agents / "agent-acompact-1a2b.jsonl").write_text(acompact("acompact-1a2b"))
    (parsed,) = parse_sessions(session)
    summary = next(i for i in parsed.items if i.kind == "summary")
    assert summary.recorded_call is not None
    assert summary.recorded_call["agent_id"] == "acompact-1a2b"
    assert summary.recorded_call["model"] == "claude-sonnet-4-6"
    assert summary.recorded_call["usage"]["input_tokens"] == 1000
    assert summary.recorded_call["usage"]["output_tokens"] == 200
    assert parsed.children == []  # the compaction call is not a task subagent

    code = main(["import", str(session), "--db", str(tmp_path / "c.db"), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["compactions"] == 1
    assert data["messages"] == 8  # user, assistant, tool, assistant on each side of it
    assert any("logicalParentUuid 00000000-gone" in w for w in data["warnings"])
