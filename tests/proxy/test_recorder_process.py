"""The recorder's process (engine/proxy/recorder_process.py): every capture handed over is
stored, in order, including one larger than a pipe holds at once, and closing says which
conversations it recorded."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from engine.proxy import recorder_process
from engine.proxy.recorder import Capture
from engine.proxy.recorder_process import RecorderProcess
from engine.proxy.server import Proxy, ProxyConfig, ProxyThread
from engine.store import Store
from tests.fakes.anthropic_server import FakeAnthropicServer, text_reply
from tests.proxy import shapes
from tests.proxy.conftest import client


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


def test_a_recorder_far_behind_holds_the_next_request_until_it_has_caught_up(
    fake_anthropic: FakeAnthropicServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The recorder's process stopped (SIGSTOP): the pipe fills, then the captures wait in the
    proxy, up to ``PENDING_LIMIT`` (here 1 MiB). The next request is held — neither forwarded
    nor dropped — until the process runs again; then every request is answered and stored, in
    order. (Before, what waited grew without a bound.)"""
    monkeypatch.setattr(recorder_process, "PENDING_LIMIT", 1 << 20)
    db = tmp_path / "behind.db"
    Store.open(db).close()
    recorder = RecorderProcess(db)
    child = recorder._child.pid  # noqa: SLF001 - the recorder's process, stopped by hand
    os.kill(child, signal.SIGSTOP)
    proxy = Proxy(ProxyConfig(upstream=fake_anthropic.url, port=0), recorder)
    running = ProxyThread(proxy).start()
    texts = [f"{n} " + "x" * 400_000 for n in range(12)]  # 12 × 400 KB: over pipe + limit
    fake_anthropic.script([text_reply("ok") for _ in texts])
    answered: list[str] = []

    def send() -> None:
        sdk = client(proxy.url)
        for text in texts:
            reply = sdk.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=5,
                messages=[{"role": "user", "content": text}],
            )
            answered.append(reply.content[0].text)  # type: ignore[union-attr]

    sender = threading.Thread(target=send)
    sender.start()
    try:
        deadline = time.monotonic() + 60

        def held() -> bool:
            assert proxy.connections is not None
            return any(getattr(c, "held", False) for c in list(proxy.connections.open))

        while not held():  # a state, not a time: the proxy holds a request
            assert time.monotonic() < deadline and sender.is_alive(), len(answered)
            time.sleep(0.01)
        forwarded = len(fake_anthropic.requests)
        assert recorder.behind
        assert 2 <= forwarded < len(texts)  # some went through before the limit, not all
        assert len(answered) == forwarded  # each forwarded one was answered; the held one waits
    finally:
        os.kill(child, signal.SIGCONT)
    sender.join(timeout=120)
    assert not sender.is_alive()
    running.stop()
    assert answered == ["ok"] * len(texts)
    assert len(fake_anthropic.requests) == len(texts)
    store = Store.open(db)  # each its own conversation (no session header, other words)
    stored = sorted(
        (e for sid in store.proxied_sessions() for e in store.exchanges(sid)),
        key=lambda e: e.id or 0,
    )
    assert [e.request["messages"][0]["content"] for e in stored] == texts
