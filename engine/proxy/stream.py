"""A streamed answer reassembled: the Messages API's server-sent events (``message_start``,
``content_block_start`` / ``_delta`` / ``_stop``, ``message_delta``, ``message_stop``, as its
streaming documentation describes them) put back together into the message a non-streamed
request would have returned. Bytes may arrive cut anywhere, inside a line or a character.
The OpenAI Responses API's stream ends with the whole response in its last event
(``response.completed``, ``.incomplete`` or ``.failed``): that is the answer."""

from __future__ import annotations

import codecs
import json
import zlib
from typing import Any

from engine.models import Usage

DECODERS = ("gzip", "deflate", "identity", "")
"""Content encodings the recorder can read (the proxy asks the upstream for no other)."""


def decompressed(chunks: list[bytes], encoding: str) -> bytes:
    """The body of ``chunks`` sent with ``Content-Encoding: encoding``."""
    data = b"".join(chunks)
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return data
    if encoding == "gzip":
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)
    if encoding == "deflate":
        try:
            return zlib.decompress(data)
        except zlib.error:
            return zlib.decompressobj(-zlib.MAX_WBITS).decompress(data)  # raw deflate
    raise ValueError(f"cannot read a body sent with Content-Encoding: {encoding}")


class EventReader:
    """Server-sent events from bytes fed in any pieces (the HTML Living Standard's parsing:
    lines end in CR, LF or CRLF; ``data`` lines join with LF; a blank line ends an event)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        """The (event, data) pairs completed by ``chunk``."""
        text = self._pending + self._decoder.decode(chunk)
        lines = text.splitlines(keepends=True)
        self._pending = ""
        if lines and not lines[-1].endswith(("\n", "\r")):
            self._pending = lines.pop()
        elif lines and lines[-1].endswith("\r"):
            # A CR may be the first half of a CRLF cut between two chunks.
            self._pending = lines.pop()
        out: list[tuple[str, str]] = []
        for raw in lines:
            self._line(raw.rstrip("\r\n"), out)
        return out

    def close(self) -> list[tuple[str, str]]:
        """Whatever a final line without its end completes."""
        out: list[tuple[str, str]] = []
        if self._pending:
            self._line(self._pending.rstrip("\r\n"), out)
            self._pending = ""
        self._line("", out)
        return out

    def _line(self, line: str, out: list[tuple[str, str]]) -> None:
        if not line:
            if self._data or self._event:
                out.append((self._event or "message", "\n".join(self._data)))
            self._event, self._data = "", []
            return
        if line.startswith(":"):
            return  # a comment
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)


class MessageAssembler:
    """The message a stream of Messages API events describes."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.complete = False
        self._partial_json: dict[int, str] = {}

    def add(self, event: str, data: str) -> None:
        try:
            payload = json.loads(data)
        except json.JSONDecodeError:
            return  # not an event of the Messages API: the client got it as it was
        if not isinstance(payload, dict):
            return
        kind = payload.get("type", event)
        if kind == "message_start" and isinstance(payload.get("message"), dict):
            self.message = dict(payload["message"])
            self.message["content"] = list(self.message.get("content") or [])
        elif kind == "error":
            self.error = payload
        elif self.message is None:
            return
        elif kind == "content_block_start":
            self._start(payload)
        elif kind == "content_block_delta":
            self._delta(payload)
        elif kind == "content_block_stop":
            self._stop(payload)
        elif kind == "message_delta":
            self.message.update(payload.get("delta") or {})
            usage = payload.get("usage")
            if isinstance(usage, dict):
                # The figures are cumulative: later ones replace earlier ones.
                self.message["usage"] = {**(self.message.get("usage") or {}), **usage}
        elif kind == "message_stop":
            self.complete = True

    def _block(self, index: Any) -> dict[str, Any] | None:
        assert self.message is not None
        content = self.message["content"]
        if isinstance(index, int) and 0 <= index < len(content):
            block: dict[str, Any] = content[index]
            return block
        return None

    def _start(self, payload: dict[str, Any]) -> None:
        assert self.message is not None
        index, block = payload.get("index"), payload.get("content_block")
        if not isinstance(block, dict) or not isinstance(index, int):
            return
        content = self.message["content"]
        while len(content) <= index:
            content.append({})
        content[index] = dict(block)

    def _delta(self, payload: dict[str, Any]) -> None:
        index = payload.get("index")
        block, delta = self._block(index), payload.get("delta")
        if block is None or not isinstance(delta, dict):
            return
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta.get("signature", "")
        elif kind == "input_json_delta":
            assert isinstance(index, int)
            self._partial_json[index] = self._partial_json.get(index, "") + delta.get(
                "partial_json", ""
            )
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))

    def _stop(self, payload: dict[str, Any]) -> None:
        index = payload.get("index")
        block = self._block(index)
        if block is None or not isinstance(index, int) or index not in self._partial_json:
            return
        text = self._partial_json.pop(index)
        try:
            block["input"] = json.loads(text) if text else {}
        except json.JSONDecodeError:
            block["input"] = {"_unparsed": text}


def reassemble(body: bytes) -> MessageAssembler:
    """The message of a whole event-stream body."""
    reader, assembler = EventReader(), MessageAssembler()
    for event, data in reader.feed(body) + reader.close():
        assembler.add(event, data)
    return assembler


RESPONSES_FINAL = ("response.completed", "response.incomplete", "response.failed")
"""The Responses API's last event, carrying the whole response."""


def responses_stream(body: bytes) -> tuple[dict[str, Any] | None, bool]:
    """The response a Responses API stream ended with, and whether it completed; without a
    final event, the response of its last ``response.*`` event that carried one."""
    reader = EventReader()
    found: dict[str, Any] | None = None
    done = False
    for event, data in reader.feed(body) + reader.close():
        try:
            payload = json.loads(data)
        except json.JSONDecodeError:
            continue
        if not isinstance(payload, dict):
            continue
        kind = payload.get("type", event)
        if kind == "error":
            return payload, False
        if isinstance(payload.get("response"), dict):
            found = payload["response"]
            done = kind == "response.completed"
    return found, done


def responses_usage(raw: dict[str, Any]) -> Usage:
    """The Responses API's usage as a :class:`Usage`: its ``input_tokens`` include the cached
    ones (``input_tokens_details.cached_tokens``), which become cache reads."""
    details = raw.get("input_tokens_details")
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return Usage(
        input_tokens=max(0, int(raw.get("input_tokens") or 0) - cached),
        cache_read_input_tokens=cached,
        output_tokens=int(raw.get("output_tokens") or 0),
    )
