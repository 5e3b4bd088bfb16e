"""Typed events the engine emits; the TUI and ``ctxscope ask --json`` consume them.

The engine never prints. Every event is a pydantic model with a ``type`` tag, so an observer can
dispatch on the class and ``--json`` can write ``event.model_dump_json()`` per line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from engine.models import Compaction, Message, Summary, ToolCall, Usage


class Event(BaseModel):
    # Built on first use: most commands (``context``, ``show``) never emit most events.
    model_config = ConfigDict(defer_build=True)

    type: str


class RoundStarted(Event):
    type: Literal["round_started"] = "round_started"
    round_index: int
    user_message: Message


class RoundFinished(Event):
    type: Literal["round_finished"] = "round_finished"
    round_index: int
    answer: str
    steps: int


class RoundInterrupted(Event):
    type: Literal["round_interrupted"] = "round_interrupted"
    round_index: int
    reason: str


class TextDelta(Event):
    """A piece of assistant text as it streams in (thought or final answer)."""

    type: Literal["text_delta"] = "text_delta"
    round_index: int
    step: int
    text: str


class StepStored(Event):
    """A message was written to history (assistant step, tool result or final answer)."""

    type: Literal["step_stored"] = "step_stored"
    round_index: int
    step: int
    message: Message


class ToolStarted(Event):
    type: Literal["tool_started"] = "tool_started"
    round_index: int
    step: int
    call: ToolCall


class ToolFinished(Event):
    type: Literal["tool_finished"] = "tool_finished"
    round_index: int
    step: int
    call: ToolCall
    status: str
    full_text: str
    """What the model sees in the scratchpad."""
    compressed: str
    """The JSON that history keeps."""
    tokens_full: int
    tokens_compressed: int


class UsageUpdated(Event):
    type: Literal["usage_updated"] = "usage_updated"
    round_index: int | None
    step: int | None
    usage: Usage
    local_estimate: int
    layers: dict[str, int]
    """Per-layer token breakdown of the request just sent (engine.context.builder.LAYERS order)."""


class RetryWaiting(Event):
    type: Literal["retry_waiting"] = "retry_waiting"
    attempt: int
    max_attempts: int
    wait_seconds: float
    reason: str


class CompactionStarted(Event):
    type: Literal["compaction_started"] = "compaction_started"
    trigger: str
    tokens_before: int
    rounds: int
    """Rounds about to be archived."""


class CompactionProgress(Event):
    type: Literal["compaction_progress"] = "compaction_progress"
    stage: str
    """``archiving``, ``summarizing``, ``summarizing chunk 2/5``, ``storing``..."""
    done: int = 0
    total: int = 0


class CompactionFinished(Event):
    type: Literal["compaction_finished"] = "compaction_finished"
    compaction: Compaction
    summary: Summary | None


class CompactionFailed(Event):
    type: Literal["compaction_failed"] = "compaction_failed"
    compaction: Compaction
    error: str


class BudgetWarning(Event):
    """The kept rounds alone exceed the threshold; compacting again would not help."""

    type: Literal["budget_warning"] = "budget_warning"
    kept_tokens: int
    threshold: int
    message: str


class Notice(Event):
    """Something the user should read that is not an error (e.g. summary fallback)."""

    type: Literal["notice"] = "notice"
    message: str


class ErrorEvent(Event):
    type: Literal["error"] = "error"
    message: str
    kind: str = "error"
    """``auth``, ``bad_request``, ``overloaded``, ``connection``, ``step_limit``, ``tool``..."""
    detail: dict[str, Any] = {}


EventSink = Callable[[Event], None]
"""Where the engine sends events; must be thread-safe for the TUI (it posts messages)."""


def ignore_events(event: Event) -> None:
    """An :data:`EventSink` that drops everything."""
