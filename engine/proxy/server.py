"""The proxy itself: an aiohttp server on 127.0.0.1 that forwards every request to one
upstream with an aiohttp client, headers and body unchanged, and streams each answer back
chunk by chunk as it arrives.

Only hop-by-hop headers (RFC 9110 §7.6.1: ``Connection`` and the headers it names,
``Keep-Alive``, ``Proxy-*``, ``TE``, ``Trailer``, ``Transfer-Encoding``, ``Upgrade``) are
dropped, and ``Host`` is the upstream's. On a recorded path (``POST /v1/messages``) the
``Accept-Encoding`` the client sent is narrowed to the encodings the recorder can read (gzip,
deflate), so the answer it stores is the one the client got. A request whose ``Host`` is not
the proxy's own address is refused (a web page cannot reach the proxy by DNS rebinding), and
a body larger than ``max_body`` is answered 413 without being forwarded. What a web page
could send, slow clients and too many connections are refused by ``engine.proxy.guard``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from engine.proxy.guard import (
    BODY_TIMEOUT,
    HEADER_TIMEOUT,
    MAX_CONNECTIONS,
    ConnectionGuard,
    connection_cap,
    guard_middleware,
    one_line_logger,
)
from engine.proxy.recorder import (
    CAPTURED_HEADERS,
    RECORD_LIMIT,
    Capture,
    CaptureSink,
    recorded_path,
)
from engine.proxy.steer_live import LiveSteering
from engine.proxy.stream import DECODERS

DEFAULT_UPSTREAM = "https://api.anthropic.com"
DEFAULT_PORT = 8787
KEEPALIVE_TIMEOUT = 75.0
"""Seconds an idle kept-alive connection stays open (aiohttp's default is an hour)."""
MAX_BODY = 32 * 1024 * 1024
"""The largest request body forwarded (the Messages API's own limit is 32 MB)."""
WHOLE_ANSWER = 1024 * 1024
"""An answer that is not an event stream and says it is at most this long (Content-Length)
is read whole and sent back in one write, its headers with it: one socket write per answer
instead of two (headers, then body). Under load each write can cost the proxy a wake-up of
the other side and a turn of the scheduler (issue 44: about 1 ms each on a busy machine)."""

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


def end_to_end(headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> CIMultiDict[str]:
    """``headers`` without the hop-by-hop ones, nor those ``Connection`` names."""
    named = {
        token.strip().lower()
        for value in headers.getall("connection", [])
        for token in value.split(",")
    }
    return CIMultiDict(
        (k, v) for k, v in headers.items() if k.lower() not in HOP_BY_HOP and k.lower() not in named
    )


def readable_encodings(accept: str) -> str:
    """An ``Accept-Encoding`` value keeping only what the recorder can decode."""
    kept = [
        part.strip() for part in accept.split(",") if part.split(";")[0].strip().lower() in DECODERS
    ]
    return ", ".join(kept) or "identity"


def api_error(status: int, message: str) -> web.Response:
    """An error the proxy answers itself, in the Messages API's error shape."""
    error_type = {
        400: "invalid_request_error",
        403: "permission_error",
        408: "timeout_error",
        413: "request_too_large",
    }.get(status, "api_error")
    body = {"type": "error", "error": {"type": error_type, "message": f"ctxscope proxy: {message}"}}
    return web.Response(status=status, text=json.dumps(body), content_type="application/json")


@dataclass
class ProxyConfig:
    upstream: str = DEFAULT_UPSTREAM
    port: int = DEFAULT_PORT
    max_body: int = MAX_BODY
    header_timeout: float = HEADER_TIMEOUT
    body_timeout: float = BODY_TIMEOUT
    max_connections: int = MAX_CONNECTIONS
    record_limit: int = RECORD_LIMIT
    """Bytes of one answer the recorder keeps; a longer one is forwarded whole and stored
    named with its size, without its body."""


class Proxy:
    """Forwards to ``config.upstream``; hands each Messages call to ``recorder``."""

    def __init__(
        self,
        config: ProxyConfig,
        recorder: CaptureSink | None = None,
        steering: LiveSteering | None = None,
    ) -> None:
        self.config = config
        self.recorder = recorder
        self.steering = steering
        """``--steer``: rewrites a recorded request before it is sent (steer_live.py)."""
        self.upstream = config.upstream.rstrip("/")
        self.port = config.port
        self._client: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self.connections: ConnectionGuard | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def allowed_hosts(self) -> set[str]:
        return {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}

    async def start(self) -> None:
        """Listen on 127.0.0.1 (``config.port``; 0 picks a free port, then :attr:`port`)."""
        self._client = aiohttp.ClientSession(
            auto_decompress=False,  # the client gets the bytes the upstream sent
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            connector=aiohttp.TCPConnector(limit=0),
        )
        guard = guard_middleware(api_error, self.config.max_body, self.config.body_timeout)
        app = web.Application(client_max_size=self.config.max_body, middlewares=[guard])
        app.router.add_route("*", "/{tail:.*}", self.forward)
        self._runner = web.AppRunner(
            app,
            handler_cancellation=True,
            access_log=None,
            shutdown_timeout=5.0,
            logger=one_line_logger(),
            keepalive_timeout=KEEPALIVE_TIMEOUT,
        )
        await self._runner.setup()
        assert self._runner.server is not None
        # Listening through the guard (engine/proxy/guard.py): a cap on connections, a
        # deadline for headers; the runner still ends every connection on stop.
        self.connections = ConnectionGuard(
            self._runner.server,
            max_connections=connection_cap(self.config.max_connections),
            header_timeout=self.config.header_timeout,
        )
        loop = asyncio.get_running_loop()
        try:
            self._listener = await loop.create_server(
                self.connections, "127.0.0.1", self.config.port, backlog=128
            )
        except BaseException:
            await self.stop()  # the client session and the runner, closed before the error
            raise
        self.port = int(self._listener.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening, let the requests in flight end (5 s at most), close the client."""
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def forward(self, request: web.Request) -> web.StreamResponse:
        if request.host not in self.allowed_hosts():
            return api_error(403, f"refused a request for host {request.host!r}")
        if not request.raw_path.startswith("/"):
            # An absolute URL (``GET http://elsewhere/ HTTP/1.1``) asks for a forward proxy:
            # this one forwards to its upstream only.
            return api_error(400, "only paths are forwarded, to the configured upstream")
        if (request.content_length or 0) > self.config.max_body:
            return api_error(413, f"request body over {self.config.max_body} bytes")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return api_error(413, f"request body over {self.config.max_body} bytes")
        headers = end_to_end(request.headers)
        headers.popall("host", None)
        headers.popall("content-length", None)  # the client library sets it for the same bytes
        record = self.recorder is not None and recorded_path(request.method, request.raw_path)
        if record and "accept-encoding" in headers:
            headers["accept-encoding"] = readable_encodings(headers["accept-encoding"])
        kept = {k.lower(): v for k, v in request.headers.items() if k.lower() in CAPTURED_HEADERS}
        capture = Capture(
            request.method, request.raw_path, kept, body, limit=self.config.record_limit
        )
        if record and self.steering is not None:  # the capture keeps the agent's own body
            body, capture.steering, capture.parsed = self.steering.rewrite(request.raw_path, body)
        started = time.perf_counter()
        try:
            return await self._relay(request, headers, body, capture)
        except asyncio.CancelledError:
            capture.outcome = "cancelled"  # the client hung up: the upstream call ends with it
            raise
        finally:
            capture.duration_ms = (time.perf_counter() - started) * 1000
            if record and self.recorder is not None:
                self.recorder.submit(capture)

    async def _relay(
        self, request: web.Request, headers: CIMultiDict[str], body: bytes, capture: Capture
    ) -> web.StreamResponse:
        assert self._client is not None
        url = URL(self.upstream + request.raw_path, encoded=True)
        try:
            upstream = await self._client.request(
                request.method, url, headers=headers, data=body or None, allow_redirects=False
            )
        except (aiohttp.ClientError, OSError) as exc:
            capture.outcome = "error"
            return api_error(502, f"the upstream {self.upstream} did not answer: {exc}")
        async with upstream:
            capture.status = upstream.status
            capture.content_type = upstream.headers.get("content-type", "")
            capture.content_encoding = upstream.headers.get("content-encoding", "")
            if whole_answer(upstream):
                return await self._relay_whole(request, upstream, capture)
            response = web.StreamResponse(
                status=upstream.status, reason=upstream.reason, headers=end_to_end(upstream.headers)
            )
            await response.prepare(request)
            try:
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                    capture.add(chunk)
            except (
                ConnectionResetError,
                aiohttp.ClientPayloadError,
                aiohttp.ClientConnectionError,
            ):
                transport = request.transport
                if transport is None or transport.is_closing():
                    capture.outcome = "cancelled"  # the client hung up; the upstream call ends
                else:
                    # The upstream broke off: so does the client's stream, not with a clean end.
                    capture.outcome = "incomplete"
                    transport.abort()
                return response
            await response.write_eof()
            return response

    async def _relay_whole(
        self, request: web.Request, upstream: aiohttp.ClientResponse, capture: Capture
    ) -> web.StreamResponse:
        """A short answer of known length, read whole and answered in one write."""
        try:
            body = await upstream.read()
        except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError):
            # The upstream broke off before its declared length: the client's connection is
            # ended the same way, not answered with a shorter body.
            capture.outcome = "incomplete"
            transport = request.transport
            if transport is not None:
                transport.abort()
            return web.Response(status=upstream.status)
        capture.add(body)
        headers = end_to_end(upstream.headers)
        headers.popall("content-length", None)  # the same length, set for the same bytes
        return web.Response(
            status=upstream.status, reason=upstream.reason, body=body, headers=headers
        )


def whole_answer(upstream: aiohttp.ClientResponse) -> bool:
    """Whether an answer is read whole before it is sent on (:data:`WHOLE_ANSWER`)."""
    length = upstream.content_length
    return (
        length is not None
        and length <= WHOLE_ANSWER
        and not upstream.headers.get("content-type", "").startswith("text/event-stream")
    )


async def serve(proxy: Proxy, stop: asyncio.Event, started: asyncio.Event | None = None) -> None:
    """Run ``proxy`` until ``stop`` is set (``started`` is set once it listens), then shut it
    down cleanly."""
    await proxy.start()
    if started is not None:
        started.set()
    try:
        await stop.wait()
    finally:
        await proxy.stop()


class ProxyThread:
    """A proxy on an event loop of its own, in a thread (``ctxscope run``, the tests)."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="ctxscope-proxy", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            await self.proxy.start()
        except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await self.proxy.stop()

    def start(self) -> ProxyThread:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()
        if self.proxy.recorder is not None:
            self.proxy.recorder.close()


@contextlib.contextmanager
def running(proxy: Proxy) -> Iterator[Proxy]:
    """``proxy`` listening in a thread for the ``with`` block; stopped, its records stored."""
    thread = ProxyThread(proxy).start()
    try:
        yield proxy
    finally:
        thread.stop()
