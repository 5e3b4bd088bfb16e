"""A proxy for its own agents only (issue 42): the cross-site post, slow connections, too many
connections, malformed HTTP and ``--jsonl`` output, against a real proxy on 127.0.0.1 in front
of the fake Messages API.

The issue's attack: what any web page can send to 127.0.0.1 without a preflight — ``POST
/v1/messages`` with ``Origin: https://evil.com`` and ``Content-Type: text/plain`` — was
forwarded upstream and stored as a new session with the attacker's text.
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.proxy import _printer
from engine.proxy.recorder import Recorder
from engine.proxy.server import Proxy, ProxyConfig, ProxyThread
from engine.settings.config import Settings
from engine.store import Store
from tests.fakes.anthropic_server import (
    FAKE_API_KEY,
    FakeAnthropicServer,
    fake_anthropic,  # noqa: F401  (the fixture)
    text_reply,
)
from tests.proxy.test_passthrough import BODY, raw

JSON_BODY = json.dumps(BODY).encode()


class Running:
    def __init__(self, upstream: str, db: Path, **config: object) -> None:
        self.db = db
        self.recorder = Recorder(db)
        self.proxy = Proxy(ProxyConfig(upstream=upstream, port=0, **config), self.recorder)  # type: ignore[arg-type]
        self.thread = ProxyThread(self.proxy).start()
        self.stopped = False

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.thread.stop()

    @property
    def port(self) -> int:
        return self.proxy.port

    def stored(self) -> int:
        """Requests stored, once the proxy has stopped and its recorder flushed."""
        self.stop()
        if not self.db.exists():
            return 0
        store = Store.open(self.db)
        try:
            return sum(len(store.exchanges(s)) for s in store.proxied_sessions())
        finally:
            store.close()


@pytest.fixture
def running(
    fake_anthropic: FakeAnthropicServer,  # noqa: F811
    tmp_path: Path,
) -> Iterator[Running]:
    proxy = Running(fake_anthropic.url, tmp_path / "p.db", header_timeout=1.0, body_timeout=1.0)
    yield proxy
    proxy.stop()


AGENT = {"x-api-key": FAKE_API_KEY, "anthropic-version": "2023-06-01"}


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.com", "Content-Type": "text/plain"},  # the post
        {"Origin": "https://evil.com", "Content-Type": "application/json"},
        {"Origin": "null", "Content-Type": "application/json"},  # a sandboxed iframe, a file
        {"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"},
        {"Sec-Fetch-Site": "same-site", "Content-Type": "application/json"},
        {"Content-Type": "text/plain"},
        {"Content-Type": "text/plain;charset=UTF-8"},
        {"Content-Type": "application/x-www-form-urlencoded"},
        {"Content-Type": "multipart/form-data; boundary=x"},
        {"Content-Type": ""},
    ],
)
def test_what_a_web_page_can_send_is_refused_before_anything_is_forwarded_or_stored(
    fake_anthropic: FakeAnthropicServer,  # noqa: F811
    running: Running,
    headers: dict[str, str],
) -> None:
    status, _, answer = raw(running.port, "POST", "/v1/messages", JSON_BODY, AGENT | headers)
    assert status == 403
    assert json.loads(answer)["error"]["type"] == "permission_error"
    assert fake_anthropic.requests == []
    assert running.stored() == 0


def test_an_agents_request_still_goes_through(
    fake_anthropic: FakeAnthropicServer,  # noqa: F811
    running: Running,
) -> None:
    """The SDK's own headers (JSON; ``Sec-Fetch-Site: none`` is what a browser sends for a
    request the user typed, so it passes too)."""
    fake_anthropic.script([text_reply("one"), text_reply("two")])
    for extra in ({}, {"Sec-Fetch-Site": "none"}):
        headers = AGENT | {"Content-Type": "application/json; charset=utf-8"} | extra
        status, _, _ = raw(running.port, "POST", "/v1/messages", JSON_BODY, headers)
        assert status == 200
    assert len(fake_anthropic.requests) == 2
    assert running.stored() == 2


def _closed_within(sock: socket.socket, seconds: float) -> bytes:
    """What the proxy sent before it closed ``sock``; fails if it is still open after
    ``seconds``."""
    sock.settimeout(seconds)
    got = b""
    try:
        while piece := sock.recv(4096):
            got += piece
    except ConnectionResetError:
        pass
    except TimeoutError:
        pytest.fail(f"still open after {seconds} s; got {got!r}")
    return got


def test_headers_sent_a_byte_at_a_time_are_cut_off(
    fake_anthropic: FakeAnthropicServer,  # noqa: F811
    running: Running,
) -> None:
    """Slowloris: a byte every 0.1 s keeps the connection busy but never ends the headers;
    the 1 s header deadline closes it (without it the connection stays open as long as the
    client likes: the loop below would run to its 40 bytes)."""
    sock = socket.create_connection(("127.0.0.1", running.port))
    request = f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{running.port}\r\nX-Slow: ".encode()
    started = time.monotonic()
    sent = 0
    try:
        for byte in request + b"a" * 40:
            sock.sendall(bytes([byte]))
            sent += 1
            time.sleep(0.1)
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert _closed_within(sock, 5) == b""
    assert time.monotonic() - started < 5
    assert sent < len(request) + 40
    sock.close()
    assert running.proxy.connections is not None and running.proxy.connections.slow == 1
    assert fake_anthropic.requests == []


def test_an_idle_connection_is_closed_and_a_slow_body_is_a_408(
    fake_anthropic: FakeAnthropicServer,  # noqa: F811
    running: Running,
) -> None:
    idle = socket.create_connection(("127.0.0.1", running.port))
    assert _closed_within(idle, 5) == b""
    body = socket.create_connection(("127.0.0.1", running.port))
    body.sendall(
        f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{running.port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{}".encode()
    )
    answer = _closed_within(body, 5)
    assert answer.startswith(b"HTTP/1.1 408")
    assert fake_anthropic.requests == []
    assert running.stored() == 0


def test_connections_past_the_cap_are_closed_with_one_log_line(
    fake_anthropic: FakeAnthropicServer,  # noqa: F811
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    proxy = Running(fake_anthropic.url, tmp_path / "p.db", max_connections=8, header_timeout=30)
    held = [socket.create_connection(("127.0.0.1", proxy.port)) for _ in range(8)]
    try:
        with caplog.at_level(logging.WARNING, logger="ctxscope.proxy"):
            extra = [socket.create_connection(("127.0.0.1", proxy.port)) for _ in range(40)]
            for sock in extra:
                assert _closed_within(sock, 5) == b""
                sock.close()
        assert proxy.proxy.connections is not None
        assert proxy.proxy.connections.refused == 40
        lines = [r for r in caplog.records if r.name == "ctxscope.proxy"]
        assert len(lines) == 1
        assert "8 connections open" in lines[0].getMessage() and lines[0].exc_info is None
    finally:
        for sock in held:
            sock.close()
    fake_anthropic.script([text_reply("ok")])
    deadline = time.monotonic() + 10
    while proxy.proxy.connections.open and time.monotonic() < deadline:
        time.sleep(0.02)  # the held ones end on the proxy's side too
    status, _, _ = raw(proxy.port, "POST", "/v1/messages", JSON_BODY, AGENT)
    assert status == 200
    proxy.stop()


def test_malformed_http_is_one_line_not_a_traceback(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    garbage = [
        b"GARBAGE\x00\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ]
    with caplog.at_level(logging.DEBUG, logger="ctxscope.proxy.http"):
        for payload in garbage:
            with socket.create_connection(("127.0.0.1", running.port)) as sock:
                sock.sendall(payload)
                assert _closed_within(sock, 5).startswith(b"HTTP/1.")
    records = [r for r in caplog.records if r.name == "ctxscope.proxy.http"]
    assert len(records) >= 3
    for record in records:
        assert record.exc_info is None and record.exc_text is None
        assert "\n" not in record.getMessage()
        assert record.getMessage().startswith("ctxscope proxy: ")
    assert "Traceback" not in caplog.text


def test_jsonl_prints_a_hostile_model_name_escaped(
    fake_anthropic: FakeAnthropicServer,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The model name carries C1 CSI (0x9b), RLO (U+202E) and DEL: ``--jsonl`` writes them as
    ``\\u009b``, ``\\u202e``, ``\\u007f``, and the line is still the same JSON."""
    model = "claude\x9b31m\u202eevil\x7f"
    settings = Settings()
    printer = _printer(argparse.Namespace(jsonl=True), settings)
    recorder = Recorder(tmp_path / "j.db", on_stored=printer)
    proxy = Proxy(ProxyConfig(upstream=fake_anthropic.url, port=0), recorder)
    thread = ProxyThread(proxy).start()
    fake_anthropic.script([text_reply("ok")])
    body = json.dumps({**BODY, "model": model}).encode()
    status, _, _ = raw(proxy.port, "POST", "/v1/messages", body, AGENT)
    thread.stop()
    out = capsys.readouterr().out
    assert status == 200
    assert "\\u009b31m\\u202eevil\\u007f" in out
    for raw_char in ("\x9b", "\u202e", "\x7f"):
        assert raw_char not in out
    assert json.loads(out.splitlines()[0])["model"] == model
