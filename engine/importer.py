"""``ctxscope import``: store a session recorded elsewhere as JSON lines of Anthropic messages.

Each line is one message: ``{"role": "user" | "assistant", "content": str | [blocks],
"usage": {...}?}`` with text, tool_use and tool_result blocks. A user message made only of
tool_result blocks is a tool message (one per result), not a new round. A tool_use that never
got a result is paired with a synthetic error result so the stored conversation stays valid for
the API; how many is reported. Malformed lines are reported by line number and nothing is stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.history import MISSING_RESULT
from engine.models import (
    Message,
    MessageMeta,
    RoundStatus,
    Session,
    ToolCall,
    Usage,
    UsageRecord,
    utcnow,
)
from engine.store import Store
from engine.tokens import ensure_counted


class ImportError_(ValueError):
    """The file cannot be imported; ``problems`` lists each bad line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass
class ImportReport:
    session: Session
    rounds: int = 0
    messages: int = 0
    missing_results: int = 0
    usage_records: int = 0
    problems: list[str] = field(default_factory=list)


@dataclass
class _Line:
    number: int
    role: str
    blocks: list[dict[str, Any]]
    usage: Usage | None
    created_at: datetime


def _parse(path: Path) -> list[_Line]:
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportError_([f"cannot read {path}: {exc}"]) from None
    lines: list[_Line] = []
    problems: list[str] = []
    for number, text in enumerate(raw.splitlines(), start=1):
        if not text.strip():
            continue
        try:
            lines.append(_parse_line(number, text))
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
    if not lines and not problems:
        problems.append(f"{path} holds no messages")
    if lines and not problems and not _has_text(lines[0]):
        problems.append(f"line {lines[0].number}: the conversation must start with a user input")
    if problems:
        raise ImportError_(problems)
    return lines


def _parse_line(number: int, text: str) -> _Line:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
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
        if kind not in ("text", "tool_use", "tool_result", "thinking", "image"):
            raise ValueError(f"block {i}: unknown block type {kind!r}")
    usage = None
    if obj.get("usage") is not None:
        try:
            usage = Usage.model_validate(
                {k: v or 0 for k, v in obj["usage"].items() if k in Usage.model_fields}
            )
        except (ValidationError, AttributeError) as exc:
            raise ValueError(f"bad usage object: {exc}") from None
    created = utcnow()
    if isinstance(obj.get("timestamp"), str):
        try:
            created = datetime.fromisoformat(obj["timestamp"].replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"bad timestamp {obj['timestamp']!r}") from None
    return _Line(number, role, blocks, usage, created)


def _has_text(line: _Line) -> bool:
    return line.role == "user" and any(b.get("type") == "text" for b in line.blocks)


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return str(content)


def _tool_content(text: str, is_error: bool, limit: int) -> str:
    """History form of an imported result: status plus the output, cut at ``limit`` chars."""
    body: dict[str, Any] = {"status": "error" if is_error else "success"}
    if is_error:
        body["error"] = {"code": "tool_error", "message": text}
    else:
        body["data"] = {"output": text[:limit]}
        if len(text) > limit:
            body["data"]["truncated"] = True
            body["data"]["dropped_chars"] = len(text) - limit
    return json.dumps(body, ensure_ascii=False)


def import_session(store: Store, path: Path, workspace: str, limit: int) -> ImportReport:
    """Parse ``path`` fully, then store it as a new session in one transaction."""
    lines = _parse(path)
    title = next((b["text"] for b in lines[0].blocks if b.get("type") == "text"), path.stem).strip()
    with store.db.atomic():
        session = store.create_session(
            workspace=workspace, title=f"import: {title[:60]}", provider="import"
        )
        assert session.id is not None
        report = ImportReport(session=session)
        sid = session.id
        index = 0
        step = 0
        pending: dict[str, str] = {}  # tool_use id -> tool name, awaiting a result

        def append(msg: Message) -> None:
            ensure_counted(msg)
            store.append_message(sid, index, msg)
            report.messages += 1

        def pair_missing() -> None:
            for use_id, name in pending.items():
                append(
                    Message(
                        role="tool",
                        content=_tool_content(MISSING_RESULT, True, limit),
                        meta=MessageMeta(
                            step=step,
                            tool_name=name,
                            tool_use_id=use_id,
                            is_error=True,
                            interrupted=True,
                        ),
                    )
                )
                report.missing_results += 1
            pending.clear()

        last_final = False
        for line in lines:
            results = [b for b in line.blocks if b.get("type") == "tool_result"]
            texts = [b["text"] for b in line.blocks if b.get("type") == "text" and b["text"]]
            if line.role == "user" and results:
                for block in results:
                    use_id = block["tool_use_id"]
                    if use_id not in pending:
                        raise ImportError_(
                            [
                                f"line {line.number}: tool_result for {use_id!r}, which no "
                                "preceding assistant tool_use awaits"
                            ]
                        )
                    name = pending.pop(use_id)
                    append(
                        Message(
                            role="tool",
                            content=_tool_content(
                                _result_text(block), bool(block.get("is_error")), limit
                            ),
                            meta=MessageMeta(
                                step=step,
                                tool_name=name,
                                tool_use_id=use_id,
                                is_error=bool(block.get("is_error")),
                            ),
                            created_at=line.created_at,
                        )
                    )
                if not texts:
                    continue
            if line.role == "user":
                pair_missing()
                if index:
                    status = RoundStatus.FINISHED if last_final else RoundStatus.INTERRUPTED
                    store.finish_round(sid, index, status)
                msg = Message(role="user", content="\n".join(texts), created_at=line.created_at)
                ensure_counted(msg)
                rnd, _ = store.open_round(sid, msg)
                index, step, last_final = rnd.index, 0, False
                report.rounds += 1
                report.messages += 1
                continue
            # assistant
            pair_missing()
            step += 1
            calls = [
                ToolCall(id=b["id"], name=b["name"], input=b.get("input") or {})
                for b in line.blocks
                if b.get("type") == "tool_use"
            ]
            text = "\n".join(texts)
            last_final = not calls
            append(
                Message(
                    role="assistant",
                    content=text,
                    tool_calls=calls,
                    meta=MessageMeta(step=step, final=last_final),
                    created_at=line.created_at,
                )
            )
            pending.update({c.id: c.name for c in calls})
            if line.usage is not None:
                store.add_usage(
                    UsageRecord(
                        session_id=sid,
                        round_index=index,
                        step=step,
                        usage=line.usage,
                        source="import",
                        created_at=line.created_at,
                    )
                )
                report.usage_records += 1
        pair_missing()
        store.finish_round(
            sid, index, RoundStatus.FINISHED if last_final else RoundStatus.INTERRUPTED
        )
    return report
