"""Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``).

Each line is a record ``{type, uuid, parentUuid, isSidechain, sessionId, cwd, timestamp,
message?, toolUseResult?, isCompactSummary?, subtype?, compactMetadata?, agentId?}``.
Decisions (checked against the real files in ``tests/data/corpus``):

- The file is a tree of records linked by ``uuid`` / ``parentUuid``, and that tree runs
  through *every* record type (``progress`` hooks, ``system`` turn durations, api_error
  retries), so every record with a uuid is indexed. The active conversation is the chain from
  the last user / assistant record back to its root; a ``compact_boundary`` (``parentUuid:
  null``) goes on through ``logicalParentUuid``.
- Claude Code ≥ 2.1 writes one record per content block and hangs parallel tool calls off
  each other: a sibling record of a response on the chain (same ``message.id``) and the
  tool_result records answering the chain's tool calls belong to the conversation too.
  A resumed session replays earlier records under new uuids: a block already seen in a
  response is not added twice, and a result is only taken after the call it answers.
- Records of one API response are merged into one assistant step, even when a tool_result
  was written between them (2.1.39 does that); its usage is the response's last record's
  (the streamed partial records under-count the output). ``<synthetic>`` messages get none.
- ``isSidechain`` records are subagent transcripts: in a main file they become their own
  :class:`Parsed` (``children``), grouped by ``agentId``; a file made only of them (the
  ``<session>/subagents/agent-*.jsonl`` layout) is parsed as the subagent itself.
- ``thinking`` blocks are kept in ``meta.origin["thinking"]``, never sent back.
- ``compact_boundary`` + the ``isCompactSummary`` user record become a compaction made by the
  original agent: its trigger, ``preTokens`` and the boundary's time, the summary its text.
- User inputs typed while the agent worked are written as ``queue-operation`` records; the ones
  never written as user records are not in the recorded conversation (the model saw them in a
  reminder the file does not hold): counted as ``queued_input`` and named in a warning.
- ``progress``, ``file-history-snapshot``, ``summary`` (title) and other ``system`` records are
  counted by kind; conversation records on other branches as ``off_chain:<type>``, replayed
  copies as ``replayed_copy``. A last line cut mid-way (a file still being written) is left
  out with a warning naming it.
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

Record = tuple[int, dict[str, Any]]
"""A record and its line number."""


def looks_like(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and obj.get("type") in RECORD_TYPES
        and ("sessionId" in obj or "uuid" in obj or "leafUuid" in obj or "messageId" in obj)
    )


def strip_markup(text: str) -> str:
    """``text`` without IDE / slash-command / reminder markup (for titles)."""
    return " ".join(_MARKUP.sub(" ", text).split())


def _is_message(rec: dict[str, Any]) -> bool:
    return rec.get("type") in ("user", "assistant") and isinstance(rec.get("message"), dict)


def _is_conversation(rec: dict[str, Any]) -> bool:
    """A message, or the boundary of a compaction: what becomes items."""
    return _is_message(rec) or (
        rec.get("type") == "system" and rec.get("subtype") == "compact_boundary"
    )


def _kind(rec: dict[str, Any]) -> str:
    sub = rec.get("subtype")
    return f"{rec['type']}:{sub}" if sub else str(rec["type"])


def read_records(raw: str) -> tuple[list[Record], int, list[str], list[str], Counter[str]]:
    """Every JSON record of ``raw`` by line: ``(records, lines read, problems, warnings,
    skipped)``. A last line that does not parse is a file still being written: a warning."""
    lines = raw.splitlines()
    # The line an agent is still writing has no line end yet.
    cut = len(lines) if raw and not raw.endswith(("\n", "\r")) else 0
    records: list[Record] = []
    problems: list[str] = []
    warnings: list[str] = []
    skipped: Counter[str] = Counter()
    n_lines = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        n_lines += 1
        try:
            obj = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            if number == cut and number > 1:
                warnings.append(
                    f"line {number}: cut mid-way (a file still being written?); left out"
                )
                skipped["partial_line"] += 1
                continue
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            problems.append(f"line {number}: not JSON ({msg})")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            kind = obj.get("type") if isinstance(obj, dict) else type(obj).__name__
            problems.append(f"line {number}: not a Claude Code record (type {kind!r})")
            continue
        records.append((number, obj))
    return records, n_lines, problems, warnings, skipped


def parse(raw: str, name: str) -> Parsed:
    records, n_lines, problems, warnings, skipped = read_records(raw)
    if problems:
        raise ImportError_(problems, FORMAT)
    return parse_read(records, n_lines, name, skipped, warnings)


def parse_read(
    records: list[Record], n_lines: int, name: str, skipped: Counter[str], warnings: list[str]
) -> Parsed:
    """A session (and its sidechains) from the records :func:`read_records` read: the one
    parser of a whole file and of a file being followed (:mod:`engine.recordings.follow`)."""
    side = [(n, r) for n, r in records if r.get("isSidechain") is True]
    if side and len(side) == sum(1 for _, r in records if "uuid" in r):
        # A subagent's own file: every record is on its sidechain.
        parsed = parse_records(records, name, skipped, warnings)
    else:
        main = [(n, r) for n, r in records if r.get("isSidechain") is not True]
        parsed = parse_records(main, name, skipped, warnings)
        groups: dict[str, list[Record]] = {}
        for n, r in side:
            groups.setdefault(str(r.get("agentId") or "sidechain"), []).append((n, r))
        for agent, group in groups.items():
            try:
                child = parse_records(group, f"{name} ({agent})", Counter(), [])
            except ImportError_ as exc:
                parsed.warnings.append(f"subagent {agent}: not imported: {exc}")
                parsed.skipped["sidechain"] += len(group)
                continue
            child.agent_id = None if agent == "sidechain" else agent
            parsed.children.append(child)
    parsed.records = n_lines
    return parsed


def parse_records(
    records: list[Record], name: str, skipped: Counter[str], warnings: list[str]
) -> Parsed:
    """One conversation (a session, or one subagent) from its records."""
    problems: list[str] = []
    for number, rec in records:
        if rec.get("uuid") is None and rec["type"] not in RECORD_TYPES:
            problems.append(f"line {number}: not a Claude Code record (type {rec['type']!r})")
        elif _is_message(rec) and not isinstance(rec.get("uuid"), str):
            problems.append(f"line {number}: conversation record without a uuid")
    if not problems and not any(_is_message(r) for _, r in records):
        problems.append(f"{name} holds no conversation records")
    if problems:
        raise ImportError_(problems, FORMAT)

    chain = _chain(records, warnings)
    kept, replayed = _complete(records, chain)
    if replayed:
        skipped["replayed_copy"] += len(replayed)
    kept = {id(r) for _, r in records if id(r) in kept and _is_conversation(r)}
    for _number, rec in records:
        if id(rec) in kept or id(rec) in replayed:
            continue
        if _is_message(rec):
            skipped[f"off_chain:{rec['type']}"] += 1
        else:
            skipped[_kind(rec)] += 1
    _count_queued(records, kept, skipped, warnings)

    ordered = [(n, r) for n, r in records if id(r) in kept]
    items = _items(ordered, problems)
    if problems:
        raise ImportError_(problems, FORMAT)
    title = next((strip_markup(i.text) for i in items if i.kind == "user" and i.text), "")
    first = next((r for _, r in ordered if isinstance(r.get("cwd"), str)), {})
    agent = next((r.get("agentId") for _, r in ordered if r.get("agentId")), None)
    return Parsed(
        fmt=FORMAT,
        items=items,
        title=title or name,
        records=len(records),
        skipped=skipped,
        warnings=warnings,
        cwd=first.get("cwd", ""),
        agent_id=str(agent) if agent else None,
        source_session=str(first.get("sessionId", "")),
        conversation_records=sum(1 for _, r in records if _is_message(r)),
    )


def _chain(records: list[Record], warnings: list[str]) -> dict[str, int]:
    """The uuids of the active chain (root to the last message), each with its line."""
    by_uuid = {rec["uuid"]: (number, rec) for number, rec in records if "uuid" in rec}
    start = next(rec for _, rec in reversed(records) if _is_message(rec))
    chain: dict[str, int] = {}
    uuid: Any = start["uuid"]
    while uuid is not None and uuid not in chain:
        if uuid not in by_uuid:
            warnings.append(f"the chain's record {uuid} is not in the file; it starts after it")
            break
        number, rec = by_uuid[uuid]
        chain[uuid] = number
        parent = rec.get("parentUuid")
        if parent is None and rec.get("subtype") == "compact_boundary":
            parent = rec.get("logicalParentUuid")
        uuid = parent
    return chain


def _blocks(rec: dict[str, Any]) -> list[Any]:
    content = rec["message"].get("content")
    return content if isinstance(content, list) else []


def _complete(records: list[Record], chain: dict[str, int]) -> tuple[set[int], set[int]]:
    """``id()`` of the records of the conversation (the chain's, its responses' sibling
    records and the results answering its calls, each once and after its call), and of the
    replayed copies of them a resumed session wrote."""
    on_chain = [(n, r) for n, r in records if r.get("uuid") in chain]
    kept = {id(r) for _, r in on_chain}
    replayed: set[int] = set()
    responses: set[str] = set()
    seen_blocks: set[str] = set()
    calls: dict[str, int] = {}  # tool_use id -> line of the record that holds it
    answered: set[str] = set()
    for number, rec in on_chain:
        if rec["type"] == "assistant" and _is_message(rec):
            mid = rec["message"].get("id")
            if isinstance(mid, str):
                responses.add(mid)
            for block in _blocks(rec):
                seen_blocks.add(f"{mid}\0{json.dumps(block, sort_keys=True)}")
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    calls[str(block.get("id"))] = number
        elif rec["type"] == "user" and _is_message(rec):
            answered.update(_result_ids(rec))
    for number, rec in records:
        if id(rec) in kept or not _is_message(rec):
            continue
        if rec["type"] == "assistant":
            mid = rec["message"].get("id")
            if mid not in responses:
                continue
            keys = [f"{mid}\0{json.dumps(b, sort_keys=True)}" for b in _blocks(rec)]
            if any(k in seen_blocks for k in keys):
                replayed.add(id(rec))
                continue
            seen_blocks.update(keys)
            kept.add(id(rec))
            for block in _blocks(rec):
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    calls[str(block.get("id"))] = number
            continue
        ids = _result_ids(rec)
        if not ids or not all(i in calls for i in ids):
            continue
        if any(i in answered for i in ids):
            replayed.add(id(rec))
            continue
        if all(calls[i] < number for i in ids):
            answered.update(ids)
            kept.add(id(rec))
    return kept, replayed


def _count_queued(
    records: list[Record], kept: set[int], skipped: Counter[str], warnings: list[str]
) -> None:
    """Inputs typed while the agent worked that no stored user record holds."""
    texts = set()
    for _, rec in records:
        if id(rec) in kept and rec["type"] == "user":
            content = rec["message"].get("content")
            if isinstance(content, str):
                texts.add(content.strip())
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "text":
                    texts.add(str(block.get("text", "")).strip())
    lost = []
    for number, rec in records:
        if rec["type"] != "queue-operation" or rec.get("operation") != "enqueue":
            continue
        content = rec.get("content")
        if isinstance(content, str) and content.strip() and content.strip() not in texts:
            if content.lstrip().startswith("<task-notification>"):
                continue  # a background task's notice, not the user's
            lost.append(f"line {number}: {content.strip()[:60]!r}")
    if lost:
        skipped["queued_input"] += len(lost)
        warnings.append(
            f"{len(lost)} input(s) typed while the agent worked are not in the recorded "
            "conversation (queue-operation only), not stored: " + "; ".join(lost)
        )


def _result_ids(rec: dict[str, Any]) -> list[str]:
    content = rec.get("message", {}).get("content") if rec.get("type") == "user" else None
    if not isinstance(content, list):
        return []
    return [
        str(b.get("tool_use_id"))
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def _items(records: list[Record], problems: list[str]) -> list[Item]:
    items: list[Item] = []
    boundary: dict[str, Any] | None = None
    boundary_at = None
    step: Item | None = None  # the assistant step being merged (until the next user input)
    step_id: str | None = None  # its message.id
    for number, rec in records:
        created = parse_time(rec.get("timestamp"), number, problems) or utcnow()
        if rec["type"] == "system":
            boundary = rec.get("compactMetadata") or {}
            boundary_at = created
            step, step_id = None, None
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
            pre = meta.get("preTokens")
            items.append(
                Item(
                    "summary",
                    number,
                    boundary_at or created,
                    text="\n".join(b.get("text", "") for b in blocks if b.get("type") == "text"),
                    trigger=str(meta.get("trigger", "auto")),
                    pre_tokens=pre if isinstance(pre, int) else None,
                )
            )
            boundary, boundary_at, step, step_id = None, None, None, None
            continue
        if role == "user":
            recorded = rec.get("toolUseResult")
            by_id = {i: recorded for i in _result_ids(rec)} if isinstance(recorded, dict) else None
            new = items_of(role, blocks, number, created, None, by_id)
            items.extend(new)
            if any(i.kind == "user" for i in new):
                step, step_id = None, None
            continue
        try:
            usage = None if msg.get("model") == "<synthetic>" else usage_of(msg.get("usage"))
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
            continue
        one = items_of(role, blocks, number, created, usage)[0]
        one.model = str(msg.get("model") or "")
        mid = msg.get("id")
        if step is not None and step_id is not None and mid == step_id:
            step.text = "\n".join(t for t in (step.text, one.text) if t)
            step.calls.extend(one.calls)
            step.thinking.extend(one.thinking)
            step.usage = one.usage or step.usage
            continue
        step, step_id = one, mid if isinstance(mid, str) else None
        items.append(one)
    return items
