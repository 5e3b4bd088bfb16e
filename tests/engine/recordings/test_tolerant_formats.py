"""Gemini CLI chats, OpenHands event lists and trajectories as a later release may write them:
fields nobody knows on the file and on every entry, entries of kinds nobody knows, an entry
that is not an object. Each file, changed in tmp_path, imports to the same messages, calls,
usage and rounds as untouched, and names what it left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.store import Store
from tests.engine.recordings.helpers import CORPUS, Imported, import_all

GEMINI = CORPUS / "yoavf__ai-sessions__gemini-cli-pomodoro-timer.json"
OPENHANDS = CORPUS / "All-Hands-AI__OpenHands__basic_gui_mode.json"
SWE = CORPUS / "SWE-agent__SWE-agent__swe-agent__test-repo-i1.traj"
MINI = Path(__file__).parents[2] / "data" / "mini_swe_agent.traj.json"
UNKNOWN = {"added_next_release": {"nested": [1, 2]}}


def widened(entries: list[Any]) -> list[Any]:
    """Every object entry with an unknown field added."""
    return [e | UNKNOWN if isinstance(e, dict) else e for e in entries]


def same_conversation(store: Store, plain_path: Path, changed: Any, tmp_path: Path) -> Imported:
    """Import the untouched file and the changed one; their conversations must be equal."""
    path = tmp_path / plain_path.name
    path.write_text(json.dumps(changed), encoding="utf-8")
    (plain,) = import_all(store, plain_path)
    (one,) = import_all(store, path)
    assert [(m.role, m.content, m.tool_calls) for m in one.messages] == [
        (m.role, m.content, m.tool_calls) for m in plain.messages
    ]
    assert [u.usage for u in one.usages] == [u.usage for u in plain.usages]
    assert one.report.rounds == plain.report.rounds
    added = {
        k: v - plain.report.skipped.get(k, 0)
        for k, v in one.report.skipped.items()
        if v != plain.report.skipped.get(k, 0)
    }
    one.report.skipped = added  # what the changes added, for the caller to check
    return one


def test_gemini_chat(store: Store, tmp_path: Path) -> None:
    """The corpus chat (11 calls, 13 usage records: test_gemini.py) with a message of a type
    nobody knows and a number among its messages, after message 1 (the first user input)."""
    chat = json.loads(GEMINI.read_text(encoding="utf-8")) | UNKNOWN
    messages = widened(chat["messages"])
    stranger = {"id": "m-x", "timestamp": messages[0]["timestamp"], "type": "hologram"}
    chat["messages"] = messages[:1] + [stranger, 42] + messages[1:]
    one = same_conversation(store, GEMINI, chat, tmp_path)
    assert len(one.usages) == 13
    assert sum(len(m.tool_calls) for m in one.messages) == 11
    assert one.report.skipped == {"message:hologram": 1, "not_a_message": 1}
    assert one.report.warnings == ["message 3: not_a_message; left out"]


def test_openhands_events(store: Store, tmp_path: Path) -> None:
    """The corpus event list (4 calls, 4 usage records: test_openhands.py) with an event
    that is neither action nor observation, an action nobody knows and a string, after the
    first event."""
    events = widened(json.loads(OPENHANDS.read_text(encoding="utf-8")))
    stamp = events[0]["timestamp"]
    extra = [
        {"id": 9001, "timestamp": stamp, "source": "environment", "hologram": {}},
        {"id": 9002, "timestamp": stamp, "source": "agent", "action": "teleport", "args": {}},
        "not an event",
    ]
    one = same_conversation(store, OPENHANDS, events[:1] + extra + events[1:], tmp_path)
    assert len(one.usages) == 4
    assert sum(len(m.tool_calls) for m in one.messages) == 4
    assert one.report.skipped == {"other_event": 1, "action:teleport": 1, "not_an_event": 1}
    assert one.report.warnings == ["event 3: not_an_event; left out"]


def test_swe_agent_trajectory(store: Store, tmp_path: Path) -> None:
    """The corpus trajectory (5 calls with results: test_swe_agent.py) with a message of a
    role nobody knows and a number in its history, after the system prompt."""
    traj = json.loads(SWE.read_text(encoding="utf-8")) | UNKNOWN
    history = widened(traj["history"])
    traj["history"] = history[:1] + [{"role": "critic", "content": "fine"}, 7] + history[1:]
    one = same_conversation(store, SWE, traj, tmp_path)
    assert sum(len(m.tool_calls) for m in one.messages) == 5
    assert one.report.skipped == {"role:critic": 1, "not_a_message": 1}
    assert one.report.warnings == ["history 2: not_a_message; left out"]


def test_mini_swe_agent_trajectory(store: Store, tmp_path: Path) -> None:
    """``tests/data/mini_swe_agent.traj.json`` (10 messages: system, then user and assistant
    in turn) with a message of a role nobody knows and one whose content is a number, after
    the system prompt."""
    traj = json.loads(MINI.read_text(encoding="utf-8")) | UNKNOWN
    messages = widened(traj["messages"])
    extra = [{"role": "critic", "content": "fine"}, {"role": "user", "content": 5}]
    traj["messages"] = messages[:1] + extra + messages[1:]
    one = same_conversation(store, MINI, traj, tmp_path)
    assert one.report.skipped == {"role:critic": 1, "unexpected_shape": 1}
    assert one.report.warnings == ["message 2: unexpected_shape; left out"]
