"""Companion files that start from a copy of their session's context (Claude Code ≥ 2.1.86:
``<session>/subagents/agent-acompact-*.jsonl``, the call that writes a compaction's summary,
and ``agent-aside_question-*.jsonl``, the side question asked with ``/btw``): they repeat the
parent's records under the same uuids (``isSidechain: true``, an ``agentId``), then add their
own. Only what is new in them is counted.

The files here, built in those shapes: a parent of 6 conversation records (``u1`` → Bash
call ``a1`` → its result ``r1`` → answer ``a2``; ``u2`` → answer ``a3``), three responses
with usage, then a compaction (boundary + summary). The acompact file repeats the 6 and adds
the summary request and its answer (input 40,000, cache read 0, output 2,100). The
aside_question file repeats the 6 and adds the question and its answer (input 9, cache read
18,000, output 120). Each copy also repeats the parent's usage (3 responses: outputs 50, 80,
30), which counted again would bill the parent's work twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.recordings.importing import parse_sessions
from engine.store import Store
from tests.engine.recordings.helpers import import_all

SID = "3f0a7c2e-5b1d-4c9e-8a6f-2d4e1b7c9a01"


def rec(kind: str, uuid: str, parent: str | None, t: int, **fields: Any) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/ws",
        "sessionId": SID,
        "version": "2.1.86",
        "type": kind,
        "uuid": uuid,
        "timestamp": f"2026-11-22T08:00:{t:02d}.000Z",
        **fields,
    }


def said(kind: str, uuid: str, parent: str | None, t: int, content: Any, **f: Any) -> dict:
    return rec(kind, uuid, parent, t, message={"role": kind, "content": content}, **f)


def answer(uuid: str, parent: str, t: int, mid: str, blocks: list, usage: dict) -> dict:
    message = {
        "role": "assistant",
        "id": mid,
        "model": "claude-sonnet-4-6",
        "content": blocks,
        "usage": usage,
    }
    return rec("assistant", uuid, parent, t, message=message)


def usage(inp: int, read: int, out: int) -> dict[str, int]:
    return {"input_tokens": inp, "cache_read_input_tokens": read, "output_tokens": out}


BASH = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
PARENT = [
    said("user", "u1", None, 1, "List the files"),
    answer("a1", "u1", 2, "msg_1", [BASH], usage(5, 1000, 50)),
    said(
        "user", "r1", "a1", 3, [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"}]
    ),
    answer("a2", "r1", 4, "msg_2", [{"type": "text", "text": "One file: a"}], usage(4, 1100, 80)),
    said("user", "u2", "a2", 5, "Thanks"),
    answer(
        "a3", "u2", 6, "msg_3", [{"type": "text", "text": "You are welcome"}], usage(3, 1200, 30)
    ),
]
BOUNDARY = {
    **rec("system", "b1", None, 40, subtype="compact_boundary", content="Conversation compacted"),
    "logicalParentUuid": "a3",
    "compactMetadata": {"trigger": "manual", "preTokens": 1233},
}
SUMMARY = said("user", "s1", "b1", 40, "Summary: listed the files.", isCompactSummary=True)


def companion(agent: str, ask: str, reply: str, use: dict[str, int]) -> str:
    copies = [{**r, "isSidechain": True, "agentId": agent} for r in PARENT]
    own = [
        {**said("user", f"{agent}-q", "a3", 20, ask), "isSidechain": True, "agentId": agent},
        {
            **answer(
                f"{agent}-a",
                f"{agent}-q",
                39,
                f"msg_{agent}",
                [{"type": "text", "text": reply}],
                use,
            ),
            "isSidechain": True,
            "agentId": agent,
        },
    ]
    return "".join(json.dumps(r) + "\n" for r in copies + own)


def project(tmp_path: Path) -> Path:
    session = tmp_path / f"{SID}.jsonl"
    session.write_text("".join(json.dumps(r) + "\n" for r in [*PARENT, BOUNDARY, SUMMARY]))
    agents = tmp_path / SID / "subagents"
    agents.mkdir(parents=True)
    (agents / "agent-acompact-5d1e.jsonl").write_text(
        companion(
            "acompact-5d1e",
            "Your task is to create a detailed summary",
            "Summary: listed the files.",
            usage(40000, 0, 2100),
        )
    )
    (agents / "agent-aside_question-9c2b.jsonl").write_text(
        companion(
            "aside_question-9c2b", "What does ls -a add?", "Hidden files.", usage(9, 18000, 120)
        )
    )
    return session


def test_the_compaction_call_counts_its_own_request_only(tmp_path: Path) -> None:
    """The acompact file's 8 records: 6 repeat the parent's (same uuids), 2 are its own. The
    compaction's recorded call is the one request: input 40,000, output 2,100 (counting the
    copies too it would be 40,000 + 5 + 4 + 3 input, 2,100 + 50 + 80 + 30 output)."""
    (parsed,) = parse_sessions(project(tmp_path))
    (summary,) = [i for i in parsed.items if i.kind == "summary"]
    assert summary.recorded_call is not None
    recorded = summary.recorded_call["usage"]
    assert (recorded["input_tokens"], recorded["output_tokens"]) == (40000, 2100)
    assert recorded["cache_read_input_tokens"] == 0


def test_the_side_question_is_its_own_turn_only(tmp_path: Path, store: Store) -> None:
    """The aside_question file as a subagent: its own question and answer, 1 round, 2
    messages, 1 usage record (output 120, cache read 18,000), no tool call (the parent's
    Bash call is a copy); the 6 copied records counted as ``copied_from_parent`` and named
    in a warning. The parent keeps its own 3 responses (outputs 50 + 80 + 30 = 160) and the
    call that wrote its compaction's summary (output 2,100): 2,260."""
    (parent,) = import_all(store, project(tmp_path))
    assert sum(u.usage.output_tokens for u in parent.usages) == 160 + 2_100
    (child,) = parent.report.children
    assert child.session.agent_id == "aside_question-9c2b"
    assert child.session.parent_session_id == parent.report.session.id
    assert (child.rounds, child.messages) == (1, 2)
    sid = child.session.id
    assert sid is not None
    messages = store.all_messages(sid)
    assert [m.content for m in messages] == ["What does ls -a add?", "Hidden files."]
    assert [
        (u.usage.output_tokens, u.usage.cache_read_input_tokens) for u in store.usages(sid)
    ] == [(120, 18000)]
    assert child.skipped["copied_from_parent"] == 6
    assert (
        "6 of 8 records repeat the parent session's (the context this file starts from); "
        "only the 2 of its own are counted"
    ) in child.warnings


