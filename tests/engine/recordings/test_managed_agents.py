"""A Claude Managed Agents event stream, written from the documented event shapes
(platform.claude.com/docs/en/managed-agents/reference "Event types"; the API reference's
``agent.tool_result.tool_use_id``, ``agent.mcp_tool_result.mcp_tool_use_id``,
``span.model_request_end.model_usage``): read as a session, not refused line by line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.recordings import anthropic_jsonl
from engine.recordings.base import ImportError_
from engine.recordings.importing import ParsedFiles, import_parsed, parse_path
from engine.settings.config import Settings
from engine.store import Store


def event(kind: str, n: int, **fields: object) -> str:
    return json.dumps(
        {"id": f"sevt_{n:02d}", "type": kind, "processed_at": f"2026-04-02T10:00:{n:02d}Z"} | fields
    )


STREAM = [
    event("session.status_running", 1),
    event("user.message", 2, content=[{"type": "text", "text": "List the files"}]),
    event("span.model_request_start", 3),
    event("agent.thinking", 4, thinking="Use bash ls."),
    event("agent.message", 5, content=[{"type": "text", "text": "Listing them."}]),
    event("agent.tool_use", 6, name="bash", input={"command": "ls"}),
    event(
        "span.model_request_end",
        7,
        model_usage={
            "input_tokens": 1200,
            "output_tokens": 40,
            "cache_creation_input_tokens": 800,
            "cache_read_input_tokens": 0,
        },
    ),
    event(
        "agent.tool_result",
        8,
        tool_use_id="sevt_06",
        content=[{"type": "text", "text": "a.py\nb.py"}],
        is_error=False,
    ),
    event("span.model_request_start", 9),
    event("agent.message", 10, content=[{"type": "text", "text": "Two files: a.py, b.py."}]),
    event(
        "span.model_request_end",
        11,
        model_usage={"input_tokens": 50, "output_tokens": 12, "cache_read_input_tokens": 2000},
    ),
    event("session.status_idle", 12, stop_reason={"type": "end_turn"}),
    event("agent.thread_context_compacted", 13),
    event("session.from_a_later_release", 14),
    event("agent.mcp_tool_result", 15, mcp_tool_use_id="sevt_99", content=[]),
]


def test_an_event_stream_is_read_as_a_session(store: Store, tmp_path: Path) -> None:
    """One input, two model requests (the first thinks, says a line and calls bash; the
    second answers), their usage from ``span.model_request_end``; the rest counted by type.
    A repeated event (line 10 again, as a stream reconnect can deliver it) is counted once."""
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join([*STREAM, STREAM[9]]) + "\n", encoding="utf-8")
    parsed = anthropic_jsonl.parse(path.read_text(encoding="utf-8"), path.name)
    assert parsed.fmt == "claude-managed-agents"
    assert [(i.kind, i.text) for i in parsed.items] == [
        ("user", "List the files"),
        ("assistant", "Listing them."),
        ("result", "a.py\nb.py"),
        ("assistant", "Two files: a.py, b.py."),
    ]
    step = parsed.items[1]
    assert [(c.id, c.name, c.input) for c in step.calls] == [("sevt_06", "bash", {"command": "ls"})]
    assert step.thinking == [{"type": "thinking", "thinking": "Use bash ls."}]
    assert parsed.skipped == {
        "session.status_running": 1,
        "span.model_request_start": 2,
        "span.model_request_end": 2,
        "session.status_idle": 1,
        "agent.thread_context_compacted": 1,
        "session.from_a_later_release": 1,
        "result_without_call": 1,
        "repeated_event": 1,
    }
    assert parsed.warnings == [
        "line 13: the agent compacted its context here; the event stream does not hold the summary"
    ]
    (report,) = import_parsed(store, ParsedFiles([(path, parsed)]), "/ws", Settings())
    assert report.rounds == 1
    sid = report.session.id
    assert sid is not None
    assert [
        (
            u.usage.input_tokens,
            u.usage.cache_creation_input_tokens,
            u.usage.cache_read_input_tokens,
            u.usage.output_tokens,
        )
        for u in store.usages(sid)
    ] == [(1200, 800, 0, 40), (50, 0, 2000, 12)]


def test_a_stream_without_a_user_message_is_refused_in_one_line(tmp_path: Path) -> None:
    raw = "\n".join(STREAM[:1] + STREAM[2:8]) + "\n"
    with pytest.raises(ImportError_) as info:
        anthropic_jsonl.parse(raw, "events.jsonl")
    assert info.value.problems == [
        "events.jsonl is a Claude Managed Agents event stream without a user.message"
    ]


def test_the_import_reads_a_pure_event_stream(tmp_path: Path) -> None:
    """Its lines carry no ``role``: ``import`` (a file, no format named) reads it as the
    Managed Agents stream it is, the same session as above: 1 round, 2 usage records."""
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(STREAM) + "\n", encoding="utf-8")
    ((_, parsed),) = parse_path(path).files
    assert parsed.fmt == "claude-managed-agents"
    assert [i.kind for i in parsed.items].count("user") == 1
    assert sum(1 for i in parsed.items if i.usage is not None) == 2
