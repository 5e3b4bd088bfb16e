"""Claude Managed Agents session event streams, one event a line (what a client that keeps the
``/v1/sessions/{id}/events`` stream or list writes).

Each event is ``{id, type, processed_at, …}`` with ``type`` as ``{domain}.{action}``
(platform.claude.com/docs/en/managed-agents/reference, "Event types"; the fields as the
API reference and the SDKs give them). Decisions:

- ``user.message`` opens a round (its text blocks; an image or document as ``[image]`` /
  ``[document]``).
- ``agent.message``, ``agent.thinking`` and the tool uses (``agent.tool_use``,
  ``agent.mcp_tool_use``, ``agent.custom_tool_use``: ``name``, ``input``, the event's ``id`` the
  call's) in a row are one step; ``span.model_request_start`` begins a new one (one model
  request). ``span.model_request_end``'s ``model_usage`` is that step's usage.
- The results: ``agent.tool_result`` / ``user.tool_result`` (``tool_use_id``),
  ``agent.mcp_tool_result`` (``mcp_tool_use_id``), ``user.custom_tool_result``
  (``custom_tool_use_id``), with their ``content`` and ``is_error``. A result that answers no
  call of the step before it is left out and counted (``result_without_call``).
- ``agent.thread_context_compacted`` is counted, with a warning: the stream does not hold the
  summary. Session and span events, interrupts, confirmations, ``system.message`` and event
  types this version does not know are counted by type; an event whose ``id`` came before
  (a cross-posted or repeated event) is counted (``repeated_event``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from engine.models import ToolCall, utcnow
from engine.recordings.base import ImportError_, Item, Parsed, parse_time, title_of, usage_of

FORMAT = "claude-managed-agents"
EVENT_TYPE = re.compile(r"^(?:user|agent|session|span|system)\.[a-z_]+$")
_CALLS = ("agent.tool_use", "agent.mcp_tool_use", "agent.custom_tool_use")
_RESULTS = {
    "agent.tool_result": "tool_use_id",
    "user.tool_result": "tool_use_id",
    "agent.mcp_tool_result": "mcp_tool_use_id",
    "user.custom_tool_result": "custom_tool_use_id",
}
Record = tuple[int, dict[str, Any]]


def is_event(obj: Any) -> bool:
    """A Managed Agents event: a ``type`` such as ``agent.message`` and no message ``role``."""
    return (
        isinstance(obj, dict)
        and "role" not in obj
        and isinstance(obj.get("type"), str)
        and bool(EVENT_TYPE.match(obj["type"]))
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind in ("image", "document"):
            parts.append(f"[{kind}]")
    return "\n".join(parts)


class _Reader:
    def __init__(self) -> None:
        self.items: list[Item] = []
        self.skipped: Counter[str] = Counter()
        self.warnings: list[str] = []
        self.step: Item | None = None
        self.last_step: Item | None = None
        self.awaiting: set[str] = set()
        self.seen: set[str] = set()
        self.last_time = utcnow()

    def event(self, number: int, obj: dict[str, Any]) -> None:
        kind = str(obj["type"])
        event_id = obj.get("id")
        if isinstance(event_id, str):
            if event_id in self.seen:
                self.skipped["repeated_event"] += 1
                return
            self.seen.add(event_id)
        bad: list[str] = []
        created = parse_time(obj.get("processed_at"), number, bad) or self.last_time
        self.last_time = created
        if kind == "user.message":
            self.step = None
            self.awaiting.clear()
            self.items.append(Item("user", number, created, text=_text(obj.get("content"))))
        elif kind == "agent.message":
            step = self.assistant(number, created)
            step.text = "\n".join(t for t in (step.text, _text(obj.get("content"))) if t)
        elif kind == "agent.thinking":
            thinking = obj.get("thinking") or _text(obj.get("content"))
            step = self.assistant(number, created)
            if isinstance(thinking, str) and thinking:
                step.thinking.append({"type": "thinking", "thinking": thinking})
        elif kind in _CALLS:
            name, args = obj.get("name"), obj.get("input")
            if not isinstance(event_id, str) or not isinstance(name, str):
                self.skipped[f"unexpected_shape:{kind}"] += 1
                return
            call = ToolCall(id=event_id, name=name, input=args if isinstance(args, dict) else {})
            self.assistant(number, created).calls.append(call)
            self.awaiting.add(event_id)
        elif kind in _RESULTS:
            call_id = obj.get(_RESULTS[kind])
            if not isinstance(call_id, str) or call_id not in self.awaiting:
                self.skipped["result_without_call"] += 1
                return
            self.awaiting.discard(call_id)
            self.step = None
            self.items.append(
                Item(
                    "result",
                    number,
                    created,
                    text=_text(obj.get("content")),
                    tool_use_id=call_id,
                    is_error=obj.get("is_error") is True,
                )
            )
        elif kind == "span.model_request_start":
            self.step = None
            self.skipped[kind] += 1
        elif kind == "span.model_request_end":
            usage = usage_of(obj.get("model_usage"))
            last = self.last_step
            if usage is not None and last is not None and last.usage is None:
                last.usage = usage
            self.skipped[kind] += 1
        elif kind == "agent.thread_context_compacted":
            self.skipped[kind] += 1
            self.warnings.append(
                f"line {number}: the agent compacted its context here; the event stream does "
                "not hold the summary"
            )
        else:
            self.skipped[kind] += 1

    def assistant(self, number: int, created: Any) -> Item:
        if self.step is None:
            self.awaiting.clear()  # the writer pairs results with the latest step only
            self.step = Item("assistant", number, created)
            self.items.append(self.step)
            self.last_step = self.step
        return self.step


def parse_events(records: list[Record], lines: int, name: str, skipped: Counter[str]) -> Parsed:
    """A session from a stream's events (``(line number, object)``); other lines are counted
    in ``skipped`` already."""
    reader = _Reader()
    reader.skipped.update(skipped)
    for number, obj in records:
        if not is_event(obj):
            reader.skipped["not_an_event"] += 1
            continue
        try:
            reader.event(number, obj)
        except (TypeError, ValueError, AttributeError, KeyError):
            reader.skipped[f"unexpected_shape:{obj['type']}"] += 1
    if not any(i.kind == "user" for i in reader.items):
        raise ImportError_(
            [f"{name} is a Claude Managed Agents event stream without a user.message"], FORMAT
        )
    return Parsed(
        fmt=FORMAT,
        items=reader.items,
        title=title_of(reader.items, name),
        records=lines,
        skipped=reader.skipped,
        warnings=reader.warnings,
    )
