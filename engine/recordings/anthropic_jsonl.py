"""JSON lines of Anthropic messages (what ``ctxscope export --format anthropic-jsonl`` writes).

Each line is one message: ``{"role": "user" | "assistant", "content": str | [blocks],
"usage": {...}?, "timestamp": "...?"}`` with text, thinking, tool_use and tool_result blocks. A
user message made only of tool_result blocks is a tool message (one per result), not a new
round. A line ``{"role": "user", "content": "...", "compact_summary": true}`` is the summary of
a compaction of everything before it (the export writes one per summary); a user line with
``"demonstration": true`` is a demonstration (see :mod:`engine.recordings.trajectories`); a user
line's ``"input"`` (``queued``, ``task-notification``, ``interrupt``…, with ``queued_line``) is
what the original importer knew of where it came from (:mod:`engine.messages.harness`).

Read tolerantly: a line that is not JSON (``not_json``), not a message (``not_a_message``), of
another role (``role:system``…), or whose content is neither text nor blocks
(``unexpected_shape``) is left out; so is a block the wire form cannot hold where it is
(``block:<type>``: an unknown type, a tool_use in a user message, a tool_result in an
assistant one, one without its ids) and a tool_result that answers no call of the message
before it (``result_without_call``). Each is counted and its lines named in a warning; the
file is refused only when no message is left. A file of Claude Managed Agents events
(``{"type": "agent.message", …}`` lines) is read as such (:mod:`engine.recordings.managed_agents`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from engine.messages.harness import INPUT_KEY
from engine.models import ToolCall, utcnow
from engine.recordings import managed_agents
from engine.recordings.base import (
    ImportError_,
    Item,
    Parsed,
    numbers_named,
    parse_time,
    result_text,
    usage_of,
)
from engine.validation import loads_line

FORMAT = "anthropic-jsonl"
MAX_NOTES = 5
"""Lines read with a value left out that the warnings name one by one."""
BLOCK_TYPES = ("text", "tool_use", "tool_result", "thinking", "redacted_thinking", "image")


class _LeftOut:
    """What a pass left out: counted by why, with the lines for the warnings."""

    def __init__(self) -> None:
        self.skipped: Counter[str] = Counter()
        self.lines: dict[str, list[int]] = {}
        self.notes: list[str] = []
        """Lines read with a value left out (a bad usage, a bad timestamp), one note each."""
        self.last_time = utcnow()

    def add(self, why: str, line: int) -> None:
        self.skipped[why] += 1
        self.lines.setdefault(why, []).append(line)

    def warnings(self) -> list[str]:
        left = [
            f"{numbers_named('line', lines)}: {why}; left out" for why, lines in self.lines.items()
        ]
        return (
            left
            + self.notes[:MAX_NOTES]
            + (
                [f"and {len(self.notes) - MAX_NOTES} more lines with a value left out"]
                if len(self.notes) > MAX_NOTES
                else []
            )
        )


def parse(raw: str, name: str) -> Parsed:
    left = _LeftOut()
    records: list[tuple[int, Any]] = []
    lines = raw.removeprefix("\ufeff").splitlines()
    count = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        count += 1
        try:
            records.append((number, loads_line(text)))
        except ValueError:
            last = number == len(lines) and not raw.endswith(("\n", "\r"))
            left.add("cut_last_line" if last and number > 1 else "not_json", number)
    events = sum(1 for _, obj in records if managed_agents.is_event(obj))
    if events * 2 > len(records):
        parsed = managed_agents.parse_events(records, count, name, left.skipped)
        parsed.warnings[:0] = left.warnings()
        return parsed
    items: list[Item] = []
    finished = False
    awaiting: set[str] = set()
    for number, obj in records:
        try:
            line_items, finished = _parse_line(number, obj, left)
        except ValueError as exc:
            left.add(str(exc), number)
            continue
        for item in line_items:
            if item.kind == "assistant":
                awaiting = {c.id for c in item.calls}
            elif item.kind == "user" or item.kind == "summary":
                awaiting = set()
            elif item.tool_use_id not in awaiting:
                left.add("result_without_call", number)
                continue
            else:
                awaiting.discard(item.tool_use_id)
            items.append(item)
    if not items:
        problems = [f"{name} holds no messages"] + left.warnings()
        raise ImportError_(problems, FORMAT)
    title = next((i.text for i in items if i.kind == "user"), name)
    return Parsed(
        fmt=FORMAT,
        items=items,
        title=title.strip(),
        records=count,
        skipped=left.skipped,
        warnings=left.warnings(),
        finished=finished or None,
    )


def _parse_line(number: int, obj: Any, left: _LeftOut) -> tuple[list[Item], bool]:
    """The line's items, and whether it says the session ended normally (``finished``);
    ValueError names why a line is left out whole."""
    if not isinstance(obj, dict):
        raise ValueError("not_a_message")
    role = obj.get("role")
    if role not in ("user", "assistant"):
        raise ValueError(f"role:{role}" if isinstance(role, str) else "not_a_message")
    content = obj.get("content")
    if isinstance(content, str):
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}]
    elif isinstance(content, list) and all(isinstance(b, dict) for b in content):
        blocks = _wire_blocks(content, role, number, left)
    else:
        raise ValueError("unexpected_shape")
    bad: list[str] = []
    created = parse_time(obj.get("timestamp"), number, bad) or left.last_time
    left.last_time = created
    try:
        usage = usage_of(obj.get("usage"))
    except ValueError as exc:  # one readable line naming the field
        usage = None
        bad.append(f"line {number}: {exc}; the usage left out")
    left.notes += [f"{b}; the previous line's time used" if "timestamp" in b else b for b in bad]
    if obj.get("compact_summary"):
        return [Item("summary", number, created, text=_texts(blocks))], False
    recorded = obj.get("recorded")
    items = items_of(
        role, blocks, number, created, usage, recorded if isinstance(recorded, dict) else None
    )
    if obj.get("demonstration") and role == "user":
        for item in items:
            item.demonstration = item.kind == "user"
    if isinstance(obj.get(INPUT_KEY), str) and role == "user":
        origin = {INPUT_KEY: obj[INPUT_KEY]}
        if isinstance(obj.get("queued_line"), int):
            origin["queued_line"] = obj["queued_line"]
        for item in items:
            item.origin = origin if item.kind == "user" else None
    if isinstance(obj.get("recorded_session"), dict) and role == "user":
        # What an exported recording said of itself (``ctxscope export``): kept as it was.
        for item in items:
            if item.kind == "user":
                item.origin = {**(item.origin or {}), "recorded": obj["recorded_session"]}
    return items, obj.get("finished") is True


def _wire_blocks(
    blocks: list[dict[str, Any]], role: str, number: int, left: _LeftOut
) -> list[dict[str, Any]]:
    """The blocks the wire form can hold in a ``role`` message; the others counted."""
    out = []
    for block in blocks:
        try:
            check_blocks([block], role)
        except ValueError:
            left.add(f"block:{block.get('type')}", number)
            continue
        out.append(block)
    return out


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
