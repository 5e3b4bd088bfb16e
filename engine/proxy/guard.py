"""The proxy is for its own agents only: what it refuses before a request is forwarded or
stored, and how it bounds the connections it holds.

- **A web page.** Any page the user opens can send a "simple" cross-site request to
  127.0.0.1 (``POST`` with ``Content-Type: text/plain``, no preflight). Browsers mark every
  such request: an ``Origin`` header, and ``Sec-Fetch-Site`` other than ``none``; agents send
  neither. Those, and a body type the API does not take (the Messages API takes
  ``application/json``; only the Files API, which is not recorded, takes
  ``multipart/form-data``), are answered 403 by :func:`browser_refusal`.
- **Slow connections.** aiohttp has no time limit on reading a request's headers: a client
  that sends one byte now and then holds a connection and a file descriptor forever.
  :class:`ConnectionGuard` closes a connection whose request headers are not all in within
  ``header_timeout`` seconds (from the connection's start, or from the first byte of the
  next request on a kept-alive one); the body must arrive within ``body_timeout``
  (:func:`guard_middleware`, else 408).
- **Too many connections.** Past ``max_connections`` open at once a new one is closed as soon
  as it is accepted, so the process never reaches its file limit (where asyncio logs a
  traceback per ``accept``); that is said in one log line per burst, not one per connection.
- **Malformed HTTP** is one log line (:class:`OneLine`), not aiohttp's traceback.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from engine.proxy.recorder import recorded_path
from engine.terminal_text import cut

log = logging.getLogger("ctxscope.proxy")

HEADER_TIMEOUT = 10.0
"""Seconds a client has to send a request's whole header block."""
BODY_TIMEOUT = 60.0
"""Seconds a client has to send a request's whole body (32 MB at ~0.5 MB/s)."""
MAX_CONNECTIONS = 256
"""Connections open at once; fewer where the file limit is low (a quarter of it)."""

JSON = "application/json"
BODY_TYPES = {JSON, "multipart/form-data"}
"""Body types the API takes anywhere (multipart: the Files API, never recorded)."""


