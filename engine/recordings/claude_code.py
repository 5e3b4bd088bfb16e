"""Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``).

Each line is a record ``{type, uuid, parentUuid, isSidechain, sessionId, timestamp, message,
toolUseResult?, isCompactSummary?, subtype?, compactMetadata?}``. Decisions:

- The file is a tree: a resumed session replays earlier records under new uuids. The active
  conversation is the chain from the last conversation record back to its root (across a
  ``compact_boundary`` through ``logicalParentUuid``), plus the tool_result records that answer
  a tool_use on that chain (Claude Code hangs parallel results off their own tool_use record).
  Records off the chain are counted as ``off_chain``.
- Records of one API response share ``message.id`` (one record per content block): they are
  merged into one assistant step; its usage is the last record's. ``<synthetic>`` messages
  (all-zero usage) get no usage record.
- ``isSidechain`` records are subagent transcripts: skipped and counted (``sidechain``). The
  parent keeps the Task tool call and its result, which is what the parent model saw.
- ``thinking`` blocks are kept in ``meta.origin["thinking"]``, never sent back (unsigned
  thinking is refused by the API, and it does not resend earlier turns' thinking anyway).
- ``compact_boundary`` + the ``isCompactSummary`` user record become a compaction whose
  summary is the recorded one.
- ``progress``, ``file-history-snapshot``, ``queue-operation``, ``summary`` (title) records and
  other ``system`` records (api_error retries...) are counted by kind and otherwise ignored.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from engine.models import utcnow
from engine.recordings.anthropic_jsonl import check_blocks, items_of
from engine.recordings.base import ImportError_, Item, Parsed, parse_time, usage_of

FORMAT = "claude-code"
RECORD_TYPES = {
    "user",
    "assistant",
    "system",
    "summary",
    "progress",
    "file-history-snapshot",
    "queue-operation",
}
_MARKUP = re.compile(
    r"<(ide_opened_file|ide_selection|command-message|command-name|command-args|"
    r"local-command-stdout|system-reminder)>.*?</\1>",
    re.S,
)


def looks_like(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and obj.get("type") in RECORD_TYPES
        and ("sessionId" in obj or "uuid" in obj or "leafUuid" in obj or "messageId" in obj)
    )


def strip_markup(text: str) -> str:
    """``text`` without IDE / slash-command / reminder markup (for titles)."""
    return " ".join(_MARKUP.sub(" ", text).split())


def _is_conversation(rec: dict[str, Any]) -> bool:
    kind = rec.get("type")
    if kind in ("user", "assistant"):
        return isinstance(rec.get("message"), dict)
    return kind == "system" and rec.get("subtype") == "compact_boundary"


def parse(raw: str, name: str) -> Parsed:
    problems: list[str] = []
    records: list[tuple[int, dict[str, Any]]] = []
    skipped: Counter[str] = Counter()
    n_records = 0
    for number, text in enumerate(raw.splitlines(), start=1):
        if not text.strip():
            continue
        n_records += 1
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(obj, dict) or obj.get("type") not in RECORD_TYPES:
            kind = obj.get("type") if isinstance(obj, dict) else type(obj).__name__
            problems.append(f"line {number}: not a Claude Code record (type {kind!r})")
            continue
        if not _is_conversation(obj):
            sub = obj.get("subtype")
            skipped[f"{obj['type']}:{sub}" if sub else str(obj["type"])] += 1
            continue
        if obj.get("isSidechain"):
            skipped["sidechain"] += 1
            continue
        if not isinstance(obj.get("uuid"), str):
            problems.append(f"line {number}: conversation record without a uuid")
            continue
        records.append((number, obj))
    if not records and not problems:
        problems.append(f"{name} holds no conversation records")
    if problems:
        raise ImportError_(problems, FORMAT)

    active = _active(records)
    skipped["off_chain"] += len(records) - len(active)
    if not skipped["off_chain"]:
        del skipped["off_chain"]
    items = _items(active, problems)
    if problems:
        raise ImportError_(problems, FORMAT)
    title = next((strip_markup(i.text) for i in items if i.kind == "user" and i.text), "")
    return Parsed(fmt=FORMAT, items=items, title=title or name, records=n_records, skipped=skipped)


def _active(records: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """The records of the active chain, plus results answering its tool calls, in file order."""
    by_uuid = {rec["uuid"]: (number, rec) for number, rec in records}
    chain: set[str] = set()
    uuid: str | None = records[-1][1]["uuid"]
    while uuid is not None and uuid in by_uuid and uuid not in chain:
        chain.add(uuid)
        rec = by_uuid[uuid][1]
        uuid = rec.get("parentUuid") or rec.get("logicalParentUuid")
    use_ids: set[str] = set()
    for _number, rec in records:
        if rec["uuid"] in chain and rec["type"] == "assistant":
            content = rec["message"].get("content")
            if isinstance(content, list):
                use_ids.update(
                    str(b.get("id"))
                    for b in content
                    if isinstance(b, dict) and b.get("type") == "tool_use"
                )
    answered: set[str] = set()
    out = []
    for number, rec in records:
        ids = _result_ids(rec)
        if rec["uuid"] in chain:
            answered.update(ids)
            out.append((number, rec))
        elif ids and all(i in use_ids and i not in answered for i in ids):
            answered.update(ids)
            out.append((number, rec))
    return out


def _result_ids(rec: dict[str, Any]) -> list[str]:
    content = rec.get("message", {}).get("content") if rec.get("type") == "user" else None
    if not isinstance(content, list):
        return []
    return [
        str(b.get("tool_use_id"))
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def _items(records: list[tuple[int, dict[str, Any]]], problems: list[str]) -> list[Item]:
    items: list[Item] = []
    boundary: dict[str, Any] | None = None
    merging: str | None = None  # message.id of the assistant step being merged
    for number, rec in records:
        created = parse_time(rec.get("timestamp"), number, problems) or utcnow()
        if rec["type"] == "system":
            boundary = rec.get("compactMetadata") or {}
            merging = None
            continue
        msg = rec["message"]
        content = msg.get("content")
        if isinstance(content, str):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": content}]
        elif isinstance(content, list) and all(isinstance(b, dict) for b in content):
            blocks = content
        else:
            problems.append(f"line {number}: content must be a string or a list of blocks")
            continue
        role = rec["type"]
        try:
            check_blocks(blocks, role)
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
            continue
        if role == "user" and rec.get("isCompactSummary"):
            meta = boundary or {}
            items.append(
                Item(
                    "summary",
                    number,
                    created,
                    text="\n".join(b.get("text", "") for b in blocks if b.get("type") == "text"),
                    trigger=str(meta.get("trigger", "auto")),
                    pre_tokens=meta.get("preTokens"),
                )
            )
            boundary, merging = None, None
            continue
        if role == "user":
            recorded = rec.get("toolUseResult")
            by_id = {i: recorded for i in _result_ids(rec)} if isinstance(recorded, dict) else None
            items.extend(items_of(role, blocks, number, created, None, by_id))
            merging = None
            continue
        try:
            usage = None if msg.get("model") == "<synthetic>" else usage_of(msg.get("usage"))
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
            continue
        step = items_of(role, blocks, number, created, usage)[0]
        mid = msg.get("id")
        if merging is not None and mid == merging and items and items[-1].kind == "assistant":
            last = items[-1]
            last.text = "\n".join(t for t in (last.text, step.text) if t)
            last.calls.extend(step.calls)
            last.thinking.extend(step.thinking)
            last.usage = step.usage or last.usage
            continue
        merging = mid if isinstance(mid, str) else None
        items.append(step)
    return items
