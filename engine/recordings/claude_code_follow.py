"""Following a Claude Code file: a parse that costs what was appended, not the whole file.

``watch`` looks at a growing file several times a second; parsing every record again at every
look costs the whole file per look (a long session, O(n²) over its life). :class:`TailParser`
parses the whole file once with the one reference parser
(:func:`engine.recordings.claude_code.parse_read`), then keeps the items before the last
round's user input (the *anchor*) and, at the next looks, parses only the records from the
anchor on (:func:`~engine.recordings.claude_code.parse_records` with ``root``), as long as
every record appended since hangs under the anchor in the uuid tree: the usual case, the agent
going on. Anything else parses the whole file again and sets a new anchor: a record whose
parent is before the anchor (a rewind to an earlier round, a resumed session's replay), a
sidechain record, a response or a result that belongs to the part already parsed, a compaction
that kept records (it moves them after its summary). A record
repeating an earlier record's uuid (a resumed or copied record) is left out by the whole-file
parser (the first is kept, the repeat named "not read"); the tail leaves it out and names it
the same way, and goes on (issue 44: it used to parse the whole file at every look until the
next round started). The anchor moves on when a later round starts, so a look costs about
what the current round holds plus what was appended. An input delivered from the queue is
never an anchor (no record of its own holds it), nor is a round's input while the user's
typing still waits in the queue (its ``enqueue`` would be before the parse).

What it gives is the whole-file parse's items, title, working directory, version and "not
read" record for record (``tests/engine/recordings/test_claude_code_follow.py`` grows the
corpus files through both); ``skipped`` and ``warnings`` are the tail's only (``watch`` shows
neither).
"""

from __future__ import annotations

import bisect
from collections import Counter
from typing import Any

from engine.messages.harness import input_kind
from engine.recordings import claude_code
from engine.recordings.base import ImportError_, Item, NotRead, Parsed
from engine.recordings.claude_code_chain import (
    Record,
    is_boundary,
    is_message,
    kept_segments,
    result_ids,
)
from engine.recordings.writer import check


