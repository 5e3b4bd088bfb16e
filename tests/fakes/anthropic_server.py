"""A scripted, local stand-in for the Anthropic Messages API (``POST /v1/messages``).

Tests never touch the network: they start this server on 127.0.0.1 (a random port, one thread
per connection), point a provider at ``server.url`` and script what it answers, one reply per
request, in order. Every request body is recorded, so a test can assert on what was *sent*
(cache breakpoints, tools, the summary prompt) as well as on what came back.

A reply is served the way the request asked for it: as a server-sent event stream
(``message_start`` … ``message_stop``, with ``text_delta`` and ``input_json_delta`` pieces)
when the body says ``"stream": true``, as one JSON message otherwise.

Use it through the ``fake_anthropic`` fixture::

    def test_answer(fake_anthropic):
        fake_anthropic.script([tool_reply(("Read", {"file_path": "a.py"})), text_reply("done")])
        provider = AnthropicProvider(settings, api_key="test", base_url=fake_anthropic.url)
        ...
        assert fake_anthropic.requests[0].body["tools"][-1]["cache_control"]

or, for a subprocess (the CLI), with ``env={**os.environ, **fake_anthropic.env()}``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from engine.context.builder import MAX_CACHE_BREAKPOINTS, validate_conversation

PING_INTERVAL = 0.05
"""Seconds between the pings of a ``pings_only`` stream."""

FAKE_API_KEY = "sk-ant-fake-test-key"
"""What ``env()`` puts in ANTHROPIC_API_KEY; the server accepts any key."""

_ids = itertools.count(1)


@dataclass
class Reply:
    """A successful answer: content blocks, a stop reason and usage figures."""

    content: list[dict[str, Any]]
    stop_reason: str = "end_turn"
    usage: dict[str, int] = field(default_factory=dict)
    """Any of input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens."""
    model: str = "claude-fake"
    delay: float = 0.0
    """Seconds to wait before answering (to trip client timeouts or test cancellation)."""
    cut_after: int | None = None
    """Streams only: drop the connection after this many SSE events (a stream cut mid-answer)."""
    garble_after: int | None = None
    """Streams only: after this many SSE events, send one whose data is not JSON, then stop."""
    pings_only: bool = False
    """Streams only: send nothing but ``ping`` events, every ``PING_INTERVAL`` seconds, until
    the client hangs up or the server stops (a server that holds a round without answering)."""
    headers: dict[str, str] = field(default_factory=dict)
    chunk_size: int | None = None
    """Streams only: send the stream's bytes in pieces of this size, cut anywhere (inside an
    event, a line, a character), as a network may deliver them."""
    cache_creation: dict[str, int] | None = None
    """The usage's ``cache_creation`` breakdown (``ephemeral_5m_input_tokens``, ``…_1h_…``)."""


@dataclass
class ErrorReply:
    """An HTTP error with the API's error body ``{"type": "error", "error": {...}}``."""

    status: int
    message: str
    error_type: str = "api_error"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


ScriptItem = Reply | ErrorReply | Callable[["RecordedRequest"], "Reply | ErrorReply"]
"""A scripted answer, or a function of the request that returns one (for echo-style fakes)."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: dict[str, Any]
    raw: bytes = b""
    """The body's bytes as they came."""

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def user_text(self) -> str:
        """The text of the last user message (string content or its text blocks)."""
        for message in reversed(self.body.get("messages", [])):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(b.get("text", "") for b in content if b.get("type") == "text")
        return ""


def text_reply(
    text: str,
    *,
    usage: dict[str, int] | None = None,
    stop_reason: str = "end_turn",
    **options: Any,
) -> Reply:
    """An answer with one text block; ``options`` are further :class:`Reply` fields."""
    return Reply(
        content=[{"type": "text", "text": text}],
        stop_reason=stop_reason,
        usage=usage or {},
        **options,
    )


def tool_reply(
    *calls: tuple[str, dict[str, Any]] | tuple[str, str, dict[str, Any]],
    text: str | None = None,
    usage: dict[str, int] | None = None,
    **options: Any,
) -> Reply:
    """An answer with an optional text block then one tool_use block per call.

    A call is ``(name, input)`` (a unique id is made up) or ``(id, name, input)``.
    """
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    for call in calls:
        if len(call) == 3:
            call_id, name, tool_input = call
        else:
            name, tool_input = call
            call_id = f"toolu_fake_{next(_ids):04d}"
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
    return Reply(content=content, stop_reason="tool_use", usage=usage or {}, **options)


