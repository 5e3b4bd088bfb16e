"""The recorder's process (engine/proxy/recorder_process.py): every capture handed over is
stored, in order, including one larger than a pipe holds at once, and closing says which
conversations it recorded."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from engine.proxy.recorder import Capture
from engine.proxy.recorder_process import RecorderProcess
from engine.store import Store
from tests.proxy import shapes


def capture(text: str) -> Capture:
    """A Claude Code request whose one user message is ``text``, answered with "ok"."""
    body = shapes.request([shapes.user(text)])
    body["stream"] = False
    answered = Capture("POST", "/v1/messages", {}, json.dumps(body).encode())
    answered.status = 200
    answered.content_type = "application/json"
    answered.add(
        json.dumps(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [{"type": "text", "text": "ok"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 5, "output_tokens": 1},
            }
        ).encode()
    )
    return answered


def test_every_capture_is_stored_in_order_and_the_session_said(tmp_path: Path) -> None:
    """Three requests of one Claude Code session, the second of 300,000 characters (more than
    the 64 KiB a Linux pipe holds): three stored requests, their first messages as sent."""
    db = tmp_path / "child.db"
    Store.open(db).close()
    recorder = RecorderProcess(db)
    texts = ["first", "x" * 300_000, "third"]
    for text in texts:
        recorder.submit(capture(text))
    recorder.close()
    store = Store.open(db)
    (sid,) = store.proxied_sessions()
    exchanges = store.exchanges(sid)
    sent = [e.request["messages"][0]["content"][0]["text"] for e in exchanges]
    assert sent == texts
    assert recorder.conversations == {sid: f"proxy:{shapes.SESSION}"}
    assert list(recorder.failures) == []


def test_on_the_event_loop_a_capture_larger_than_the_pipe_waits_and_order_is_kept(
    tmp_path: Path,
) -> None:
    """Handed over on an event loop (as the proxy does), a 3,000,000-character request is more
    than the pipe holds (1 MiB at most): its rest waits while the loop runs, and the two small
    ones handed over behind it follow it in order."""
    db = tmp_path / "loop.db"
    Store.open(db).close()
    recorder = RecorderProcess(db)
    texts = ["x" * 3_000_000, "second", "third"]

    async def hand_over() -> bool:
        for text in texts:
            recorder.submit(capture(text))
        waited = recorder._loop is not None  # noqa: SLF001 - the pipe was full
        while recorder._loop is not None:  # noqa: SLF001 - the loop writes the rest
            await asyncio.sleep(0.01)
        return waited

    assert asyncio.run(hand_over())
    recorder.close()
    store = Store.open(db)
    (sid,) = store.proxied_sessions()
    sent = [e.request["messages"][0]["content"][0]["text"] for e in store.exchanges(sid)]
    assert sent == texts
    assert list(recorder.failures) == []
