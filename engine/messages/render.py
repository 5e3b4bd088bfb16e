"""History as readable text: the seed E1 ReAct form, for display and for summary calls."""

from __future__ import annotations

import json

from engine.messages.scratchpad import ScratchStep
from engine.messages.tokens import has_text
from engine.models import History, Message

PINNED_MARK = ", pinned"
"""Added to a pinned message's role label in displays: ``[user, pinned] …``."""


def _label(msg: Message, show_pins: bool) -> str:
    return f"[{msg.role}{PINNED_MARK if show_pins and msg.pinned else ''}]"


def _react_assistant(msg: Message, show_pins: bool = False) -> str:
    label = _label(msg, show_pins)
    if not msg.tool_calls:
        return f"{label} {msg.content.strip()}".rstrip()
    thought = msg.content.strip()
    lines: list[str] = []
    if thought:
        # The model often writes "Thought:" itself (the ReAct habit); do not double it.
        has_label = thought[:8].lower() == "thought:"
        lines.append(thought if has_label else f"Thought: {thought}")
    for call in msg.tool_calls:
        lines.append(f"Action: {call.name}[{json.dumps(call.input, ensure_ascii=False)}]")
    return f"{label} " + "\n".join(lines)


def render_messages(messages: list[Message], show_pins: bool = False) -> str:
    """History messages in the seed E1 text form (see :func:`render_react`); ``show_pins``
    marks pinned ones (``[tool, pinned] …``) for displays, never for a summary call."""
    parts: list[str] = []
    for msg in messages:
        if msg.role == "assistant":
            parts.append(_react_assistant(msg, show_pins))
        else:
            parts.append(f"{_label(msg, show_pins)} {msg.content}")
    return "\n\n".join(parts)


def render_react(history: History) -> str:
    """L3 as seed E1 text, for display: ``[summary]`` blocks first, then the messages.

    ``[user] …`` (``[user, pinned] …`` when pinned); an assistant step as
    ``[assistant] Thought: …`` with one ``Action: Tool[{json}]`` line per call;
    ``[tool] {compressed json}``. A final answer is ``[assistant] …`` as written: on this wire
    a round ends with an answer *without* a tool call, so E1's ``Action: Finish[...]`` would
    wrap the whole answer in brackets for nothing.
    """
    parts = [f"[summary] {s.content}" for s in history.summaries if has_text(s.content)]
    body = render_messages(history.messages, show_pins=True)
    if body:
        parts.append(body)
    return "\n\n".join(parts)


def render_scratchpad(steps: list[ScratchStep]) -> str:
    """The current round's steps with their full observations, for display."""
    parts: list[str] = []
    for step in steps:
        parts.append(_react_assistant(step.assistant))
        for result in step.results:
            label = "observation, error" if result.is_error else "observation"
            parts.append(f"[{label}: {result.tool_name}] {result.text}")
    return "\n\n".join(parts)
