"""The proxy itself: a server on 127.0.0.1 that forwards every request to one upstream,
headers and body unchanged, and streams each answer back as it arrives (the request path:
``engine/proxy/relay.py``, on asyncio Protocols).

Only hop-by-hop headers (RFC 9110 §7.6.1: ``Connection`` and the headers it names,
``Keep-Alive``, ``Proxy-*``, ``TE``, ``Trailer``, ``Transfer-Encoding``, ``Upgrade``) are
dropped, and ``Host`` is the upstream's; an answer keeps its framing (``Content-Length``, or
chunked), relayed with its bytes. On a recorded path (``POST /v1/messages``) the
``Accept-Encoding`` the client sent is narrowed to the encodings the recorder can read (gzip,
deflate), so the answer it stores is the one the client got. A request whose ``Host`` is not
the proxy's own address is refused (a web page cannot reach the proxy by DNS rebinding), and
a body larger than ``max_body`` is answered 413 without being forwarded. What a web page
could send, slow clients and too many connections are refused by ``engine.proxy.guard``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from engine.proxy.guard import (
    BODY_TIMEOUT,
    HEADER_TIMEOUT,
    MAX_CONNECTIONS,
    ConnectionGuard,
    connection_cap,
)
from engine.proxy.recorder import RECORD_LIMIT, CaptureSink
from engine.proxy.relay import ClientConnection
from engine.proxy.steer_live import LiveSteering
from engine.proxy.upstream import Upstream, UpstreamPool

DEFAULT_UPSTREAM = "https://api.anthropic.com"
DEFAULT_PORT = 8787
KEEPALIVE_TIMEOUT = 75.0
"""Seconds an idle kept-alive connection stays open (aiohttp's default is an hour)."""
MAX_BODY = 32 * 1024 * 1024
"""The largest request body forwarded (the Messages API's own limit is 32 MB)."""
SHUTDOWN_TIMEOUT = 5.0
"""Seconds the requests in flight have to end once the proxy is asked to stop."""


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
        self.target = Upstream.of(self.upstream)
        self.port = config.port
        self.keepalive_timeout = KEEPALIVE_TIMEOUT
        self.allowed_hosts: set[str | None] = set()
        """The ``Host`` values a request may carry: the proxy's own address."""
        self.pool: UpstreamPool
        self._listener: asyncio.Server | None = None
        self._sweeping: asyncio.TimerHandle | None = None
        self.connections: ConnectionGuard | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Listen on 127.0.0.1 (``config.port``; 0 picks a free port, then :attr:`port`)."""
        loop = asyncio.get_running_loop()
        self.pool = UpstreamPool(self.target, loop)
        self.connections = ConnectionGuard(
            max_connections=connection_cap(self.config.max_connections),
            header_timeout=self.config.header_timeout,
        )
        self._listener = await loop.create_server(
            lambda: ClientConnection(self), "127.0.0.1", self.config.port, backlog=128
        )
        self.port = int(self._listener.sockets[0].getsockname()[1])
        self.allowed_hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        self._sweep()

    def _sweep(self) -> None:
        """The guard's deadlines: each connection's, checked a few times a second (one timer
        for all, instead of one per request)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self.connections is not None:
            for connection in list(self.connections.open):
                if connection.deadline is not None and now >= connection.deadline:
                    connection.deadline = None
                    connection.on_deadline()
        self.pool.sweep(now)
        every = min(1.0, self.config.header_timeout / 4, self.config.body_timeout / 4)
        self._sweeping = loop.call_later(every, self._sweep)

    async def stop(self) -> None:
        """Stop listening, let the requests in flight end (5 s at most), close the rest."""
        if self._listener is None:
            return
        self._listener.close()
        self._listener = None
        if self._sweeping is not None:
            self._sweeping.cancel()
        connections = self.connections.open if self.connections is not None else set()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SHUTDOWN_TIMEOUT
        while any(c.call is not None for c in connections) and loop.time() < deadline:
            await asyncio.sleep(0.02)
        for connection in list(connections):
            if connection.transport is not None:
                connection.transport.abort()  # its call, if any, ends as cancelled
        self.pool.close()
        for _ in range(3):  # the closed connections' connection_lost, and what they close
            await asyncio.sleep(0)


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