class TailParser:
    """One followed Claude Code file's parses (the records list only grows; a new file, a
    new parser)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.whole_parses = 0
        """Parses of the whole file (the first, and each time the tail could not be used)."""
        self.tail_parses = 0
        self.meta = claude_code.Metadata()
        self._meta_seen = 0
        self._sidechain = False
        self._first: dict[str, int] = {}
        """Each uuid's first line: a record on a later line repeats it, and every parse
        leaves it out (:func:`claude_code.parse_read`)."""
        self._drop()

    def _drop(self) -> None:
        self.anchor: int | None = None
        """Index in the records of the user input that opens the last round parsed."""
        self._anchor_uuid = ""
        self._anchor_line = 0
        self._prefix: list[Item] = []
        self._prefix_named = NotRead()
        """What the parser (not the line reader) named before the anchor."""
        self._under: set[str] = set()
        self._mids: set[str] = set()
        self._calls: set[str] = set()
        self._checked = 0
        self._head: dict[str, Any] = {}
        self._tail_from = -1
        """Where the last parse's own items start (-1: it parsed the whole file)."""
        self._then: tuple[list[Record], NotRead] | None = None
        """The last parse's records and what its parser named: the anchor is set (or moved)
        from them once its items are checked (:meth:`check` drops and renames some)."""

    def parse(
        self,
        records: list[Record],
        n_lines: int,
        skipped: Counter[str],
        warnings: list[str],
        not_read: NotRead,
    ) -> Parsed:
        """The session the records hold (raises :class:`ImportError_` as the whole-file
        parser does); pass it to :meth:`check` before the next parse (the next look parses
        from the anchor that check sets)."""
        self._then = None
        for n, rec in records[self._meta_seen :]:
            uuid = rec.get("uuid")
            if isinstance(uuid, str) and self._first.setdefault(uuid, n) != n:
                continue  # a repeat: the parse never sees it
            self.meta.add(rec, n)
            self._sidechain |= rec.get("isSidechain") is True
        self._meta_seen = len(records)
        if self.anchor is not None and self._still_under(records):
            parsed = self._tail(records, n_lines, skipped, warnings, not_read)
            if parsed is not None:
                self.tail_parses += 1
                return parsed
        return self._whole(records, n_lines, skipped, warnings, not_read)

    def check(self, parsed: Parsed) -> list[str]:
        """The writer's :func:`check` of the last parse, over its tail only when it parsed
        the tail: the items before were checked at an earlier look, and nothing after the
        anchor answers, repeats or continues them (:meth:`_fits`)."""
        then, self._then = self._then, None
        if self._tail_from < 0:
            problems = check(parsed)
            if then is not None and not problems:
                self._set_anchor(then[0], parsed.items, then[1])
            return problems
        tail = Parsed(
            fmt=parsed.fmt,
            items=parsed.items[self._tail_from :],
            title=parsed.title,
            skipped=parsed.skipped,
            warnings=parsed.warnings,
        )
        problems = check(tail)
        parsed.items = parsed.items[: self._tail_from] + tail.items
        if then is not None and not problems:
            self._move_anchor(then[0], tail.items, then[1])
        return problems

    def _repeats(self, line: int, rec: dict[str, Any]) -> bool:
        """Whether the record on ``line`` repeats an earlier record's uuid (left out)."""
        uuid = rec.get("uuid")
        return isinstance(uuid, str) and self._first.get(uuid, line) < line

    def _fits(self, line: int, rec: dict[str, Any]) -> bool:
        """Whether ``rec`` (on ``line``), appended after the anchor, leaves the part before it
        as it was (and note it under the anchor). A repeated uuid fits: no parse reads it."""
        if self._repeats(line, rec):
            return True
        if rec.get("isSidechain") is True:
            return False
        uuid = rec.get("uuid")
        if uuid is None:
            return True
        if not isinstance(uuid, str) or uuid in self._under:
            return False  # a repeated uuid: the whole parser decides which is kept
        if is_boundary(rec) and kept_segments(rec):
            # A compaction that kept records moves them after its summary, records that may
            # be before the anchor: the whole parser places them.
            return False
        parent = rec.get("parentUuid")
        if parent is None and is_boundary(rec):
            parent = rec.get("logicalParentUuid")
        if parent not in self._under:
            return False
        if is_message(rec):
            if rec["type"] == "assistant" and (
                str(rec["message"].get("id")) in self._mids
                or any(i in self._calls for i in _call_ids(rec))
            ):
                return False
            if any(i in self._calls for i in result_ids(rec)):
                return False
        self._under.add(uuid)
        return True

    def _still_under(self, records: list[Record]) -> bool:
        queued = {i.text.strip() for i in self._prefix if "queued_line" in (i.origin or {})}
        for n, rec in records[self._checked :]:
            if not self._fits(n, rec) or (queued and not queued.isdisjoint(_texts(rec))):
                # A user record holding an input the part before delivered from the queue:
                # the whole parser now reads it as that record, not from the queue.
                self._drop()
                return False
        self._checked = len(records)
        return True

    def _tail(
        self,
        records: list[Record],
        n_lines: int,
        skipped: Counter[str],
        warnings: list[str],
        not_read: NotRead,
    ) -> Parsed | None:
        assert self.anchor is not None
        before = not_read.copy()
        before.merge(self._prefix_named)
        named = before.copy()
        own: list[Record] = []
        for n, rec in records[self.anchor :]:
            if self._repeats(n, rec):
                named.line(claude_code.REPEATED_UUID, n)  # as the whole parse names it
            else:
                own.append((n, rec))
        try:
            tail = claude_code.parse_records(
                own, self.name, skipped, warnings, named, n_lines, root=self._anchor_uuid
            )
        except ImportError_:
            return None
        if not tail.items or tail.items[0].line != self._anchor_line:
            return None
        items = self._prefix + tail.items
        self._tail_from = len(self._prefix)
        self._then = (records, _added(before, named))
        return self._parsed(items, named, n_lines, skipped, warnings, tail)

    def _whole(
        self,
        records: list[Record],
        n_lines: int,
        skipped: Counter[str],
        warnings: list[str],
        not_read: NotRead,
    ) -> Parsed:
        self.whole_parses += 1
        self._drop()
        self._tail_from = -1
        given = not_read.copy()
        parsed = claude_code.parse_read(records, n_lines, self.name, skipped, warnings, not_read)
        first = next((i for i in parsed.items if i.kind == "user"), None)
        self._head = {
            "cwd": parsed.cwd,
            "source_session": parsed.source_session,
            "agent_id": parsed.agent_id,
            "title": claude_code.strip_markup(first.text) if first else "",
        }
        if not self._sidechain and not parsed.children:
            self._then = (records, _added(given, parsed.not_read))
        self._checked = len(records)
        return parsed

    def _set_anchor(self, records: list[Record], items: list[Item], named: NotRead) -> None:
        """The last round's user input as the anchor, if everything after it hangs under it."""
        users = [n for n, i in enumerate(items) if _anchors(i)]
        if not users:
            return
        k = users[-1]
        at = _start_at(records, items[k])
        if at is None:
            return
        self.anchor, self._anchor_line = at, items[k].line
        self._anchor_uuid = records[at][1]["uuid"]
        self._prefix = items[:k]
        self._prefix_named = _before(named, self._anchor_line)
        self._mids = _message_ids(records[:at])
        self._calls = {c.id for i in self._prefix for c in i.calls}
        self._under = {self._anchor_uuid}
        for n, rec in records[at + 1 :]:
            if not self._fits(n, rec):
                self._drop()
                return

    def _move_anchor(self, records: list[Record], tail: list[Item], named: NotRead) -> None:
        """A later round started in the tail: the anchor goes to its input (when what came
        after it hangs under it), the items before it join the prefix."""
        users = [n for n, i in enumerate(tail) if _anchors(i)]
        if not users or users[-1] == 0 or self.anchor is None:
            return
        old_anchor, old_prefix, old_named = self.anchor, self._prefix, self._prefix_named
        old = (self._anchor_uuid, self._anchor_line, self._mids, self._calls, self._under)
        k = users[-1]
        at = _start_at(records, tail[k])
        if at is None:
            return
        self.anchor, self._anchor_line = at, tail[k].line
        self._anchor_uuid = records[at][1]["uuid"]
        self._prefix = old_prefix + tail[:k]
        self._prefix_named = old_named.copy()
        self._prefix_named.merge(_before(named, self._anchor_line))
        self._mids = self._mids | _message_ids(records[old_anchor:at])
        self._calls = self._calls | {c.id for i in tail[:k] for c in i.calls}
        self._under = {self._anchor_uuid}
        for n, rec in records[at + 1 :]:
            if not self._fits(n, rec):
                # Stay where it was: the new round is not (yet) a safe place to start from.
                self.anchor, self._prefix, self._prefix_named = old_anchor, old_prefix, old_named
                (self._anchor_uuid, self._anchor_line, self._mids, self._calls, self._under) = old
                return

    def _parsed(
        self,
        items: list[Item],
        named: NotRead,
        n_lines: int,
        skipped: Counter[str],
        warnings: list[str],
        tail: Parsed,
    ) -> Parsed:
        meta = self.meta.result()
        version = str(meta.pop("_version", ""))
        title = str(meta.get("custom_title") or meta.get("ai_title") or self._head["title"])
        return Parsed(
            fmt=claude_code.FORMAT,
            items=items,
            title=title or self.name,
            records=n_lines,
            skipped=skipped,
            warnings=warnings,
            cwd=str(self._head["cwd"] or tail.cwd),
            agent_id=self._head["agent_id"],
            source_session=str(self._head["source_session"] or tail.source_session),
            recorded=meta,
            hidden=self.meta.hidden(),
            not_read=named,
            agent_version=version,
        )


