"""The recorded session as a replay plays it back: its rounds (inputs, model outputs, tool
results), a provider that answers each request with the next recorded assistant message, and
tools that answer with the recorded results."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.llm.base import ProviderRequest, ProviderResponse, StreamEvent, StreamText
from engine.messages.tokens import count_blocks
from engine.models import Message, Observation, Usage
from tools.base import ToolContext, ToolResult
from tools.registry import ToolRegistry, default_registry

if TYPE_CHECKING:
    pass


@dataclass
class RecordedRound:
    """One round of the original session: its input, model outputs and tool results."""

    text: str
    assistants: list[Message]
    results: dict[str, Observation | Message]
    """By tool_use id: the full observation, or (without one) the stored tool message."""
    last_id: int = 0
    """The newest message id of the round (the ledger items recorded up to it)."""


def recorded_rounds(
    messages: list[Message], observations: list[Observation]
) -> list[RecordedRound]:
    """A session's rounds as recorded, from all its messages (archived ones included, in
    order) and its observations."""
    by_use = {o.tool_use_id: o for o in observations}
    rounds: list[RecordedRound] = []
    by_round: dict[int | None, RecordedRound] = {}
    for msg in messages:
        rnd = by_round.get(msg.meta.round)
        if msg.role == "user" and (rnd is None or not rnd.text):
            rnd = RecordedRound(msg.content, [], {})
            by_round[msg.meta.round] = rnd
            rounds.append(rnd)
        elif rnd is None:
            continue
        elif msg.role == "user":
            # a further input of the round (a trajectory's demonstration): sent with the first
            rnd.text = f"{rnd.text}\n\n{msg.content}"
        rnd.last_id = max(rnd.last_id, msg.id or 0)
        if msg.role == "assistant":
            rnd.assistants.append(msg)
        elif msg.role == "tool" and msg.meta.tool_use_id:
            found = by_use.get(msg.meta.tool_use_id)
            rnd.results[msg.meta.tool_use_id] = found if found is not None else msg
    return rounds


class RecordedProvider:
    """Answers each request with the next recorded assistant message of the round."""

    name = "replay"
    model = "replay"
    is_model = False

    def __init__(self, on_request: Callable[[ProviderRequest], int]) -> None:
        self.queue: deque[Message] = deque()
        self.on_request = on_request
        """Records the request and returns its local token count."""

    def complete(
        self,
        request: ProviderRequest,
        on_event: Callable[[StreamEvent], None],
        cancel: threading.Event | None = None,
    ) -> ProviderResponse:
        input_tokens = self.on_request(request)
        msg = self.queue.popleft() if self.queue else Message(role="assistant", content="(end)")
        content: list[dict[str, Any]] = []
        if msg.content.strip():
            content.append({"type": "text", "text": msg.content})
            on_event(StreamText(text=msg.content))
        for call in msg.tool_calls:
            content.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}
            )
        if not content:
            content.append({"type": "text", "text": "(no text)"})
        usage = Usage(input_tokens=input_tokens, output_tokens=count_blocks(content))
        stop = "tool_use" if msg.tool_calls else "end_turn"
        return ProviderResponse(
            content=content, stop_reason=stop, usage=usage, usage_source="local"
        )

    def ask_text(
        self,
        system: str,
        text: str,
        timeout: float,
        *,
        model: str | None = None,
        retries: int | None = None,
    ) -> str:
        raise NotImplementedError("a replay writes extractive summaries (is_model is False)")


class RecordedTools(ToolRegistry):
    """The default tools' definitions (L1 as recorded), answering with recorded results."""

    needs_workspace = False
    """Nothing runs: a replay answers every call with its recorded result, with or without a
    folder (a recording chooses none, issue 29)."""

    def __init__(self) -> None:
        tools = default_registry()
        super().__init__([t for t in (tools.get(n) for n in tools.names) if t is not None])
        self.queue: deque[Observation | Message] = deque()

    def run(self, name: str, raw_input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        recorded = self.queue.popleft() if self.queue else None
        if isinstance(recorded, Observation):
            result = ToolResult.model_validate(recorded.result)
            result.text = recorded.text
        elif isinstance(recorded, Message):
            failed = recorded.meta.is_error
            result = ToolResult(status="error" if failed else "success", text=recorded.content)
        else:
            result = ToolResult.fail("not_recorded", "no result was recorded for this call")
        if name == "TodoWrite" and result.status == "success":
            super().run(name, raw_input, ctx)  # the todo list only: the recap is part of L3
        return result
