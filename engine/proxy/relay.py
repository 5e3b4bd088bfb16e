"""The proxy's request path on asyncio Protocols (issue 44): no task, no coroutine and no
response object per request, so that a request costs the forwarding process less than half
of what it cost through aiohttp's server and client (``bench/bench_proxy.py``, 8 clients:
0.17-0.19 ms of CPU per request against 0.46-0.52 ms; the least forwarder of each kind,
``bench/proxy_floors.py``, 0.16-0.21 against 0.37-0.43 ms).

Each side's HTTP is framed by aiohttp's own parser (``aiohttp.http.HttpRequestParser`` and
``HttpResponseParser``, llhttp in C), never by hand. A request is read whole (it must be, to
be recorded and steered), checked (:mod:`engine.proxy.guard`), then sent to a kept-alive
upstream connection in one write. The upstream's answer goes back as it comes: its head
rewritten (hop-by-hop headers dropped), its body relayed byte for byte in its own framing
(a ``Content-Length`` or chunks), each piece handed to the recorder's capture as the parser
takes it out of its framing. The capture is handed to the recorder before the answer's last
bytes leave, so an answer the client got is never lost. This module is the client's side;
the upstream's is ``engine/proxy/upstream.py``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from aiohttp.http import HttpRequestParser, HttpVersion11
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.http_parser import RawRequestMessage, RawResponseMessage
from aiohttp.streams import StreamReader

from engine.proxy.guard import browser_refusal
from engine.proxy.recorder import CAPTURED_HEADERS, Capture, recorded_path
from engine.proxy.stream import DECODERS
from engine.proxy.upstream import NO_FLOW_CONTROL, PARSER_LIMIT, Call
from engine.terminal_text import cut

if TYPE_CHECKING:
    from engine.proxy.server import Proxy

log = logging.getLogger("ctxscope.proxy.http")


LINGER = 10.0
"""Seconds the rest of a refused request's body is read and dropped before the connection is
closed (as aiohttp lingers): so the client reads the answer instead of a reset."""
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
"""RFC 9110 §7.6.1's hop-by-hop headers (lower case), never passed on."""
NOT_SENT = HOP_BY_HOP | {b"host", b"content-length", b"expect"}
"""Request headers the proxy sets itself for the upstream (or answers itself: ``Expect``)."""
NOT_ANSWERED = HOP_BY_HOP - {b"transfer-encoding"}
"""Answer headers dropped: the hop-by-hop ones but the framing, kept with the body bytes it
frames (a chunked answer is relayed in its chunks)."""
REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    408: "Request Timeout",
    413: "Payload Too Large",
    500: "Internal Server Error",
    502: "Bad Gateway",
}


def error_body(status: int, message: str) -> bytes:
    """An error the proxy answers itself, in the Messages API's error shape."""
    error_type = {
        400: "invalid_request_error",
        403: "permission_error",
        408: "timeout_error",
        413: "request_too_large",
    }.get(status, "api_error")
    body = {"type": "error", "error": {"type": error_type, "message": f"ctxscope proxy: {message}"}}
    return json.dumps(body).encode()


def error_answer(status: int, message: str, close: bool = False) -> bytes:
    """The whole HTTP answer for :func:`error_body`."""
    body = error_body(status, message)
    head = (
        f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\n"
        "Content-Type: application/json; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n" + ("Connection: close\r\n" if close else "") + "\r\n"
    )
    return head.encode() + body


def readable_encodings(accept: str) -> str:
    """An ``Accept-Encoding`` value keeping only what the recorder can decode."""
    kept = [
        part.strip() for part in accept.split(",") if part.split(";")[0].strip().lower() in DECODERS
    ]
    return ", ".join(kept) or "identity"


def named_by_connection(raw_headers: tuple[tuple[bytes, bytes], ...]) -> set[bytes]:
    """The headers a ``Connection`` header names (hop-by-hop too), lower case."""
    return {
        token.strip().lower()
        for name, value in raw_headers
        if name.lower() == b"connection"
        for token in value.split(b",")
    }


class Incoming:
    """A request whose headers are in, its body as it comes."""

    __slots__ = ("message", "payload", "chunks", "size", "checked", "body_deadline")

    def __init__(self, message: RawRequestMessage, payload: StreamReader) -> None:
        self.message = message
        self.payload = payload
        self.chunks: list[bytes] = []
        self.size = 0
        self.checked = False
        self.body_deadline: float | None = None


