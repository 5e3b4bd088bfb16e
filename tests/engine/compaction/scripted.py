"""A provider that plays back scripted answers, for the seed tests of this folder."""

from __future__ import annotations

from typing import Any

from engine.compaction.summary import extractive_summary
from engine.context.builder import validate_request
from engine.llm.base import ProviderRequest, ProviderResponse, StreamText
from engine.models import Usage


def tool_use(id_: str, name: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": inp}


def answer(text: str, *blocks: dict[str, Any]) -> ProviderResponse:
    content = ([{"type": "text", "text": text}] if text else []) + list(blocks)
    return ProviderResponse(
        content=content,
        stop_reason="tool_use" if blocks else "end_turn",
        usage=Usage(input_tokens=100, output_tokens=10),
    )


class Scripted:
    """Plays back answers; refuses (as the Messages API would) any invalid request."""

    is_model = True
    name = "scripted"
    model = "scripted"

    def __init__(self, script: list[ProviderResponse]) -> None:
        self.script = list(script)
        self.requests: list[ProviderRequest] = []

    def complete(self, request, on_event, cancel=None):  # type: ignore[no-untyped-def]
        assert validate_request(request) == []
        self.requests.append(request.model_copy(deep=True))
        item = self.script.pop(0)
        on_event(StreamText(text=item.text))
        return item

    def summarize(self, messages, prompt, focus, timeout):  # type: ignore[no-untyped-def]
        return extractive_summary(messages, focus)
