"""The conversation of a Claude Code session file: which records it is made of, in order.

The file is a tree of records linked by ``uuid`` / ``parentUuid``; the conversation a user saw
is the chain from the last user / assistant record back to its root (:func:`chain`), plus the
records Claude Code ≥ 2.1 hangs off it for one API response (sibling records of a parallel
batch, the results answering them), each once and after its call (:func:`conversation`).
What real sessions do to that tree, and how the walk survives it:

- A ``compact_boundary`` starts a new root (``parentUuid: null``); ``logicalParentUuid`` names
  the record it continues. When that record (or any parent) is not in the file, the walk goes
  on from the last conversation record before the one that names it, with a warning.
- A compaction that keeps the conversation's last messages (Claude Code ≥ 2.1.1xx, its
  ``compactMetadata.preservedSegment`` ``{headUuid, anchorUuid, tailUuid}`` or
  ``preservedMessages`` ``{anchorUuid, uuids}``) leaves them where they were in the file,
  with their old parents, and hangs what comes after the summary off the kept tail. The walk
  relinks them as Claude Code does when it loads the file (:func:`relinks`): the head hangs
  off the anchor (the summary), the anchor's other children off the tail, and the boundary
  goes on to what the head followed (what was compacted away), so the order is: the
  compacted-away records, the boundary, the summary, the kept records, what came after.
- A resumed session (2.1.11 → 2.1.14) replays earlier records under new uuids and keeps only
  the last tool_use of each parallel batch. The siblings are taken from the copy on the
  chain's side of the file when there is one, else from the earlier copy, and placed with
  their batch: never before the chain's first record. Copies of blocks or results already
  taken are ``replayed``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
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


Place = tuple[int, ...]
"""Where a record goes in the conversation, compared as a tuple: its line, or for a record
a compaction kept (:class:`Links`), the place of its anchor followed by ``(1, line)``."""


@dataclass
class Links:
    """The parents a compaction that kept records changes (:func:`relinks`), and where the
    kept records go."""

    parents: dict[str, str | None] = field(default_factory=dict)
    """uuid -> the parent the walk takes instead of the record's own."""
    moved: list[tuple[int, int, int]] = field(default_factory=list)
    """(first line, last line, anchor line): the records on those lines go after the
    anchor (the summary), in their order; later compactions last."""

    def parent(self, rec: dict[str, Any]) -> tuple[Any, str]:
        """The parent the walk takes from ``rec``, and the field it is read from."""
        uuid = rec.get("uuid")
        if uuid in self.parents:
            return self.parents[uuid], "preservedSegment"
        parent = rec.get("parentUuid")
        if parent is None and is_boundary(rec):
            return rec.get("logicalParentUuid"), "logicalParentUuid"
        return parent, "parentUuid"

    def place(self, line: int) -> Place:
        for first, last, anchor in reversed(self.moved):
            if first <= line <= last:
                return (*self.place(anchor), 1, line)
        return (line,)


