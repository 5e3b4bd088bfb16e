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
        # the history manager's own list, as it is (not a validated copy)
        history=SimpleNamespace(history=History.model_construct(summaries=[], messages=stored)),
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


def test_which_sent_messages_are_stored_follows_the_history_list() -> None:
    """A message sent as stored is looked for in its own step only; one sent but not stored
    (projected, archived) in the rest. What is stored is kept while history's list grows and
    taken anew when the list is replaced (a reload)."""
    m1 = Message(id=1, role="user", content="start", meta=MessageMeta(round=1))
    m2 = Message(id=2, role="assistant", content="alpha-beta", meta=MessageMeta(round=1, step=1))
    m3 = Message(id=3, role="tool", content="ok", meta=MessageMeta(round=1, step=1))
    m4 = Message(id=4, role="assistant", content="gamma-delta", meta=MessageMeta(round=1, step=2))
    # recorded in steps no longer sent: found only in what is sent but not stored
    items = [
        LedgerItem("decision", "alpha-beta", 2, 1, 3),
        LedgerItem("command", "gamma-delta", 3, 1, 3),
    ]
    recall = LedgerRecall(items)
    stored = [m1, m2, m3]
    assert recall.measure(9, _agent([m1, m2, m3], stored, []))["decision"] == 0.0
    # reloaded without m2, which is still sent: now it is among the rest
    stored = [m1, m3]
    assert recall.measure(9, _agent([m1, m2, m3], stored, []))["decision"] == 1.0
    # the same list grown by m4, sent as stored: in its own step, not among the rest
    stored.append(m4)
    got = recall.measure(9, _agent([m1, m2, m3, m4], stored, []))
    assert got["decision"] == 1.0 and got["command"] == 0.0


def test_items_are_known_from_the_message_that_recorded_them_in_any_order() -> None:
    """The items recorded up to a message: found by halving when the ledger is in message
    order, by looking at each otherwise (an item with no message is always known)."""
    meta = MessageMeta(round=1, step=1)
    stored = [Message(id=1, role="assistant", content="read a.py and b.py", meta=meta)]
    in_order = [LedgerItem("file_read", "a.py", 1, 1, 1), LedgerItem("file_read", "c.py", 1, 1, 5)]
    shuffled = [in_order[1], LedgerItem("file_read", "b.py", 1, 1, None), in_order[0]]
    agent = _agent(stored, stored, [])
    assert LedgerRecall(in_order).measure(1, agent)["file_read"] == 1.0  # c.py not yet known
    assert LedgerRecall(in_order).measure(5, agent)["file_read"] == 0.5
    assert LedgerRecall(shuffled).measure(1, agent)["file_read"] == 1.0  # a.py and b.py
    assert LedgerRecall(shuffled).measure(5, agent)["file_read"] == 2 / 3
