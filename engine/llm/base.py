"""The provider protocol: send a request, stream events back, return blocks, stop reason, usage."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from engine.messages.request import MAX_CACHE_BREAKPOINTS, ProviderRequest
from engine.models import ToolCall, Usage

__all__ = [
    "MAX_CACHE_BREAKPOINTS",
    "OFFLINE_NAME",
    "Cancelled",
    "ErrorKind",
    "Provider",
    "ProviderError",
    "ProviderRequest",
    "ProviderResponse",
    "StreamEvent",
    "StreamText",
    "StreamToolUse",
    "with_unique_tool_ids",
]

OFFLINE_NAME = "offline (rule-based, no LLM)"


class StreamText(BaseModel):
    kind: Literal["text"] = "text"
    text: str


class StreamToolUse(BaseModel):
    """A tool_use block is complete (its input fully received)."""

    kind: Literal["tool_use"] = "tool_use"
    call: ToolCall


class StreamRetry(BaseModel):
    """The provider waits before retrying (429, 5xx, connection error)."""

    kind: Literal["retry"] = "retry"
    attempt: int
    max_attempts: int
    wait_seconds: float
    reason: str


StreamEvent = StreamText | StreamToolUse | StreamRetry


class ProviderResponse(BaseModel):
    content: list[dict[str, Any]]
    """The final content blocks (text and tool_use), as the API returns them."""
    stop_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    usage_source: Literal["api", "local"] = "api"
    """Who counted ``usage``: ``api``, the API's own figures; ``local``, ctxscope's count of
    the request (the offline provider and a replay have no API to ask)."""

    @property
    def text(self) -> str:
        return "".join(b.get("text", "") for b in self.content if b.get("type") == "text")

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [
            ToolCall(id=b["id"], name=b["name"], input=b.get("input") or {})
            for b in self.content
            if b.get("type") == "tool_use"
        ]


ErrorKind = Literal[
    "auth", "bad_request", "prompt_too_long", "overloaded", "rate_limit", "connection", "server"
]


def with_unique_tool_ids(
    response: ProviderResponse, messages: list[dict[str, Any]]
) -> ProviderResponse:
    """``response`` with every ``tool_use`` id unique in the conversation.

    The API refuses a request in which two ``tool_use`` blocks share an id, so one duplicate
    from a provider would poison every later request of the session: a repeated id (within the
    answer, or already used earlier in ``messages``) is renamed ``<id>_2``, ``<id>_3``…
    """
    taken = {
        block.get("id")
        for msg in messages
        if isinstance(msg.get("content"), list)
        for block in msg["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use"
    }
    content = []
    renamed = False
    for block in response.content:
        if block.get("type") == "tool_use":
            original = str(block.get("id"))
            new_id, n = original, 1
            while new_id in taken:
                n += 1
                new_id = f"{original}_{n}"
            taken.add(new_id)
            if new_id != original:
                block = {**block, "id": new_id}
                renamed = True
        content.append(block)
    return response.model_copy(update={"content": content}) if renamed else response


class ProviderError(Exception):
    """A model call failed; ``kind`` says what the loop should do about it."""

    def __init__(self, kind: ErrorKind, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


class Cancelled(Exception):
    """The call was cancelled by the user (Esc)."""


class Provider(Protocol):
    name: str
    """Shown on screen and in ``--json``: ``anthropic`` or :data:`OFFLINE_NAME`."""
    model: str
    is_model: bool
    """False for the rule-based offline provider: summaries are then each strategy's
    extractive ones, in the strategy's own format, and :meth:`ask_text` is never called."""

    def complete(
        self,
        request: ProviderRequest,
        on_event: Callable[[StreamEvent], None],
        cancel: threading.Event | None = None,
    ) -> ProviderResponse:
        """Send one request, streaming events back; raise ProviderError or Cancelled."""
        ...

    def ask_text(
        self,
        system: str,
        text: str,
        timeout: float,
        *,
        model: str | None = None,
        retries: int | None = None,
    ) -> str:
        """One plain request (a system prompt, one user text, no tools); the answer's text.

        Raises ``TimeoutError`` after ``timeout`` seconds and ProviderError on API failures.
        The summary call (:mod:`engine.compaction.summary_call`) is its one user: a provider
        sends, and knows nothing of what a summary is. ``model``: another model than the
        provider's (the ``summary_model`` setting); ``retries``: the provider's own retries
        for this call (None: its setting; 0 when the caller retries itself, seed 004 F-007).
        """
        ...