class ClientConnection(asyncio.Protocol):
    """One client's connection: its requests parsed, checked and forwarded one at a time,
    within the guard's deadlines (:mod:`engine.proxy.guard`)."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.parser = HttpRequestParser(NO_FLOW_CONTROL, self.loop, PARSER_LIMIT)
        self.pending: deque[Incoming] = deque()
        self.call: Call | None = None
        self.deadline: float | None = None
        self.on_deadline: Callable[[], None] = self.too_slow
        self.draining = False
        """An answer has been sent early (an error): the rest of what comes is dropped."""
        self.held = False
        """A request waits for the recorder to catch up (:meth:`advance`)."""

    # -- the connection ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        guard = self.proxy.connections
        if guard is not None and not guard.admit(self):
            self.transport.abort()
            return
        self.expect_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.deadline = None
        guard = self.proxy.connections
        if guard is not None:
            guard.release(self)
        call, self.call = self.call, None
        if call is not None:  # the client hung up: the upstream call ends with it
            upstream = call.upstream
            if upstream is not None and upstream.call is call:
                upstream.abort()
            call.end("cancelled")

    def eof_received(self) -> bool | None:
        if self.draining and self.transport is not None:
            self.transport.close()
        return None

    def write(self, data: bytes) -> None:
        if self.transport is not None and data:
            self.transport.write(data)

    def pause_writing(self) -> None:
        """The client reads slower than the upstream sends: the upstream waits (what the
        proxy holds of an answer stays at the transport's high-water mark, 64 KiB)."""
        self._upstream_reading(False)

    def resume_writing(self) -> None:
        self._upstream_reading(True)

    def _upstream_reading(self, on: bool) -> None:
        upstream = self.call.upstream if self.call is not None else None
        transport = upstream.transport if upstream is not None else None
        if transport is not None and not transport.is_closing():
            if on:
                transport.resume_reading()
            else:
                transport.pause_reading()

    # -- the guard's deadlines (checked by the proxy's sweep) -----------------------------

    def expect_headers(self) -> None:
        self.deadline = self.loop.time() + self.proxy.config.header_timeout
        self.on_deadline = self.too_slow

    def too_slow(self) -> None:
        """The headers did not all come in time: closed without an answer."""
        guard = self.proxy.connections
        if guard is not None:
            guard.slow += 1
        if self.transport is not None:
            self.transport.abort()

    def idle_too_long(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def body_too_slow(self) -> None:
        timeout = self.proxy.config.body_timeout
        self.pending.clear()
        self.finish(408, f"the request body did not arrive within {timeout:g} s")

    def lingered(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def finish(self, status: int, message: str) -> None:
        """Answer an error now and close: what is left of the request is read and dropped
        for :data:`LINGER` seconds at most (closed at once, the client could get a reset
        instead of the answer)."""
        transport = self.transport
        if transport is None:
            return
        transport.write(error_answer(status, message, close=True))
        self.draining = True
        self.pending.clear()
        self.deadline = self.loop.time() + LINGER
        self.on_deadline = self.lingered
        if transport.can_write_eof():
            transport.write_eof()
        else:
            transport.close()

    # -- requests ------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self.draining:
            return
        if self.on_deadline == self.idle_too_long:  # the first byte of the next request
            self.expect_headers()
        try:
            messages, _, _ = self.parser.feed_data(data)
        except HttpProcessingError as exc:
            self.malformed(exc)
            return
        except ValueError as exc:  # a URL yarl refuses
            self.malformed(exc)
            return
        for message, payload in messages:
            self.pending.append(Incoming(message, payload))
        max_body = self.proxy.config.max_body
        for incoming in self.pending:
            piece = incoming.payload.read_nowait()
            if piece:
                incoming.size += len(piece)
                if incoming.size > max_body:
                    self.finish(413, f"request body over {max_body} bytes")
                    return
                incoming.chunks.append(piece)
        if not self.pending:
            return  # headers still coming: their deadline stands
        if len(self.pending) > 1 and self.transport is not None:
            self.transport.pause_reading()  # pipelined: one request held at a time
        self.step()

    def step(self) -> None:
        """:meth:`advance`, a fault of the proxy's own (steering, say) said and answered."""
        try:
            self.advance()
        except Exception as exc:
            log.error(cut(f"ctxscope proxy: failed on a request: {type(exc).__name__} {exc}", 300))
            self.call = None
            self.finish(500, f"the proxy failed on this request ({type(exc).__name__})")

    def caught_up(self) -> None:
        """The recorder has caught up: the held request goes on (unless the client left)."""
        self.held = False
        if self.transport is not None:
            self.step()

    def malformed(self, error: Exception) -> None:
        words = " ".join(str(error).split())
        log.warning(cut(f"ctxscope proxy: malformed request: {type(error).__name__} {words}", 300))
        code = getattr(error, "code", 400)
        self.finish(code if code in REASONS else 400, "malformed HTTP request")

    def advance(self) -> None:
        """Start the next request whose body is all in, if none is being forwarded."""
        while self.call is None and self.pending and not self.draining:
            incoming = self.pending[0]
            if not incoming.checked:
                refusal = self.refusal(incoming.message)
                if refusal is not None:
                    self.pending.popleft()
                    if incoming.payload.is_eof() and not incoming.message.should_close:
                        self.write(error_answer(*refusal))
                        continue
                    self.finish(*refusal)
                    return
                incoming.checked = True
                if not incoming.payload.is_eof():
                    incoming.body_deadline = self.loop.time() + self.proxy.config.body_timeout
                    expect = incoming.message.headers.get("expect", "")
                    if expect.lower() == "100-continue":
                        self.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            if not incoming.payload.is_eof():
                self.deadline = incoming.body_deadline
                self.on_deadline = self.body_too_slow
                return
            recorder = self.proxy.recorder
            if self.held or (recorder is not None and recorder.behind):
                # The recorder is far behind: the request waits for it, not for the client.
                self.deadline = None
                if not self.held:
                    self.held = True
                    assert recorder is not None
                    recorder.when_caught_up(self.caught_up)
                return
            self.pending.popleft()
            if self.transport is not None and len(self.pending) <= 1:
                self.transport.resume_reading()  # the next request may need its body
            self.forward(incoming)
        if self.call is None and not self.pending and not self.draining:
            self.deadline = self.loop.time() + self.proxy.keepalive_timeout
            self.on_deadline = self.idle_too_long
        elif self.call is not None:
            self.deadline = None

    def refusal(self, message: RawRequestMessage) -> tuple[int, str] | None:
        """Why a request is answered by the proxy instead of forwarded (its headers are
        enough to tell), or None."""
        host = message.headers.get("host")
        path = message.path
        if not path.startswith("/"):
            if "://" in path:  # a forward proxy's request form: this one has one upstream
                return 403, f"refused a request for {path[:80]!r}: only paths are forwarded"
            return 400, "only paths are forwarded, to the configured upstream"
        if host not in self.proxy.allowed_hosts:
            return 403, f"refused a request for host {host!r}"
        reason = browser_refusal(message.method, path, message.headers)
        if reason is not None:
            return 403, reason
        if message.upgrade:
            return 400, "protocol upgrades are not forwarded"
        length = message.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.proxy.config.max_body:
            return 413, f"request body over {self.proxy.config.max_body} bytes"
        return None

    def forward(self, incoming: Incoming) -> None:
        proxy = self.proxy
        message = incoming.message
        method, path = message.method, message.path
        body = b"".join(incoming.chunks)
        record = proxy.recorder is not None and recorded_path(method, path)
        capture = None
        if record:
            headers = message.headers
            kept = {name: found for name in CAPTURED_HEADERS if (found := headers.get(name))}
            capture = Capture(method, path, kept, body, limit=proxy.config.record_limit)
            if proxy.steering is not None:  # the capture keeps the agent's own body
                body, capture.steering, capture.parsed = proxy.steering.rewrite(path, body)
        dropped = NOT_SENT | named_by_connection(message.raw_headers)
        head = [
            b"%s %s%s HTTP/1.1\r\n"
            % (
                method.encode(),
                proxy.target.prefix.encode(),
                path.encode("utf-8", "surrogateescape"),
            )
        ]
        for name, value in message.raw_headers:
            lower = name.lower()
            if lower in dropped:
                continue
            if record and lower == b"accept-encoding":
                value = readable_encodings(value.decode("latin-1")).encode("latin-1")
            head.append(b"%s: %s\r\n" % (name, value))
        head.append(b"Host: %s\r\n" % proxy.target.host_header)
        if body or method in ("POST", "PUT", "PATCH"):
            head.append(b"Content-Length: %d\r\n" % len(body))
        head.append(b"\r\n")
        call = Call(self, method, capture)
        call.dechunk = message.version < HttpVersion11
        self.call = call
        self.deadline = None
        proxy.pool.send(call, [b"".join(head), body])

    # -- the answer ----------------------------------------------------------------------

    def answer_head(self, call: Call, message: RawResponseMessage, raw: bytes) -> bytes:
        """The head of the upstream's answer as the client gets it."""
        capture = call.capture
        headers = message.headers
        if capture is not None:
            capture.status = message.code
            capture.content_type = headers.get("content-type", "")
            capture.content_encoding = headers.get("content-encoding", "")
        dropped = NOT_ANSWERED | named_by_connection(message.raw_headers)
        if call.dechunk and message.chunked:
            dropped = dropped | {b"transfer-encoding"}
        lines = [raw[: raw.find(b"\r\n") + 2]]
        lines += [
            b"%s: %s\r\n" % (name, value)
            for name, value in message.raw_headers
            if name.lower() not in dropped
        ]
        lines.append(b"\r\n")
        return b"".join(lines)

    def answered(self, call: Call, close: bool = False) -> None:
        """``call``'s answer is all out: the next request, or the connection closed."""
        if self.call is not call:
            return
        self.call = None
        transport = self.transport
        if transport is None:
            return
        if close or call.dechunk:
            transport.close()
            return
        self.advance()

    def upstream_failed(self, call: Call, reason: str) -> None:
        """No answer came from the upstream: a 502, the connection kept."""
        if self.call is not call:
            return
        call.end("error")
        upstream = self.proxy.config.upstream
        self.write(error_answer(502, f"the upstream {upstream} did not answer: {reason}"))
        self.answered(call)

    def upstream_broke(self, call: Call) -> None:
        """The upstream broke off its answer: so does the client's, not with a clean end."""
        if self.call is not call:
            return
        self.call = None
        call.end("incomplete")
        if self.transport is not None:
            self.transport.abort()
