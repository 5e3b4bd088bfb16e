"""The proxy is for its own agents only: what it refuses before a request is forwarded or
stored, and how it bounds the connections it holds.

- **A web page.** Any page the user opens can send a "simple" cross-site request to
  127.0.0.1 (``POST`` with ``Content-Type: text/plain``, no preflight). Browsers mark every
  such request: an ``Origin`` header, and ``Sec-Fetch-Site`` other than ``none``; agents send
  neither. Those, and a body type the API does not take (the Messages API takes
  ``application/json``; only the Files API, which is not recorded, takes
  ``multipart/form-data``), are answered 403 by :func:`browser_refusal`.
- **Slow connections.** A client that sends one byte now and then would hold a connection
  and a file descriptor forever: a connection whose request headers are not all in within
  ``header_timeout`` seconds (from the connection's start, or from the first byte of the
  next request on a kept-alive one) is closed, and counted by :class:`ConnectionGuard`; the
  body must arrive within ``body_timeout`` (else 408). The deadlines are kept by each
  connection (``engine/proxy/relay.py``) and checked by one sweep of the proxy's a few
  times a second, not by a timer per request.
- **Too many connections.** Past ``max_connections`` open at once a new one is closed as soon
  as it is accepted, so the process never reaches its file limit (where asyncio logs a
  traceback per ``accept``); that is said in one log line per burst, not one per connection.
- **Malformed HTTP** is answered 400 and said in one log line, not a traceback.
"""

from __future__ import annotations

import logging
import resource
import time
from collections.abc import Mapping
from typing import Any

from engine.proxy.recorder import recorded_path

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


def browser_refusal(method: str, path: str, headers: Mapping[str, str]) -> str | None:
    """Why a request (its method, path and case-insensitive ``headers``) is refused as coming
    from a web page or not for the API; None if it is an agent's."""
    origin = headers.get("origin")
    if origin is not None:
        return f"refused a request from a web page (Origin {origin[:80]!r})"
    site = headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() != "none":
        return f"refused a request from a web page (Sec-Fetch-Site {site[:40]!r})"
    if method in ("POST", "PUT", "PATCH"):
        kind = media_type(headers.get("content-type", ""))
        allowed = {JSON} if recorded_path(method, path) else BODY_TYPES
        if kind not in allowed:
            shown = repr(kind[:80]) if kind else "none"
            return f"refused a body of type {shown}: the API takes {JSON}"
    return None


def connection_cap(limit: int = MAX_CONNECTIONS) -> int:
    """``limit``, at most a quarter of this process' file limit."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return limit
    return max(8, min(limit, soft // 4))


class ConnectionGuard:
    """The connections the proxy holds: counted, those past the cap refused, and how many
    were closed for being slow to send their headers (the deadlines themselves are the
    connections' own, ``engine/proxy/relay.py``)."""

    def __init__(self, *, max_connections: int, header_timeout: float = HEADER_TIMEOUT) -> None:
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self.open: set[Any] = set()
        self.refused = 0
        """Connections closed at once because the cap was reached."""
        self.slow = 0
        """Connections closed because their headers were late."""
        self._said_at = 0.0

    def admit(self, connection: object) -> bool:
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
        return True

    def release(self, connection: object) -> bool:
        """Forget ``connection``; whether it had been admitted."""
        if connection not in self.open:
            return False
        self.open.discard(connection)
        return True
