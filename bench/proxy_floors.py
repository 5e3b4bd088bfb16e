"""Forwarders cheaper than the proxy, for ``bench/bench_proxy.py``'s 8-client rounds (issue 44):
what an HTTP forwarder costs per request in Python on this machine, each doing the least a
proxy must (the body read, the headers copied but ``Host`` and the hop-by-hop ones, the
answer sent back), without the proxy's guard, steering or recorder.

- ``aiohttp``: aiohttp's low-level server (``web.Server``, no application, router or
  middleware) and a ``ClientSession``; the answer read whole, sent with ``Response(body=…)``.
- ``lean``: the same with everything the session does not need off (``DummyCookieJar``, no
  decompression, no automatic headers, a kept-alive connector without a limit) and the
  headers handed over as they came (no dictionary rebuilt per request).
- ``lean-stream``: ``lean`` with the answer streamed (``StreamResponse``, ``write`` per piece
  as it comes), as the proxy does for event streams.
- ``protocol``: asyncio Protocols on both sides, no tasks and no awaits per request: the
  request framed by aiohttp's own parser (``aiohttp.http.HttpRequestParser``, its C
  version), sent to a kept-alive upstream connection in one write; the upstream's bytes
  relayed to the client as they come, its framing followed by ``HttpResponseParser`` to know
  where the answer ends.

    python bench/proxy_floors.py KIND UPSTREAM_PORT    # prints "… on 127.0.0.1:PORT" on stderr
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections import deque
from typing import Any

DROPPED = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
DROPPED_BYTES = frozenset(name.encode() for name in DROPPED)


def aiohttp_forwarder(upstream: int, lean: bool, stream: bool) -> Any:
    """A low-level aiohttp handler forwarding to ``upstream`` and the session it uses."""
    import aiohttp
    from aiohttp import web
    from multidict import CIMultiDict

    if lean:
        client = aiohttp.ClientSession(
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=None),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            read_bufsize=1 << 16,
        )
    else:
        client = aiohttp.ClientSession(
            auto_decompress=False,
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            connector=aiohttp.TCPConnector(limit=0),
        )
    base = f"http://127.0.0.1:{upstream}"

    async def forward(request: web.BaseRequest) -> web.StreamResponse:
        body = await request.read()
        if lean:
            headers = CIMultiDict(request.headers)
            for name in DROPPED:
                headers.popall(name, None)
        else:
            headers = CIMultiDict(
                (k, v) for k, v in request.headers.items() if k.lower() not in DROPPED
            )
        async with client.request(
            request.method, base + request.raw_path, headers=headers, data=body
        ) as answer:
            kept = CIMultiDict(answer.headers)
            for name in DROPPED:
                kept.popall(name, None)
            if not stream:
                data = await answer.read()
                return web.Response(status=answer.status, body=data, headers=kept)
            response = web.StreamResponse(status=answer.status, headers=kept)
            await response.prepare(request)
            async for chunk in answer.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    return web.Server(forward, access_log=None), client


class _Flow:
    """What aiohttp's parsers ask of a protocol for a body's stream (flow control): nothing
    to do here, each body is taken out of its stream as soon as it is parsed."""

    _reading_paused = False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self, resume_parser: bool = True) -> None:
        pass


class Upstream(asyncio.Protocol):
    """One kept-alive connection to the upstream: relays the bytes of each answer to the
    client that asked, as they come."""

    def __init__(self, pool: Pool) -> None:
        from aiohttp.http import HttpResponseParser

        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.client: Downstream | None = None
        loop = asyncio.get_running_loop()
        self.parser = HttpResponseParser(_Flow(), loop, 1 << 22, auto_decompress=False)
        self.payload: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def send(self, client: Downstream, data: list[bytes]) -> None:
        assert self.transport is not None
        self.client = client
        self.transport.writelines(data)

    def data_received(self, data: bytes) -> None:
        client = self.client
        if client is None or client.transport is None:
            return
        client.transport.write(data)
        messages, _, _ = self.parser.feed_data(data)
        if messages:
            self.payload = messages[-1][1]
        payload = self.payload
        if payload is None:
            return
        if payload._buffer:
            payload.read_nowait()
        if payload.is_eof():
            self.payload = None
            self.client = None
            self.pool.idle.append(self)
            client.answered()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self in self.pool.idle:
            self.pool.idle.remove(self)
        if self.client is not None and self.client.transport is not None:
            self.client.transport.abort()


class Pool:
    """Kept-alive connections to the upstream."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.idle: deque[Upstream] = deque()
        self.host = f"127.0.0.1:{port}".encode()

    def send(self, client: Downstream, data: list[bytes]) -> None:
        if self.idle:
            self.idle.pop().send(client, data)
            return

        async def connect() -> None:
            loop = asyncio.get_running_loop()
            _, upstream = await loop.create_connection(
                lambda: Upstream(self), "127.0.0.1", self.port
            )
            upstream.send(client, data)

        asyncio.ensure_future(connect())


class Downstream(asyncio.Protocol):
    """One client's connection: each request framed by aiohttp's parser, then sent whole."""

    def __init__(self, pool: Pool) -> None:
        from aiohttp.http import HttpRequestParser

        self.pool = pool
        self.transport: asyncio.Transport | None = None
        loop = asyncio.get_running_loop()
        self.parser = HttpRequestParser(_Flow(), loop, 1 << 22)
        self.pending: deque[tuple[Any, Any, list[bytes]]] = deque()
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        messages, _, _ = self.parser.feed_data(data)
        for message, payload in messages:
            self.pending.append((message, payload, []))
        for _, payload, chunks in self.pending:
            if payload._buffer:
                chunks.append(payload.read_nowait())
        self.next()

    def next(self) -> None:
        if self.busy or not self.pending or not self.pending[0][1].is_eof():
            return
        message, _, chunks = self.pending.popleft()
        body = b"".join(chunks)
        head = [f"{message.method} {message.path} HTTP/1.1\r\n".encode()]
        head += [
            name + b": " + value + b"\r\n"
            for name, value in message.raw_headers
            if name.lower() not in DROPPED_BYTES
        ]
        head.append(b"Host: " + self.pool.host + b"\r\nContent-Length: %d\r\n\r\n" % len(body))
        self.busy = True
        self.pool.send(self, [b"".join(head), body])

    def answered(self) -> None:
        self.busy = False
        self.next()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


def main(kind: str, upstream: int) -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        client = None
        if kind == "protocol":
            pool = Pool(upstream)
            server = await loop.create_server(lambda: Downstream(pool), "127.0.0.1", 0)
        else:
            factory, client = aiohttp_forwarder(
                upstream, lean=kind != "aiohttp", stream=kind == "lean-stream"
            )
            server = await loop.create_server(factory, "127.0.0.1", 0)
        print(f"{kind} on 127.0.0.1:{server.sockets[0].getsockname()[1]}", file=sys.stderr)
        sys.stderr.flush()
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        if client is not None:
            await client.close()

    asyncio.run(run())


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