def media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def browser_refusal(request: web.Request) -> str | None:
    """Why ``request`` is refused as coming from a web page or not for the API; None if it
    is an agent's."""
    origin = request.headers.get("origin")
    if origin is not None:
        return f"refused a request from a web page (Origin {origin[:80]!r})"
    site = request.headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() != "none":
        return f"refused a request from a web page (Sec-Fetch-Site {site[:40]!r})"
    if request.method in ("POST", "PUT", "PATCH"):
        kind = media_type(request.headers.get("content-type", ""))
        allowed = {JSON} if recorded_path(request.method, request.raw_path) else BODY_TYPES
        if kind not in allowed:
            shown = repr(kind[:80]) if kind else "none"
            return f"refused a body of type {shown}: the API takes {JSON}"
    return None


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def guard_middleware(
    refuse: Callable[[int, str], web.Response], max_body: int, body_timeout: float
) -> Any:
    """The aiohttp middleware: :func:`browser_refusal` first, then the body read within
    ``body_timeout`` (kept by aiohttp for the handler), all before the handler forwards or
    records anything. ``refuse(status, message)`` makes the error answer."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        ConnectionGuard.request_started(request)
        try:
            reason = browser_refusal(request)
            if reason is not None:
                return refuse(403, reason)
            if request.can_read_body and (request.content_length or 0) <= max_body:
                try:
                    if request.content.is_eof():
                        # The whole body came with the headers (an agent's request, most
                        # often): read at once, without the deadline's task and timer.
                        await request.read()
                    else:
                        await asyncio.wait_for(request.read(), body_timeout)
                except TimeoutError:
                    late = refuse(408, f"the request body did not arrive within {body_timeout:g} s")
                    # Sent now, and the connection closed: what is left of the body is not
                    # waited for (aiohttp would linger 10 s reading it).
                    late.force_close()
                    await late.prepare(request)
                    await late.write_eof()
                    request.protocol.force_close()
                    return late
                except web.HTTPRequestEntityTooLarge:
                    return refuse(413, f"request body over {max_body} bytes")
            return await handler(request)
        finally:
            ConnectionGuard.request_ended(request)

    return guard


def connection_cap(limit: int = MAX_CONNECTIONS) -> int:
    """``limit``, at most a quarter of this process' file limit."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return limit
    return max(8, min(limit, soft // 4))


class _Guarded(asyncio.Protocol):
    """One connection: aiohttp's protocol inside, with the header deadline and the count."""

    def __init__(self, guard: ConnectionGuard, inner: asyncio.Protocol) -> None:
        self.guard = guard
        self.inner = inner
        self.transport: asyncio.Transport | None = None
        self.in_request = False
        self.deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if not self.guard.admit(self):
            transport.abort()
            return
        self.inner.connection_made(transport)
        self.arm()

    def arm(self) -> None:
        """The header deadline starts (a new connection, or the next request's first byte)."""
        if self.deadline is None and not self.in_request:
            loop = asyncio.get_running_loop()
            self.deadline = loop.call_later(self.guard.header_timeout, self.expire)

    def disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def expire(self) -> None:
        self.deadline = None
        if not self.in_request and self.transport is not None:
            self.guard.slow += 1
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        self.arm()
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm()
        if self.guard.release(self):
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


class ConnectionGuard:
    """Wraps aiohttp's protocol factory: counts connections, refuses those past the cap,
    closes those that are slow to send their headers."""

    _by_transport: dict[int, _Guarded] = {}
    """Open connections by their transport's id, for the middleware to find its own."""

    def __init__(
        self,
        factory: Callable[[], asyncio.Protocol],
        *,
        max_connections: int,
        header_timeout: float = HEADER_TIMEOUT,
    ) -> None:
        self.factory = factory
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self.open: set[_Guarded] = set()
        self.refused = 0
        """Connections closed at once because the cap was reached."""
        self.slow = 0
        """Connections closed because their headers were late."""
        self._said_at = 0.0

    def __call__(self) -> asyncio.Protocol:
        return _Guarded(self, self.factory())

    def admit(self, connection: _Guarded) -> bool:
        if len(self.open) >= self.max_connections:
            self.refused += 1
            now = time.monotonic()
            if now - self._said_at > 60:  # one line per burst, not one per connection
                self._said_at = now
                log.warning(
                    "ctxscope proxy: %d connections open, the most it holds; closing new ones "
                    "until some end",
                    len(self.open),
                )
            return False
        self.open.add(connection)
        assert connection.transport is not None
        ConnectionGuard._by_transport[id(connection.transport)] = connection
        return True

    def release(self, connection: _Guarded) -> bool:
        """Forget ``connection``; whether it had been admitted."""
        if connection not in self.open:
            return False
        self.open.discard(connection)
        ConnectionGuard._by_transport.pop(id(connection.transport), None)
        return True

    @classmethod
    def _of(cls, request: web.Request) -> _Guarded | None:
        transport = request.transport
        return None if transport is None else cls._by_transport.get(id(transport))

    @classmethod
    def request_started(cls, request: web.Request) -> None:
        """The headers are in: no deadline while the request is handled."""
        connection = cls._of(request)
        if connection is not None:
            connection.in_request = True
            connection.disarm()

    @classmethod
    def request_ended(cls, request: web.Request) -> None:
        connection = cls._of(request)
        if connection is not None:
            connection.in_request = False


class OneLine(logging.Filter):
    """aiohttp's server log as one line per event: the message and the error's own words, no
    traceback (a malformed request is the client's problem, not a crash)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            words = " ".join(part.strip() for part in str(error).splitlines() if part.strip())
            text = f"ctxscope proxy: {record.getMessage()}: {type(error).__name__} {words}"
            record.msg = cut(text, 300)
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


def one_line_logger() -> logging.Logger:
    """The logger given to aiohttp's request handlers."""
    logger = logging.getLogger("ctxscope.proxy.http")
    if not any(isinstance(f, OneLine) for f in logger.filters):
        logger.addFilter(OneLine())
    return logger
