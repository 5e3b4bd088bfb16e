"""Ledger recall measured again and again (engine.replay.recall): what it keeps from one
measurement to the next must follow the request when the request changes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from engine.compaction.ledger import LedgerItem
from engine.models import History, Message, MessageMeta, Summary, ToolCall
from engine.replay.recall import Haystacks, LedgerRecall


def test_a_haystack_is_joined_from_its_parts_and_follows_them() -> None:
    stacks = Haystacks()
    stacks.begin()
    first = stacks.of(["alpha beta", "", "gamma"])
    assert first.text == "alpha beta gamma"  # empty parts left out, one space between
    assert first.holds("beta gamma")
    # the same parts again (equal strings, other objects): the same haystack, same answers
    stacks.begin()
    again = stacks.of(["alpha " + "beta", "", "gam" + "ma"])
    assert again is first and again.holds("beta gamma")
    # one part changed: joined and searched anew, not answered from the last one
    changed = stacks.of(["alpha beta", "delta"])
    assert changed is not first
    assert changed.text == "alpha beta delta"
    assert not changed.holds("beta gamma") and changed.holds("beta delta")


def test_haystacks_let_go_of_what_a_measurement_did_not_use() -> None:
    stacks = Haystacks()
    stacks.begin()
    kept = stacks.of(["kept"])
    dropped = stacks.of(["dropped"])
    stacks.begin()
    assert stacks.of(["kept"]) is kept  # used by the last measurement: kept
    stacks.begin()
    assert stacks.of(["kept"]) is kept
    assert stacks.of(["dropped"]) is not dropped  # unused for a measurement: joined anew


def _agent(sent: list[Message], stored: list[Message], summaries: list[Summary]) -> Any:
    """What ``LedgerRecall.measure`` reads of an agent: the history as sent and as stored,
    and the round in progress (none)."""
    return SimpleNamespace(
        sent_history=lambda: History(summaries=summaries, messages=sent),
        history=SimpleNamespace(history=History(messages=stored)),
        scratchpad=[],
        current_round=None,
    )


def test_recall_follows_the_request_from_one_measurement_to_the_next() -> None:
    meta = MessageMeta(round=1, step=1)
    call = ToolCall(id="t1", name="Read", input={"file_path": "src/app.py"})
    stored = [
        Message(id=1, role="user", content="Fix the parser", meta=MessageMeta(round=1)),
        Message(id=2, role="assistant", content="", tool_calls=[call], meta=meta),
        Message(id=3, role="tool", content="def parse(): ...", meta=meta),
    ]
    items = [
        LedgerItem("request", "fix the parser", 1, None, 1),
        LedgerItem("file_read", "src/app.py", 1, 1, 2),
    ]
    recall = LedgerRecall(items)
    # everything sent as stored: both items found in their own step or round
    assert recall.measure(3, _agent(stored, stored, [])) == {
        "file_read": 1.0,
        "file_changed": None,
        "command": None,
        "error": None,
        "request": 1.0,
        "decision": None,
    }
    # the step's call now sent projected (another object) without the path: no longer held
    masked = stored[1].model_copy(update={"tool_calls": []})
    got = recall.measure(3, _agent([stored[0], masked, stored[2]], stored, []))
    assert got["file_read"] == 0.0 and got["request"] == 1.0
    # the path comes back in a summary: found there
    summary = Summary(session_id=1, content="Read SRC/app.py", first_round=1, last_round=1)
    got = recall.measure(3, _agent([stored[0], masked, stored[2]], stored, [summary]))
    assert got["file_read"] == 1.0
    # and the summary without it: gone again
    other = summary.model_copy(update={"content": "Read nothing"})
    got = recall.measure(3, _agent([stored[0], masked, stored[2]], stored, [other]))
    assert got["file_read"] == 0.0
    # the request's own message removed from what is sent: the request is no longer held
    got = recall.measure(3, _agent([masked, stored[2]], stored, [other]))
    assert got["request"] == 0.0