def error_reply(
    status: int,
    message: str = "",
    *,
    error_type: str | None = None,
    retry_after: float | None = None,
    **options: Any,
) -> ErrorReply:
    """An API error; the error type defaults to the one the real API uses for ``status``."""
    defaults = {
        400: ("invalid_request_error", "Invalid request."),
        401: ("authentication_error", "invalid x-api-key"),
        403: ("permission_error", "Your API key does not have permission."),
        404: ("not_found_error", "Not found."),
        429: ("rate_limit_error", "Number of requests has exceeded your rate limit."),
        500: ("api_error", "Internal server error."),
        529: ("overloaded_error", "Overloaded"),
    }
    default_type, default_message = defaults.get(status, ("api_error", f"HTTP {status}"))
    headers = dict(options.pop("headers", {}))
    if retry_after is not None:
        headers["retry-after"] = str(retry_after)
    return ErrorReply(
        status=status,
        message=message or default_message,
        error_type=error_type or default_type,
        headers=headers,
        **options,
    )


def prompt_too_long_reply(tokens: int = 210_000, limit: int = 200_000) -> ErrorReply:
    """The 400 the API answers when the prompt does not fit the model's window."""
    return error_reply(400, f"prompt is too long: {tokens} tokens > {limit} maximum")


class FakeAnthropicServer:
    """The server: ``url``, ``script(...)``, ``requests``; start and stop it, or use the fixture."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[ScriptItem] = deque()
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            # A short poll keeps stop() (hence every test's teardown) fast.
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="fake-anthropic",
            daemon=True,
        )
        self.default: ScriptItem | None = None
        """Served when the script is empty; None answers a 400 that names the problem."""
        self.refused: list[list[str]] = []
        """The problems of every request refused as malformed (see :func:`refusals`)."""
        self.cache: FakePromptCache | None = None
        """When set, a reply scripted without usage gets the usage this cache model gives
        the request (strict prefix matching at each ``cache_control``, lifetimes)."""

    @property
    def url(self) -> str:
        """The base URL to give the SDK (``http://127.0.0.1:<port>``)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def env(self) -> dict[str, str]:
        """Environment variables that point the Anthropic provider (and the CLI) here."""
        return {"ANTHROPIC_BASE_URL": self.url, "ANTHROPIC_API_KEY": FAKE_API_KEY}

    def script(self, replies: list[ScriptItem]) -> None:
        """Queue answers, served one per request in order (appends to what is queued)."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """Scripted replies not yet served."""
        with self._lock:
            return len(self._queue)

    def start(self) -> FakeAnthropicServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping on a delay
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeAnthropicServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _next(self, request: RecordedRequest) -> Reply | ErrorReply:
        with self._lock:
            self._requests.append(request)
            item = self._queue.popleft() if self._queue else self.default
        if item is None:
            # A 400 is not retried, so a test that under-scripts fails at once and says why.
            return error_reply(
                400, f"fake server: no scripted reply left for request #{len(self.requests)}"
            )
        return item(request) if callable(item) else item


def _make_handler(server: FakeAnthropicServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive and chunked streams, like the real API

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # keep pytest output clean

        def handle(self) -> None:
            """Serve the connection's requests until the client closes it; a client that
            resets it (an SDK closing its pool, a cancelled request) ends it quietly, as the
            real API's front end does, instead of socketserver's traceback on stderr."""
            try:
                super().handle()
            except (ConnectionResetError, BrokenPipeError):
                self.close_connection = True

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            recorded = RecordedRequest(
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                raw=raw,
            )
            if self.path.split("?")[0].endswith("/v1/messages/count_tokens"):
                self._count_tokens(recorded)
                return
            if not self.path.split("?")[0].endswith("/v1/messages"):
                self._send_json(404, _error_body("not_found_error", f"no route {self.path}"))
                return
            problems = refusals(body)
            if problems:
                # What the real API answers to a malformed conversation: a 400, never retried.
                with server._lock:
                    server._requests.append(recorded)
                    server.refused.append(problems)
                self._send_json(400, _error_body("invalid_request_error", "; ".join(problems)))
                return
            reply = server._next(recorded)
            if server.cache is not None and isinstance(reply, Reply) and not reply.usage:
                usage, creation = server.cache.charge(body)
                reply = dataclasses.replace(reply, usage=usage, cache_creation=creation)
            if reply.delay and server._stopping.wait(reply.delay):
                return
            try:
                if isinstance(reply, ErrorReply):
                    self._send_json(
                        reply.status, _error_body(reply.error_type, reply.message), reply.headers
                    )
                elif recorded.stream:
                    self._send_stream(reply)
                else:
                    self._send_json(200, _message_body(reply), reply.headers)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (timeout, cancel)

        def _count_tokens(self, recorded: RecordedRequest) -> None:
            """``POST /v1/messages/count_tokens``: ``{"input_tokens": N}``, N a stand-in
            count (a quarter of the characters of the body's JSON); its required fields
            checked as the API checks them."""
            with server._lock:
                server._requests.append(recorded)
            body = recorded.body
            missing = [k for k in ("model", "messages") if k not in body]
            if missing:
                message = f"{missing[0]}: Field required"
                self._send_json(400, _error_body("invalid_request_error", message))
                return
            if "max_tokens" in body or "stream" in body:
                key = "max_tokens" if "max_tokens" in body else "stream"
                message = f"{key}: Extra inputs are not permitted"
                self._send_json(400, _error_body("invalid_request_error", message))
                return
            self._send_json(200, {"input_tokens": max(1, len(json.dumps(body)) // 4)})

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            """``GET /v1/models``: one model, in the API's list shape; else a 404."""
            if self.path.split("?")[0].endswith("/v1/models"):
                model = {
                    "type": "model",
                    "id": "claude-fake",
                    "display_name": "Claude Fake",
                    "created_at": "2026-01-01T00:00:00Z",
                }
                page = {"data": [model], "has_more": False, "first_id": "claude-fake"}
                self._send_json(200, page | {"last_id": "claude-fake"})
                return
            self._send_json(404, _error_body("not_found_error", f"no route {self.path}"))

        def _send_json(
            self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", f"req_fake_{next(_ids)}")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _send_stream(self, reply: Reply) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if reply.pings_only:
                while not server._stopping.wait(PING_INTERVAL):
                    self._send_chunk(b'event: ping\ndata: {"type": "ping"}\n\n')
                return
            for sent, (event, data) in enumerate(sse_events(reply)):
                if reply.garble_after is not None and sent >= reply.garble_after:
                    self._send_chunk(b"event: content_block_delta\ndata: {not json at all\n\n")
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                if reply.cut_after is not None and sent >= reply.cut_after:
                    # No terminating chunk: the client sees the body end mid-answer.
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                payload = f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
                if reply.chunk_size:
                    for start in range(0, len(payload), reply.chunk_size):
                        self._send_chunk(payload[start : start + reply.chunk_size])
                else:
                    self._send_chunk(payload)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _send_chunk(self, payload: bytes) -> None:
            self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            self.wfile.flush()

    return Handler


SAMPLING_PARAMETERS = ("temperature", "top_p", "top_k")
"""Refused by the API version the anthropic SDK 2.x sends (``anthropic-version: 2026-10-21``),
whatever their value; the SDK no longer has them."""


def refusals(body: dict[str, Any]) -> list[str]:
    """Why the real Messages API would refuse ``body`` (empty when it would accept it):
    duplicate tool_use ids, orphan or missing tool results, wrong alternation, empty content
    or text blocks, more than 4 cache breakpoints, tool blocks in a request without tools,
    sampling parameters."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ["messages: field required"]
    problems = validate_conversation(messages)
    problems += [f"{k}: Extra inputs are not permitted" for k in SAMPLING_PARAMETERS if k in body]
    blocks_sent = [b for m in messages if isinstance(m.get("content"), list) for b in m["content"]]
    if not body.get("tools") and any(
        isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in blocks_sent
    ):
        problems.append(
            "Requests which include `tool_use` or `tool_result` blocks must define tools."
        )
    system = body.get("system") or []
    blocks = [system] if isinstance(system, str) else list(system)
    for i, block in enumerate(blocks):
        text = block if isinstance(block, str) else block.get("text", "")
        if not str(text).strip():
            problems.append(f"system block {i}: text content blocks must be non-empty")
    cached = [b for b in [*blocks, *(body.get("tools") or []), *blocks_sent] if isinstance(b, dict)]
    n = sum(1 for b in cached if "cache_control" in b)
    if n > MAX_CACHE_BREAKPOINTS:
        problems.append(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {n}."
        )
    return problems


class FakePromptCache:
    """The prompt cache as Anthropic documents it, written here on its own (not the engine's
    model) so that tests can hold the two against each other: the request's blocks in the
    order tools, system, messages; a block with ``cache_control`` a breakpoint; a request
    reads the longest prefix it repeats exactly (markers aside) that is still alive, checking
    each breakpoint's position and the 19 before it; it writes from there to its last
    breakpoint of at least ``min_tokens``, each part at its breakpoint's lifetime (``"ttl":
    "1h"``: 3,600 s, else 300 s); a read renews an entry's life. A block's tokens are a
    quarter of its JSON's characters; the clock is ``now`` (seconds), which a test moves."""

    def __init__(self, min_tokens: int = 1024) -> None:
        self.min_tokens = min_tokens
        self.now = 0.0
        self.entries: dict[str, tuple[float, float]] = {}

    @staticmethod
    def blocks(body: dict[str, Any]) -> list[tuple[str, int, float | None]]:
        out = []
        system = body.get("system") or []
        pieces: list[Any] = [("tool", t) for t in body.get("tools") or []]
        pieces += [("system", b) for b in ([system] if isinstance(system, str) else system)]
        for message in body.get("messages") or []:
            content = message.get("content")
            content = [{"type": "text", "text": content}] if isinstance(content, str) else content
            pieces += [(f"{message.get('role')}{j}", b) for j, b in enumerate(content)]
        for where, piece in pieces:
            marker = piece.get("cache_control") if isinstance(piece, dict) else None
            bare = (
                {k: v for k, v in piece.items() if k != "cache_control"}
                if isinstance(piece, dict)
                else piece
            )
            text = where + json.dumps(bare, sort_keys=True)
            life = None if marker is None else 3600.0 if marker.get("ttl") == "1h" else 300.0
            out.append((text, max(1, len(text) // 4), life))
        return out

    def charge(self, body: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
        """The usage of ``body`` sent at :attr:`now`, and its ``cache_creation``."""
        import hashlib

        blocks = self.blocks(body)
        keys, sums, chain, total = [], [], hashlib.sha256(), 0
        for text, tokens, _ in blocks:
            chain.update(text.encode())
            keys.append(chain.hexdigest())
            total += tokens
            sums.append(total)
        marks = [i for i, b in enumerate(blocks) if b[2] is not None]
        read = 0
        for bp in marks:
            for j in range(bp, max(-1, bp - 20), -1):
                found = self.entries.get(keys[j])
                if found and found[0] > self.now:
                    self.entries[keys[j]] = (self.now + found[1], found[1])
                    read = max(read, sums[j])
                    break
        five = hour = 0
        done = read
        for bp in [m for m in marks if sums[m] >= self.min_tokens]:
            life = blocks[bp][2] or 300.0
            part = max(0, sums[bp] - done)
            done = max(done, sums[bp])
            if life > 300:
                hour += part
            else:
                five += part
            if keys[bp] not in self.entries or self.entries[keys[bp]][0] <= self.now:
                self.entries[keys[bp]] = (self.now + life, life)
        usage = {
            "input_tokens": total - read - five - hour,
            "output_tokens": 5,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": five + hour,
        }
        return usage, {"ephemeral_5m_input_tokens": five, "ephemeral_1h_input_tokens": hour}


def _error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def _usage(reply: Reply) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "input_tokens": reply.usage.get("input_tokens", 10),
        "output_tokens": reply.usage.get("output_tokens", 5),
        "cache_read_input_tokens": reply.usage.get("cache_read_input_tokens", 0),
        "cache_creation_input_tokens": reply.usage.get("cache_creation_input_tokens", 0),
    }
    if reply.cache_creation is not None:
        usage["cache_creation"] = dict(reply.cache_creation)
    return usage


def _message_body(reply: Reply) -> dict[str, Any]:
    return {
        "id": f"msg_fake_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": reply.content,
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": _usage(reply),
    }


def _pieces(text: str, parts: int = 3) -> list[str]:
    """Split text into a few non-empty pieces, as the API streams it."""
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse_events(reply: Reply) -> Iterator[tuple[str, dict[str, Any]]]:
    """The (event name, data) pairs of the stream for ``reply``, as the real API orders them."""
    usage = _usage(reply)
    start = _message_body(reply) | {"content": [], "stop_reason": None}
    start["usage"] = usage | {"output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(reply.content):
        if block["type"] == "text":
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            for piece in _pieces(block["text"]):
                delta = {"type": "text_delta", "text": piece}
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": delta,
                    },
                )
        elif block["type"] == "tool_use":
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": block["id"],
                        "name": block["name"],
                        "input": {},
                    },
                },
            )
            for piece in _pieces(json.dumps(block["input"]), parts=2):
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": delta,
                    },
                )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropicServer]:
    """A running :class:`FakeAnthropicServer`, stopped after the test."""
    server = FakeAnthropicServer().start()
    try:
        yield server
    finally:
        server.stop()
