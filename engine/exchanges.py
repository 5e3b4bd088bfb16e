"""Recorded API exchanges: one request an agent sent through ``ctxscope proxy`` and what the
API answered, as the store hands them out (docs/proxy.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from engine.models import Usage, utcnow

ExchangeKind = Literal["main", "compaction", "subagent", "side"]
"""What a request was to its conversation: the conversation itself, a compaction's summary
call, a subagent's conversation, or a side call (a title, a quota check: no tools)."""


class Exchange(BaseModel):
    """One request through the proxy and its answer, exactly as they went over the wire
    (the JSON values; the keys and the API headers never)."""

    id: int | None = None
    session_id: int | None = None
    kind: ExchangeKind = "main"
    thread: str = ""
    """A digest of the request's first message: the requests of one conversation share it."""
    method: str = "POST"
    path: str = "/v1/messages"
    status: int = 0
    """The upstream's HTTP status (0: no answer: the upstream was unreachable)."""
    outcome: Literal["complete", "error", "cancelled", "incomplete"] = "complete"
    """``cancelled``: the client hung up first; ``incomplete``: the stream ended early."""
    stream: bool = False
    model: str = ""
    request: dict[str, Any]
    """The request body as sent."""
    response: dict[str, Any] | None = None
    """The message the API answered (a stream reassembled), or its error body."""
    usage: Usage | None = None
    cache_creation: dict[str, int] = Field(default_factory=dict)
    """The usage's ``cache_creation`` breakdown (``ephemeral_5m_input_tokens``, ``…_1h_…``)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """The request headers that shape the answer (``anthropic-version``, ``anthropic-beta``);
    never a key or a token."""
    duration_ms: float = 0.0
    created_at: datetime = Field(default_factory=utcnow)
    steering: dict[str, Any] | None = None
    """With ``--steer``: what the proxy changed before sending (its rules, the frozen floor,
    each rewrite with the content sent instead), or why it sent the request as it came."""
