"""The scratchpad: the current round's steps with their FULL observations (seed A2, D3).

Within a round the model sees every observation whole; history keeps the compressed copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.models import Message


@dataclass
class ScratchResult:
    """One FULL tool observation of the current round, exactly as the model sees it."""

    tool_use_id: str
    tool_name: str
    text: str
    is_error: bool = False
    tokens: int | None = field(default=None, compare=False, repr=False)
    """Cached ``tool_result`` block count (filled by the builder)."""


@dataclass
class ScratchStep:
    """One step of the current round: the assistant message (with tool_calls) and its results."""

    assistant: Message
    results: list[ScratchResult] = field(default_factory=list)
