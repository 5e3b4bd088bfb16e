"""The proxy's side towards the upstream (issue 44): kept-alive connections on asyncio
Protocols, each answer relayed to the client that asked as its bytes come, framed by
aiohttp's ``HttpResponseParser`` (llhttp, in C), and one :class:`Call` per request forwarded,
which hands its capture to the recorder when it ends. The client's side is
``engine/proxy/relay.py``."""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from aiohttp.http import HttpResponseParser
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.streams import StreamReader
from yarl import URL

from engine.proxy.recorder import Capture

if TYPE_CHECKING:
    from engine.proxy.relay import ClientConnection

CONNECT_TIMEOUT = 30.0
"""Seconds to open a connection to the upstream (TLS included)."""
UPSTREAM_IDLE = 15.0
"""Seconds an idle connection to the upstream is kept for the next request (aiohttp's
client keeps one 15 s too)."""
PARSER_LIMIT = 1 << 16
"""The parsers' buffer size (each body is taken out of its stream as soon as it is parsed)."""


class _NoFlowControl:
    """What aiohttp's parsers ask of a protocol for a body's stream: here nothing, since every
    piece is taken out of the stream as soon as the parser puts it in."""

    _reading_paused = False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self, resume_parser: bool = True) -> None:
        pass


NO_FLOW_CONTROL: Any = _NoFlowControl()


@dataclass(frozen=True)
class Upstream:
    """Where the proxy forwards to: ``config.upstream`` taken apart once."""

    host: str
    port: int
    tls: bool
    prefix: str
    """The upstream URL's path, before each request's own (``""`` for none)."""
    host_header: bytes

    @classmethod
    def of(cls, url: str) -> Upstream:
        parsed = URL(url)
        if parsed.scheme not in ("http", "https") or not parsed.raw_host:
            raise ValueError(f"not an http(s) URL: {url!r}")
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        host = parsed.raw_host
        shown = f"[{host}]" if ":" in host else host
        if not parsed.is_default_port():
            shown = f"{shown}:{port}"
        return cls(
            host, port, parsed.scheme == "https", parsed.raw_path.rstrip("/"), shown.encode()
        )


class Call:
    """One request being forwarded: its client, its capture (None: not recorded), and the
    upstream connection carrying it once it has one."""

    __slots__ = ("client", "method", "capture", "started", "upstream", "dechunk", "ended")

    def __init__(self, client: ClientConnection, method: str, capture: Capture | None) -> None:
        self.client = client
        self.method = method
        self.capture = capture
        self.started = time.perf_counter()
        self.upstream: UpstreamConnection | None = None
        self.dechunk = False
        """The client speaks HTTP/1.0: a chunked answer goes to it without its chunks,
        ended by closing the connection."""
        self.ended = False

    def end(self, outcome: str | None = None) -> None:
        """The call is over: its capture (with ``outcome`` if not complete) to the recorder."""
        if self.ended:
            return
        self.ended = True
        capture = self.capture
        if capture is None:
            return
        if outcome is not None:
            capture.outcome = outcome
        capture.duration_ms = (time.perf_counter() - self.started) * 1000
        recorder = self.client.proxy.recorder
        if recorder is not None:
            recorder.submit(capture)


class UpstreamPool:
    """Kept-alive connections to the upstream, the last one used first."""

    def __init__(self, upstream: Upstream, loop: asyncio.AbstractEventLoop) -> None:
        self.upstream = upstream
        self.loop = loop
        self.idle: list[UpstreamConnection] = []
        self.connecting: set[asyncio.Task[None]] = set()
        self._tls: ssl.SSLContext | None = ssl.create_default_context() if upstream.tls else None

    def send(self, call: Call, data: list[bytes]) -> None:
        """Send ``data`` (a request's head and body) for ``call`` on an idle connection, or on
        a new one."""
        while self.idle:
            connection = self.idle.pop()
            if connection.transport is not None and not connection.transport.is_closing():
                connection.send(call, data)
                return
        task = self.loop.create_task(self._connect(call, data))
        self.connecting.add(task)
        task.add_done_callback(self.connecting.discard)

    async def _connect(self, call: Call, data: list[bytes]) -> None:
        upstream = self.upstream
        try:
            _, connection = await asyncio.wait_for(
                self.loop.create_connection(
                    lambda: UpstreamConnection(self),
                    upstream.host,
                    upstream.port,
                    ssl=self._tls,
                    server_hostname=upstream.host if self._tls else None,
                ),
                CONNECT_TIMEOUT,
            )
        except (OSError, TimeoutError) as exc:
            call.client.upstream_failed(call, str(exc) or "no connection in time")
            return
        if call.ended:  # the client hung up meanwhile: the connection is kept for another
            self.release(connection)
            return
        connection.send(call, data)

    def release(self, connection: UpstreamConnection) -> None:
        connection.idle_since = self.loop.time()
        self.idle.append(connection)

    def sweep(self, now: float) -> None:
        """Close the connections idle for longer than :data:`UPSTREAM_IDLE`."""
        if self.idle and now - self.idle[0].idle_since > UPSTREAM_IDLE:
            stale = [c for c in self.idle if now - c.idle_since > UPSTREAM_IDLE]
            self.idle = [c for c in self.idle if now - c.idle_since <= UPSTREAM_IDLE]
            for connection in stale:
                if connection.transport is not None:
                    connection.transport.close()

    def close(self) -> None:
        for task in self.connecting:
            task.cancel()
        for connection in self.idle:
            if connection.transport is not None:
                connection.transport.close()
        self.idle.clear()