def test_watch_counts_the_side_question_as_import_does(tmp_path: Path) -> None:
    """``watch`` of the parent follows the aside_question file as a subagent: the same 2
    messages and 1 usage record (output 120) as the import above, not the 6 copied records."""
    from engine.recordings.follow import Follower
    from engine.settings.config import Settings

    session = project(tmp_path)
    store = Store.open(tmp_path / "w.db")
    follower = Follower(session, Settings(), store)
    follower.poll()
    follower.poll()  # the children are polled once the parent is stored
    assert follower.session is not None and follower.session.id is not None
    (sid,) = store.child_sessions(follower.session.id)
    assert store.get_session(sid).agent_id == "aside_question-9c2b"
    assert [m.content for m in store.all_messages(sid)] == [
        "What does ls -a add?",
        "Hidden files.",
    ]
    assert [u.usage.output_tokens for u in store.usages(sid)] == [120]


def test_the_compaction_call_is_billed_once_by_import_and_by_watch(tmp_path: Path) -> None:
    """The request that wrote the summary is a real call: the session's figures count the
    parent's 3 responses and that one call — 4 requests, input 12 + 40,000, cache read 3,300,
    output 160 + 2,100 — on import and on watch alike. At Claude Sonnet 4.6's list prices
    ($3 / MTok input, $0.30 cache read, $15 output: anthropic.com/pricing): the parent's
    12 x 3 + 3,300 x 0.3 + 160 x 15 = 3,426 millionths, the call's 40,000 x 3 + 2,100 x 15 =
    151,500: $0.154926 (the copies counted again would add nothing here, and are not)."""
    from engine.recordings.figures import session_figures
    from engine.recordings.follow import Follower
    from engine.settings.config import Settings

    session = project(tmp_path)
    imported = Store.open(tmp_path / "i.db")
    (one,) = import_all(imported, session)
    watched = Store.open(tmp_path / "w.db")
    follower = Follower(session, Settings(), watched)
    follower.poll()
    assert follower.session is not None
    for store, stored in ((imported, one.report.session), (watched, follower.session)):
        figures = session_figures(store, stored, Settings())
        assert figures.requests == 4
        assert (figures.tokens.input, figures.tokens.cache_read) == (40_012, 3_300)
        assert figures.tokens.output == 2_260
        assert figures.cost == 0.154926
