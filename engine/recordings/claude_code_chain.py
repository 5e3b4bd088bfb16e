"""The conversation of a Claude Code session file: which records it is made of, in order.

The file is a tree of records linked by ``uuid`` / ``parentUuid``; the conversation a user saw
is the chain from the last user / assistant record back to its root (:func:`chain`), plus the
records Claude Code ≥ 2.1 hangs off it for one API response (sibling records of a parallel
batch, the results answering them), each once and after its call (:func:`conversation`).
What real sessions do to that tree, and how the walk survives it:

- A ``compact_boundary`` starts a new root (``parentUuid: null``); ``logicalParentUuid`` names
  the record it continues. When that record (or any parent) is not in the file, the walk goes
  on from the last conversation record before the one that names it, with a warning.
- A resumed session (2.1.11 → 2.1.14) replays earlier records under new uuids and keeps only
  the last tool_use of each parallel batch. The siblings are taken from the copy on the
  chain's side of the file when there is one, else from the earlier copy, and placed with
  their batch: never before the chain's first record. Copies of blocks or results already
  taken are ``replayed``.
"""

from __future__ import annotations

import json
from typing import Any

Record = tuple[int, dict[str, Any]]
"""A record and its line number."""


def is_message(rec: dict[str, Any]) -> bool:
    return (
        rec.get("type") in ("user", "assistant")
        and isinstance(rec.get("message"), dict)
        and isinstance(rec.get("uuid"), str)
    )


def is_conversation(rec: dict[str, Any]) -> bool:
    """A message, or the boundary of a compaction: what becomes items."""
    return is_message(rec) or is_boundary(rec)


def is_boundary(rec: dict[str, Any]) -> bool:
    return rec.get("type") == "system" and rec.get("subtype") == "compact_boundary"


def chain(records: list[Record], warnings: list[str], root: str | None = None) -> dict[str, int]:
    """The uuids of the active chain (root to the last message), each with its line.

    A parent the file does not hold (a damaged line, a ``compact_boundary`` whose
    ``logicalParentUuid`` names a record that was never written) does not cut the chain: it
    goes on from the last conversation record before the one that names it, with a warning.
    ``root``: the record the walk ends at (its parents are not among ``records``)."""
    by_uuid = {rec["uuid"]: (number, rec) for number, rec in records if "uuid" in rec}
    start = next(rec for _, rec in reversed(records) if is_message(rec))
    chain: dict[str, int] = {}
    uuid: Any = start["uuid"]
    while uuid is not None and uuid not in chain:
        number, rec = by_uuid[uuid]
        chain[uuid] = number
        if uuid == root:
            break
        parent = rec.get("parentUuid")
        field = "parentUuid"
        if parent is None and is_boundary(rec):
            parent, field = rec.get("logicalParentUuid"), "logicalParentUuid"
        if parent is not None and parent not in by_uuid:
            before = next(
                (
                    (n, r)
                    for n, r in reversed(records)
                    if n < number and is_message(r) and r["uuid"] not in chain
                ),
                None,
            )
            what = "the compaction's" if is_boundary(rec) else "the record's"
            if before is None:
                warnings.append(
                    f"line {number}: {what} {field} {parent} is not in the file; "
                    "the conversation starts here"
                )
                break
            warnings.append(
                f"line {number}: {what} {field} {parent} is not in the file; the "
                f"conversation goes on from line {before[0]}, the last conversation record "
                "before it"
            )
            parent = before[1]["uuid"]
        uuid = parent
    return chain


def _blocks(rec: dict[str, Any]) -> list[Any]:
    content = rec["message"].get("content")
    return content if isinstance(content, list) else []


def _block_key(mid: Any, block: Any) -> str:
    return f"{mid}\0{json_key(block)}"


def json_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


Key = tuple[int, int, int]
"""Where a record goes in the conversation: (anchor line, place by the anchor, own line)."""


def conversation(records: list[Record], chain: dict[str, int]) -> tuple[list[Record], set[int]]:
    """The records of the conversation in order (the chain's, its responses' sibling records
    and the results answering its calls, each once and after its call), and ``id()`` of the
    replayed copies of them a resumed session wrote.

    A record at or after the chain's first line keeps its place in the file. One before it (a
    resumed session's earlier copy, the only one holding a parallel batch's other calls) goes
    with its batch: a sibling just before the batch's first record on the chain, a result
    after the batch."""
    start = min(chain.values())
    on_chain = [(n, r) for n, r in records if r.get("uuid") in chain and is_conversation(r)]
    keys: dict[int, Key] = {id(r): (n, 0, n) for n, r in on_chain}
    replayed: set[int] = set()
    batch_first: dict[str, int] = {}  # message.id -> its first line on the chain
    batch_last: dict[str, int] = {}  # message.id -> its last in-place line
    seen_blocks: set[str] = set()
    calls: dict[str, tuple[str, Key]] = {}  # tool_use id -> (message.id, key of its record)
    answered: set[str] = set()

    def note_calls(rec: dict[str, Any], mid: str, key: Key) -> None:
        for block in _blocks(rec):
            seen_blocks.add(_block_key(mid, block))
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls[str(block.get("id"))] = (mid, key)

    for number, rec in on_chain:
        if rec["type"] == "assistant":
            mid = str(rec["message"].get("id"))
            batch_first.setdefault(mid, number)
            batch_last[mid] = number
            note_calls(rec, mid, keys[id(rec)])
        elif rec["type"] == "user":
            answered.update(result_ids(rec))
    # The chain's side of the file first; then the earlier copies, the nearest first.
    after = [(n, r) for n, r in records if n >= start]
    before = [(n, r) for n, r in reversed(records) if n < start]
    candidates = [(n, r) for n, r in after + before if id(r) not in keys and is_message(r)]
    for number, rec in candidates:
        if rec["type"] != "assistant":
            continue
        mid = str(rec["message"].get("id"))
        if mid not in batch_first:
            continue
        block_keys = [_block_key(mid, b) for b in _blocks(rec)]
        if any(k in seen_blocks for k in block_keys):
            replayed.add(id(rec))
            continue
        if number >= start:
            key = (number, 0, number)
        else:
            # Just before its batch's first record on the chain (the earlier copy keeps the
            # batch's order), unless that record is the chain's first: then just after it.
            key = (batch_first[mid], 1 if batch_first[mid] == start else -1, number)
        if number >= start:
            batch_last[mid] = max(batch_last[mid], number)
        keys[id(rec)] = key
        note_calls(rec, mid, key)
    for number, rec in candidates:
        ids = result_ids(rec)
        if rec["type"] != "user" or not ids or not all(i in calls for i in ids):
            continue
        if any(i in answered for i in ids):
            replayed.add(id(rec))
            continue
        if number >= start:
            key = (number, 0, number)
        else:
            key = (max(batch_last[calls[i][0]] for i in ids), 2, number)
        if all(calls[i][1] < key for i in ids):
            answered.update(ids)
            keys[id(rec)] = key
    ordered = sorted(((n, r) for n, r in records if id(r) in keys), key=lambda x: keys[id(x[1])])
    return ordered, replayed


def result_ids(rec: dict[str, Any]) -> list[str]:
    content = rec.get("message", {}).get("content") if rec.get("type") == "user" else None
    if not isinstance(content, list):
        return []
    return [
        str(b.get("tool_use_id"))
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