class UpstreamConnection(asyncio.Protocol):
    """One connection to the upstream: relays each answer to the client that asked, as it
    comes."""

    def __init__(self, pool: UpstreamPool) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.call: Call | None = None
        self.parser: HttpResponseParser | None = None
        self.payload: StreamReader | None = None
        self.head = b""
        """An answer's first bytes, while its head is not all in."""
        self.reuse = True
        self.idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def send(self, call: Call, data: list[bytes]) -> None:
        assert self.transport is not None
        self.call = call
        call.upstream = self
        self.parser = HttpResponseParser(
            NO_FLOW_CONTROL,
            self.pool.loop,
            PARSER_LIMIT,
            response_with_body=call.method != "HEAD",
            read_until_eof=True,  # an answer without a length or chunks ends with its connection
            auto_decompress=False,
        )
        self.payload = None
        self.head = b""
        self.transport.resume_reading()  # paused if the last answer's client read slowly
        self.transport.writelines(data)

    def data_received(self, data: bytes) -> None:
        call = self.call
        if call is None or self.parser is None:  # bytes nobody asked for: not reused
            self.abort()
            return
        try:
            messages, _, _ = self.parser.feed_data(data)
        except HttpProcessingError as exc:
            self.abort()
            self.broke(call, f"its answer is not HTTP: {exc}")
            return
        payload = self.payload
        head = b""
        if payload is None:
            data, self.head = self.head + data, b""
            for message, body in messages:
                end = data.find(b"\r\n\r\n") + 4  # the end of this message's head
                if 100 <= message.code < 200:  # an interim answer (103): not passed on
                    data = data[end:]
                    continue
                head, data = call.client.answer_head(call, message, data[:end]), data[end:]
                self.payload = payload = body
                self.reuse = not message.should_close
                break
            else:
                self.head = data  # the answer's head is not all in yet
                return
        piece = payload.read_nowait()
        capture = call.capture
        if capture is not None and piece:
            capture.add(piece)
        out = head + (piece if call.dechunk else data)
        if payload.is_eof():
            # Handed to the recorder before the answer's end leaves: the client never has an
            # answer that is not stored.
            call.end()
            self.call = None
            self.done()
            call.client.write(out)
            call.client.answered(call)
            return
        call.client.write(out)

    def done(self) -> None:
        """The answer is all in: kept for the next request, or closed."""
        if self.reuse and self.transport is not None and not self.transport.is_closing():
            self.pool.release(self)
        elif self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        """Drop this connection (the call it carried, if any, is ended by its caller)."""
        self.call = None
        self.reuse = False
        if self.transport is not None:
            self.transport.abort()

    def broke(self, call: Call, reason: str) -> None:
        if self.payload is None:
            call.client.upstream_failed(call, reason)
        else:
            call.client.upstream_broke(call)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self in self.pool.idle:
            self.pool.idle.remove(self)
        call, self.call = self.call, None
        if call is None:
            return
        if self.payload is not None and self.parser is not None:
            try:
                self.parser.feed_eof()  # an answer that ends with its connection is whole
            except HttpProcessingError:
                pass
            if self.payload.is_eof() and self.payload.exception() is None:
                call.end()
                call.client.answered(call, close=True)
                return
        self.broke(call, f"it closed the connection ({exc or 'no answer'})")