def _start_at(records: list[Record], item: Item) -> int | None:
    """The index of ``item``'s record, when a parse can start there: a record with a uuid,
    no queued input open before it; else None."""
    at = _index(records, item.line)
    if at is None or not isinstance(records[at][1].get("uuid"), str):
        return None
    if _queue_open(records[:at]):
        return None
    return at


def _message_ids(records: list[Record]) -> set[str]:
    """The API message ids of the assistant records among ``records``."""
    return {
        str(r["message"].get("id"))
        for _, r in records
        if r.get("type") == "assistant" and is_message(r)
    }


def _anchors(item: Item) -> bool:
    """Whether a parse can start at ``item``: a user input written as its own record (not
    one delivered from the queue: its ``enqueue`` is before it, a ``queued_command``
    attachment is not a conversation record)."""
    return item.kind == "user" and "queued_line" not in (item.origin or {})


def _queue_open(records: list[Record]) -> bool:
    """Whether the queue still holds an input the user typed when ``records`` end: a parse
    that starts after them would not see it enqueued (:func:`claude_code._queued`)."""
    pending: list[str] = []
    for _, rec in records:
        if rec["type"] != "queue-operation":
            continue
        operation, content = rec.get("operation"), rec.get("content")
        if operation == "enqueue" and isinstance(content, str) and content.strip():
            pending.append(content.strip())
        elif operation in ("remove", "dequeue") and pending:
            # The input it takes, as claude_code._queued takes it: the one it names, else the
            # oldest of the user's own (a task's notice waits for the agent to be idle).
            named = [p for p in pending if isinstance(content, str) and p == content.strip()]
            own = [p for p in pending if input_kind(p) != "task-notification"]
            pending.remove((named or own or pending)[0])
        elif operation == "popAll":
            pending.clear()
    return any(input_kind(p) != "task-notification" for p in pending)