def kept_segments(rec: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(head, tail, anchor)`` of what a ``compact_boundary`` record says its compaction
    kept: from ``preservedMessages``' uuid list (which Claude Code reads first), then from
    ``preservedSegment``; the first whose tail leads back to its head is used."""
    meta = rec.get("compactMetadata")
    if not isinstance(meta, dict):
        return []
    out = []
    listed = meta.get("preservedMessages")
    if isinstance(listed, dict):
        uuids = listed.get("uuids")
        anchor = listed.get("anchorUuid")
        if (
            isinstance(uuids, list)
            and uuids
            and all(isinstance(u, str) for u in uuids)
            and isinstance(anchor, str)
        ):
            out.append((str(uuids[0]), str(uuids[-1]), anchor))
    segment = meta.get("preservedSegment")
    if isinstance(segment, dict):
        ends = [segment.get(k) for k in ("headUuid", "tailUuid", "anchorUuid")]
        if all(isinstance(e, str) for e in ends):
            out.append((str(ends[0]), str(ends[1]), str(ends[2])))
    return out


def relinks(records: list[Record], warnings: list[str], found: Index | None = None) -> Links:
    """The links each compaction that kept records makes, in file order, as Claude Code
    loads the file (``applyPreservedSegmentRelinks``): the kept head hangs off the anchor,
    the anchor's other children off the kept tail, and the boundary goes on to the head's
    old parent. A segment whose tail does not lead back to its head through the file is not
    relinked (with a warning): the file is then read by its own parents. ``found``: the
    records' :class:`Index`, when the caller made it."""
    links = Links()
    found = found or index(records)
    boundaries = [(n, rec, kept) for n, rec in found.boundaries if (kept := kept_segments(rec))]
    if not boundaries:
        return links  # no compaction kept records: nothing to index
    by_uuid = {rec["uuid"]: (number, rec) for number, rec in records if "uuid" in rec}
    children: dict[str, list[str]] = {}
    for _, rec in records:
        parent = rec.get("parentUuid")
        if isinstance(parent, str) and isinstance(rec.get("uuid"), str):
            children.setdefault(parent, []).append(rec["uuid"])
    for number, rec, kept in boundaries:
        usable = [
            (h, t, a) for h, t, a in kept if a in by_uuid and _walk_back(by_uuid, t, h) is not None
        ]
        head, tail, anchor = (usable or kept)[0]
        if not usable:
            warnings.append(
                f"line {number}: the compaction's kept records ({head} … {tail}) are not all "
                "in the file; what follows is read by its own parents"
            )
            continue
        old_parent = by_uuid[head][1].get("parentUuid")
        links.parents[head] = anchor
        for child in children.get(anchor, []):
            if child != head:
                links.parents[child] = tail
        if anchor != rec["uuid"]:
            # The kept records follow the summary; the boundary follows what was compacted
            # away (the head's old parent; none when the head was the first record).
            links.parents[rec["uuid"]] = old_parent if old_parent in by_uuid else None
            last = max(n for n, r in records if n < number)
            links.moved.append((by_uuid[head][0], last, by_uuid[anchor][0]))
        else:
            # The boundary is the anchor (a compaction that kept the start): the kept
            # records follow it, the summary follows them.
            links.moved.append((by_uuid[head][0], by_uuid[tail][0], number))
    return links


def _walk_back(
    by_uuid: dict[str, tuple[int, dict[str, Any]]], tail: str, head: str
) -> list[str] | None:
    """The uuids from ``tail`` back to ``head`` by their parents, or None when the way
    breaks (a record not in the file, a loop)."""
    seen: list[str] = []
    uuid: Any = tail
    while isinstance(uuid, str) and uuid in by_uuid and uuid not in seen:
        seen.append(uuid)
        if uuid == head:
            return seen
        uuid = by_uuid[uuid][1].get("parentUuid")
    return None


@dataclass
class Index:
    """What the walk asks of every record, found in the parser's one pass over them
    (:func:`engine.recordings.claude_code.parse_records`) instead of at each step."""

    by_uuid: dict[Any, Record] = field(default_factory=dict)
    """Each record by its ``uuid`` (the last of a repeated one)."""
    messages: set[int] = field(default_factory=set)
    """``id()`` of each user / assistant record (:func:`is_message`)."""
    boundaries: list[Record] = field(default_factory=list)
    """The compactions' boundaries (:func:`is_boundary`), in order."""
    spoken: list[Record] = field(default_factory=list)
    """The messages and the boundaries, in order: what :func:`conversation` orders (a third
    of a session file's records; most of the rest are progress records)."""

    def add(self, number: int, rec: dict[str, Any]) -> None:
        if "uuid" in rec:
            self.by_uuid[rec["uuid"]] = (number, rec)
        if is_message(rec):
            self.messages.add(id(rec))
            self.spoken.append((number, rec))
        elif is_boundary(rec):
            self.boundaries.append((number, rec))
            self.spoken.append((number, rec))

    def is_message(self, rec: dict[str, Any]) -> bool:
        return id(rec) in self.messages


def index(records: list[Record]) -> Index:
    found = Index()
    for number, rec in records:
        found.add(number, rec)
    return found


def chain(
    records: list[Record],
    warnings: list[str],
    root: str | None = None,
    links: Links | None = None,
    found: Index | None = None,
) -> dict[str, int]:
    """The uuids of the active chain (root to the last message), each with its line.

    A parent the file does not hold (a damaged line, a ``compact_boundary`` whose
    ``logicalParentUuid`` names a record that was never written) does not cut the chain: it
    goes on from the last conversation record before the one that names it, with a warning.
    ``root``: the record the walk ends at (its parents are not among ``records``);
    ``links``: the parents a compaction that kept records changes (:func:`relinks`);
    ``found``: the records' :class:`Index`, when the caller made it."""
    links = links or Links()
    found = found or index(records)
    by_uuid, message = found.by_uuid, found.is_message
    start = next(rec for _, rec in reversed(records) if message(rec))
    chain: dict[str, int] = {}
    uuid: Any = start["uuid"]
    while uuid is not None and uuid not in chain:
        number, rec = by_uuid[uuid]
        chain[uuid] = number
        if uuid == root:
            break
        parent, named = links.parent(rec)
        if parent is not None and parent not in by_uuid:
            before = next(
                (
                    (n, r)
                    for n, r in reversed(records)
                    if n < number and message(r) and r["uuid"] not in chain
                ),
                None,
            )
            what = "the compaction's" if is_boundary(rec) else "the record's"
            if before is None and is_boundary(rec):
                warnings.append(
                    f"line {number}: the file begins at a compaction (its {named} {parent} "
                    "is in an earlier file)"
                )
                break
            if before is None:
                warnings.append(
                    f"line {number}: {what} {named} {parent} is not in the file; "
                    "the conversation starts here"
                )
                break
            warnings.append(
                f"line {number}: {what} {named} {parent} is not in the file; the "
                f"conversation goes on from line {before[0]}, the last conversation record "
                "before it"
            )
            parent = before[1]["uuid"]
        uuid = parent
    return chain


def _blocks(rec: dict[str, Any]) -> list[Any]:
    content = rec["message"].get("content")
    return content if isinstance(content, list) else []


def json_key(value: Any) -> str:
    return _sorted_json(value)


_sorted_json = json.JSONEncoder(sort_keys=True).encode
"""``json.dumps(value, sort_keys=True)``, its encoder made once."""


Key = tuple[Place, int, int]
"""Where a record goes in the conversation: (anchor's place, place by the anchor, own line)."""


def conversation(
    records: list[Record],
    chain: dict[str, int],
    links: Links | None = None,
    found: Index | None = None,
) -> tuple[list[Record], set[int]]:
    """The records of the conversation in order (the chain's, its responses' sibling records
    and the results answering its calls, each once and after its call), and ``id()`` of the
    replayed copies of them a resumed session wrote.

    A record at or after the chain's first line keeps its place in the file. One before it (a
    resumed session's earlier copy, the only one holding a parallel batch's other calls) goes
    with its batch: a sibling just before the batch's first record on the chain, a result
    after the batch. Records a compaction kept go after its summary (``links``).
    ``found``: the records' :class:`Index`, when the caller made it."""
    place = (links or Links()).place
    found = found or index(records)
    messages, spoken = found.messages, found.spoken
    start = min(chain.values())
    on_chain = [(n, r) for n, r in spoken if r.get("uuid") in chain]
    keys: dict[int, Key] = {id(r): (place(n), 0, n) for n, r in on_chain}
    replayed: set[int] = set()
    batch_first: dict[str, int] = {}  # message.id -> its first line on the chain
    batch_last: dict[str, int] = {}  # message.id -> its last in-place line
    taken: dict[str, list[Any]] = {}  # message.id -> the blocks of its records taken
    keyed: dict[str, set[str]] = {}  # message.id -> their keys, made when first asked
    calls: dict[str, tuple[str, Key]] = {}  # tool_use id -> (message.id, key of its record)
    answered: set[str] = set()

    def note_calls(rec: dict[str, Any], mid: str, key: Key) -> None:
        blocks = _blocks(rec)
        taken.setdefault(mid, []).extend(blocks)
        if mid in keyed:
            keyed[mid].update(json_key(b) for b in blocks)
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls[str(block.get("id"))] = (mid, key)

    def seen(mid: str, blocks: list[Any]) -> bool:
        """Whether a block of ``blocks`` was taken for response ``mid`` already (the keys,
        each block's sorted JSON, made only for a response a copy claims a part of)."""
        if mid not in keyed:
            keyed[mid] = {json_key(b) for b in taken.get(mid, [])}
        return any(json_key(b) in keyed[mid] for b in blocks)

    for number, rec in on_chain:
        if rec["type"] == "assistant":
            mid = str(rec["message"].get("id"))
            batch_first.setdefault(mid, number)
            batch_last[mid] = number
            note_calls(rec, mid, keys[id(rec)])
        elif rec["type"] == "user":
            answered.update(result_ids(rec))
    # The chain's side of the file first; then the earlier copies, the nearest first.
    off_chain = [(n, r) for n, r in spoken if id(r) in messages and id(r) not in keys]
    candidates = [(n, r) for n, r in off_chain if n >= start]
    candidates += [(n, r) for n, r in reversed(off_chain) if n < start]
    for number, rec in candidates:
        if rec["type"] != "assistant":
            continue
        mid = str(rec["message"].get("id"))
        if mid not in batch_first:
            continue
        if seen(mid, _blocks(rec)):
            replayed.add(id(rec))
            continue
        if number >= start:
            key = (place(number), 0, number)
        else:
            # Just before its batch's first record on the chain (the earlier copy keeps the
            # batch's order), unless that record is the chain's first: then just after it.
            key = (place(batch_first[mid]), 1 if batch_first[mid] == start else -1, number)
        if number >= start:
            batch_last[mid] = max(batch_last[mid], number)
        keys[id(rec)] = key
        note_calls(rec, mid, key)
    for number, rec in candidates:
        if rec["type"] != "user":
            continue
        ids = result_ids(rec)
        if not ids or not all(i in calls for i in ids):
            continue
        if any(i in answered for i in ids):
            replayed.add(id(rec))
            continue
        if number >= start:
            key = (place(number), 0, number)
        else:
            key = (place(max(batch_last[calls[i][0]] for i in ids)), 2, number)
        if all(calls[i][1] < key for i in ids):
            answered.update(ids)
            keys[id(rec)] = key
    ordered = sorted(
        (r for r in on_chain + candidates if id(r[1]) in keys), key=lambda x: keys[id(x[1])]
    )
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
