"""JSON lines of Anthropic messages (what ``ctxscope export --format anthropic-jsonl`` writes).

Each line is one message: ``{"role": "user" | "assistant", "content": str | [blocks],
"usage": {...}?, "timestamp": "...?"}`` with text, thinking, tool_use and tool_result blocks. A
user message made only of tool_result blocks is a tool message (one per result), not a new
round. A line ``{"role": "user", "content": "...", "compact_summary": true}`` is the summary of
a compaction of everything before it (the export writes one per summary); a user line with
``"demonstration": true`` is a demonstration (see :mod:`engine.recordings.trajectories`).
"""

from __future__ import annotations

from typing import Any

from engine.models import ToolCall, utcnow
from engine.recordings.base import (
    ImportError_,
    Item,
    Parsed,
    parse_time,
    result_text,
    usage_of,
)
from engine.validation import loads_line

FORMAT = "anthropic-jsonl"
BLOCK_TYPES = ("text", "tool_use", "tool_result", "thinking", "redacted_thinking", "image")


def parse(raw: str, name: str) -> Parsed:
    items: list[Item] = []
    problems: list[str] = []
    records = 0
    finished = False
    for number, text in enumerate(raw.splitlines(), start=1):
        if not text.strip():
            continue
        records += 1
        try:
            line_items, finished = _parse_line(number, text, problems)
            items.extend(line_items)
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
    if not items and not problems:
        problems.append(f"{name} holds no messages")
    if problems:
        raise ImportError_(problems, FORMAT)
    title = next((i.text for i in items if i.kind == "user"), name)
    return Parsed(
        fmt=FORMAT, items=items, title=title.strip(), records=records, finished=finished or None
    )


def _parse_line(number: int, text: str, problems: list[str]) -> tuple[list[Item], bool]:
    """The line's items, and whether it says the session ended normally (``finished``)."""
    obj = loads_line(text)  # a damaged line or one nested too deeply: one readable line
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object with role and content")
    role = obj.get("role")
    if role not in ("user", "assistant"):
        raise ValueError(f"role must be 'user' or 'assistant', got {role!r}")
    content = obj.get("content")
    if isinstance(content, str):
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}]
    elif isinstance(content, list) and all(isinstance(b, dict) for b in content):
        blocks = content
    else:
        raise ValueError("content must be a string or a list of content blocks")
    check_blocks(blocks, role)
    created = parse_time(obj.get("timestamp"), number, problems) or utcnow()
    usage = usage_of(obj.get("usage"))
    if obj.get("compact_summary"):
        return [Item("summary", number, created, text=_texts(blocks))], False
    recorded = obj.get("recorded")
    items = items_of(
        role, blocks, number, created, usage, recorded if isinstance(recorded, dict) else None
    )
    if obj.get("demonstration") and role == "user":
        for item in items:
            item.demonstration = item.kind == "user"
    return items, obj.get("finished") is True


def check_blocks(blocks: list[dict[str, Any]], role: str) -> None:
    """Raise ValueError on the first block the wire form cannot hold."""
    for i, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "text" and not isinstance(block.get("text"), str):
            raise ValueError(f"block {i}: text block without a text string")
        if kind == "tool_use":
            if role != "assistant":
                raise ValueError(f"block {i}: tool_use blocks belong to assistant messages")
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise ValueError(f"block {i}: tool_use needs a string id and name")
            if not isinstance(block.get("input", {}), dict):
                raise ValueError(f"block {i}: tool_use input must be an object")
        if kind == "tool_result":
            if role != "user":
                raise ValueError(f"block {i}: tool_result blocks belong to user messages")
            if not isinstance(block.get("tool_use_id"), str):
                raise ValueError(f"block {i}: tool_result needs a tool_use_id")
        if kind not in BLOCK_TYPES:
            raise ValueError(f"block {i}: unknown block type {kind!r}")


def _texts(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(b["text"] for b in blocks if b.get("type") == "text" and b["text"])


def items_of(
    role: str,
    blocks: list[dict[str, Any]],
    number: int,
    created: Any,
    usage: Any,
    recorded: dict[str, Any] | None = None,
) -> list[Item]:
    """``recorded`` maps a tool_use id to the structured result recorded beside its text."""
    """The items of one message's blocks: results first, then the user's text; or one step."""
    if role == "user":
        out = [
            Item(
                "result",
                number,
                created,
                text=result_text(b.get("content")),
                tool_use_id=b["tool_use_id"],
                is_error=bool(b.get("is_error")),
                recorded=(recorded or {}).get(b["tool_use_id"]),
            )
            for b in blocks
            if b.get("type") == "tool_result"
        ]
        text = _texts(blocks)
        if text or not out:
            out.append(Item("user", number, created, text=text))
        return out
    calls = [
        ToolCall(id=b["id"], name=b["name"], input=b.get("input") or {})
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    thinking = [b for b in blocks if b.get("type") in ("thinking", "redacted_thinking")]
    return [
        Item(
            "assistant",
            number,
            created,
            text=_texts(blocks),
            calls=calls,
            thinking=thinking,
            usage=usage,
        )
    ]