def _texts(rec: dict[str, Any]) -> set[str]:
    """A user record's texts, stripped, as :func:`claude_code._user_texts` reads them."""
    if rec.get("type") != "user" or not is_message(rec):
        return set()
    content = rec["message"].get("content")
    if isinstance(content, str):
        return {content.strip(), claude_code.slash_command(content)} - {""}
    blocks = content if isinstance(content, list) else []
    return {
        str(b.get("text", "")).strip()
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text"
    }


def _call_ids(rec: dict[str, Any]) -> list[str]:
    content = rec["message"].get("content")
    blocks = content if isinstance(content, list) else []
    return [str(b.get("id")) for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]


def _index(records: list[Record], line: int) -> int | None:
    """The position of the record on ``line`` (records are in line order)."""
    lines = [n for n, _ in records]
    at = bisect.bisect_left(lines, line)
    return at if at < len(records) and records[at][0] == line else None


def _added(before: NotRead, after: NotRead) -> NotRead:
    """What ``after`` names that ``before`` did not (what a parse added)."""
    out = NotRead()
    for mine, theirs, add in (
        (before.kinds, after.kinds, out.kind),
        (before.lines, after.lines, out.line),
    ):
        for key, lines in theirs.items():
            left = Counter(mine.get(key, []))
            for line in lines:
                if left[line]:
                    left[line] -= 1
                else:
                    add(key, line)
    return out


def _before(named: NotRead, line: int) -> NotRead:
    out = NotRead()
    for key, lines in named.kinds.items():
        for n in lines:
            if n < line:
                out.kind(key, n)
    for key, lines in named.lines.items():
        for n in lines:
            if n < line:
                out.line(key, n)
    return out
