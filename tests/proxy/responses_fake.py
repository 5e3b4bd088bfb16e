"""A small stand-in for the OpenAI Responses API (``POST /v1/responses``, streamed or not, and
``POST /v1/responses/compact``), on 127.0.0.1, for the proxy's tests.

A streamed answer is the event sequence the API reference documents for a text answer:
``response.created``, ``response.in_progress``, ``response.output_item.added``,
``response.content_part.added``, ``response.output_text.delta`` (a few), ``…text.done``,
``…content_part.done``, ``…output_item.done``, ``response.completed`` carrying the whole
response with its usage (``input_tokens`` including ``input_tokens_details.cached_tokens``).
A body without ``model`` or ``input`` is refused with a 400, as the API does."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {
    "input_tokens": 1200,
    "input_tokens_details": {"cached_tokens": 1000},
    "output_tokens": 30,
    "output_tokens_details": {"reasoning_tokens": 10},
    "total_tokens": 1230,
}


def response_object(text: str, status: str = "completed") -> dict[str, Any]:
    item = {
        "id": "msg_r1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1767225600,
        "status": status,
        "model": "gpt-5-codex",
        "output": [item] if status == "completed" else [],
        "usage": USAGE if status == "completed" else None,
    }


def events(text: str) -> Iterator[dict[str, Any]]:
    start = response_object(text, "in_progress")
    item = response_object(text)["output"][0]
    empty = {**item, "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    yield {"type": "response.created", "response": start}
    yield {"type": "response.in_progress", "response": start}
    yield {"type": "response.output_item.added", "output_index": 0, "item": empty}
    yield {
        "type": "response.content_part.added",
        "item_id": "msg_r1",
        "output_index": 0,
        "content_index": 0,
        "part": part,
    }
    for i in range(0, len(text), 4):
        yield {
            "type": "response.output_text.delta",
            "item_id": "msg_r1",
            "output_index": 0,
            "content_index": 0,
            "delta": text[i : i + 4],
        }
    yield {
        "type": "response.output_text.done",
        "item_id": "msg_r1",
        "output_index": 0,
        "content_index": 0,
        "text": text,
    }
    yield {
        "type": "response.content_part.done",
        "item_id": "msg_r1",
        "output_index": 0,
        "content_index": 0,
        "part": {**part, "text": text},
    }
    yield {"type": "response.output_item.done", "output_index": 0, "item": item}
    yield {"type": "response.completed", "response": response_object(text)}


class FakeResponsesServer:
    """Answers every request with ``text``; ``requests`` holds the bodies received."""

    def __init__(self, text: str = "Patched the parser.", chunk_size: int = 9) -> None:
        self.text = text
        self.chunk_size = chunk_size
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeResponsesServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw or b"{}")
                server.requests.append((self.path, body))
                missing = [k for k in ("model", "input") if k not in body]
                if missing:
                    error = {
                        "message": f"Missing required parameter: '{missing[0]}'.",
                        "type": "invalid_request_error",
                        "param": missing[0],
                        "code": None,
                    }
                    self._json(400, {"error": error})
                elif self.path.endswith("/responses/compact"):
                    summary = {"type": "compaction", "encrypted_content": "gAAAA-fake"}
                    self._json(200, {"output": [summary], "usage": USAGE})
                elif body.get("stream"):
                    self._stream()
                else:
                    self._json(200, response_object(server.text))

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                data = b"".join(
                    f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode()
                    for e in events(server.text)
                )
                for i in range(0, len(data), server.chunk_size):
                    piece = data[i : i + server.chunk_size]
                    self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        return Handler
