"""Following a session file another agent is still writing (``ctxscope watch``).

:class:`FileTail` reads only the bytes appended since its last look: it remembers the
offset, keeps a half-written last line until its end arrives, and starts again from the
beginning when the file was replaced or truncated (another inode, a size below the offset, or
other first bytes). It opens the file for reading only: nothing is ever written to it.

:class:`Follower` turns those lines into records and parses them with the importer's own
parser (:func:`engine.recordings.claude_code.parse_read` or
:func:`engine.recordings.codex.parse_read`, the one parser of each format, used both by
``import`` and here; the first record says which), computes the figures ``watch`` shows
(:class:`Figures`), and, given a store, keeps one session in step with the file. The session
is found again by its source key (the file's path and the recording's session id), so
watching the same file again updates it instead of adding another. Only the last round is
stored again as it grows (the ended rounds stay as written); when an earlier part of the
parsed conversation changed (the agent rewound, or the chain was rewritten), the session's
content is written again whole, in one transaction.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config import Settings, session_origin
from engine.messages.tokens import count_text
from engine.models import Session
from engine.params import strategy_params
from engine.recordings import claude_code, codex
from engine.recordings.base import ImportError_, Item, Parsed
from engine.recordings.writer import Resume, check, write
from engine.store import Store

HEAD_BYTES = 256
"""The first bytes of a file, compared at each look: other bytes there mean another file."""


@dataclass
class Chunk:
    """What one look at a file found."""

    lines: list[bytes]
    """Complete lines appended since the last look (without their line ends)."""
    reset: bool = False
    """The file was replaced or truncated: ``lines`` start again from its first line."""


class FileTail:
    """The lines appended to one file since the last :meth:`read`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""
        self.identity: tuple[int, int] | None = None
        self.head = b""

    def read(self) -> Chunk:
        """The complete lines written since the last call; nothing while the file is absent."""
        try:
            st = os.stat(self.path)
        except OSError:
            return Chunk([])
        identity = (st.st_dev, st.st_ino)
        reset = False
        if self.identity is not None and (identity != self.identity or st.st_size < self.offset):
            reset = True
        elif st.st_size == self.offset:
            return Chunk([])
        try:
            with open(self.path, "rb") as f:
                if not reset and self.head:
                    if f.read(len(self.head)) != self.head:
                        reset = True
                if reset:
                    self.offset, self.partial, self.head = 0, b"", b""
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return Chunk([])
        self.identity = identity
        self.offset += len(data)
        if len(self.head) < HEAD_BYTES:
            self.head = (self.head + data)[:HEAD_BYTES]
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()  # b"" after a line end; else a line still being written
        return Chunk([line.rstrip(b"\r") for line in lines], reset)


@dataclass
class Figures:
    """What ``watch`` reports after each update (``--jsonl`` prints these)."""

    messages: int = 0
    tool_calls: int = 0
    context_tokens: int = 0
    """The next request as the agent will send it: its last response's usage (input, cache
    read, cache write, output) plus what was recorded after it (counted locally)."""
    context_window: int = 0
    until_compact: int = 0
    """Tokens left before the agent's own auto-compaction fires."""
    compact_at: int = 0
    compactions: int = 0
    last_usage: dict[str, int] = field(default_factory=dict)
    warning: bool = False
    """At or over ``watch_warn_ratio`` of the auto-compact trigger."""

    @property
    def percent(self) -> float:
        return round(100 * self.context_tokens / self.context_window, 1)


def figures(parsed: Parsed, settings: Settings, compact_limit: int | None = None) -> Figures:
    """The figures of a parsed session: its last usage and what came after it, against the
    agent's own auto-compact trigger: for Codex ``compact_limit`` (its
    ``model_auto_compact_token_limit``) or ``watch_codex_compact_ratio`` of the window its
    rollout records; for Claude Code the window less ``watch_compact_reserve``."""
    items = parsed.items
    recorded = parsed.recorded.get("context_window")
    window = recorded if isinstance(recorded, int) and recorded > 0 else 0
    out = Figures(context_window=window or settings.watch_context_window)
    out.messages = sum(1 for i in items if i.kind != "summary")
    out.tool_calls = sum(len(i.calls) for i in items)
    out.compactions = sum(1 for i in items if i.kind == "summary")
    last = max(
        (
            n
            for n, i in enumerate(items)
            if (i.kind == "assistant" and i.usage) or i.kind == "summary"
        ),
        default=-1,
    )
    base = 0
    if last >= 0 and items[last].kind == "assistant":
        usage = items[last].usage
        assert usage is not None
        out.last_usage = {
            "input": usage.input_tokens,
            "cache_read": usage.cache_read_input_tokens,
            "cache_write": usage.cache_creation_input_tokens,
            "output": usage.output_tokens,
        }
        base = usage.input_side + usage.output_tokens
    elif last >= 0:
        base = count_text(items[last].text)
    out.context_tokens = base + sum(_tokens(i) for i in items[last + 1 :])
    if parsed.fmt == codex.FORMAT:
        ratio = settings.watch_codex_compact_ratio
        out.compact_at = compact_limit or int(ratio * out.context_window)
    else:
        out.compact_at = out.context_window - settings.watch_compact_reserve
    out.until_compact = max(0, out.compact_at - out.context_tokens)
    out.warning = out.context_tokens >= settings.watch_warn_ratio * out.compact_at
    return out


def _tokens(item: Item) -> int:
    calls = sum(count_text(json.dumps(c.input)) for c in item.calls)
    return count_text(item.text) + calls


def source_key(path: Path, session_id: str) -> str:
    """What a watched session is found again by: the file and its recorded session id."""
    return f"{path.resolve()}#{session_id}"


def _signature(item: Item) -> tuple[Any, ...]:
    usage = item.usage.model_dump() if item.usage else None
    return (
        item.kind,
        item.line,
        item.text,
        tuple((c.id, c.name) for c in item.calls),
        item.tool_use_id,
        item.is_error,
        repr(usage),
        item.pre_tokens,
    )


@dataclass
class Update:
    """One look at the file that found something new."""

    records: int
    """Records read since the last update (a look that found no conversation yet reports
    none: its records come with the next update)."""
    figures: Figures
    events: list[str]
    """``update``, and ``compaction`` / ``warning`` when one landed or started."""
    session_id: int | None
    reset: bool = False
    rewritten: bool = False
    """The session's content was written again whole (its earlier part changed)."""


class Follower:
    """One Claude Code session file or Codex rollout, followed: parsed after each look, and
    kept stored."""

    def __init__(
        self,
        path: Path,
        settings: Settings,
        store: Store | None = None,
        workspace: str = "",
        parent: int | None = None,
        compact_limit: int | None = None,
    ) -> None:
        self.path = path
        self.compact_limit = compact_limit
        """Codex's ``model_auto_compact_token_limit`` (from its config), if set."""
        self.fmt = ""
        """``claude-code`` or ``codex``: the format of the file's first record."""
        self.settings = settings
        self.store = store
        self.workspace = workspace or str(path.parent)
        self.parent = parent
        self.tail = FileTail(path)
        self.records: list[claude_code.Record] = []
        self.lines = 0
        self.bad: Counter[str] = Counter()
        self.warnings: list[str] = []
        self.parsed: Parsed | None = None
        self.session: Session | None = None
        self._stored: list[tuple[Any, ...]] = []
        self._resume_at = 0
        self._resume_round = 0
        self._round_starts: list[int] = []
        self._compactions = 0
        self._warned = False
        self._unreported = 0
        self._pending: bool | None = None  # None: never saved yet
        self.children: dict[Path, Follower] = {}
        """Subagents (``<session>/subagents/agent-*.jsonl``), each followed as its own
        session linked to this one."""

    def poll(self) -> Update | None:
        """Read what was appended; parse, measure and store when a record arrived."""
        update = self.look()
        if update is not None and self._pending:
            self.save_pending(update)
        return update

    def look(self) -> Update | None:
        """Read what was appended; parse and measure when a record arrived. Stores nothing
        but the first time (the update names its session): :meth:`save_pending` does, after
        the figures went out."""
        chunk = self.tail.read()
        if chunk.reset:
            self.records, self.lines = [], 0
            self.bad, self.warnings = Counter(), []
            self._stored, self._compactions, self._warned = [], 0, False
            self._unreported, self.fmt = 0, ""
        new = 0
        for raw in chunk.lines:
            self.lines += 1
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                self.bad["bad_line"] += 1
                self.warnings.append(f"line {self.lines}: not JSON; left out")
                continue
            if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
                self.bad["bad_line"] += 1
                self.warnings.append(f"line {self.lines}: not a session record; left out")
                continue
            if not self.fmt:
                self.fmt = codex.FORMAT if codex.looks_like(obj) else claude_code.FORMAT
            self.records.append((self.lines, obj))
            new += 1
        self._unreported += new
        started = self._discover_children()
        if not new and not chunk.reset and not started:
            self._poll_children()
            return None
        parsed = self.parse()
        if parsed is None:
            return None
        self.parsed = parsed
        fig = figures(parsed, self.settings, self.compact_limit)
        events = ["update"]
        if fig.compactions > self._compactions:
            events.append("compaction")
        self._compactions = fig.compactions
        if fig.warning and not self._warned:
            events.append("warning")
        self._warned = fig.warning
        if started:
            events.append("subagent")
        update = Update(self._unreported, fig, events, None, chunk.reset)
        self._unreported = 0
        if self.session is None:
            self.save_pending(update)
        else:
            self._pending = True
        update.session_id = self.session.id if self.session else None
        return update

    def save_pending(self, update: Update | None = None) -> None:
        """Store what the last :meth:`look` parsed (and poll the subagents)."""
        if self.parsed is not None and self.store is not None and self._pending is not False:
            rewritten = self.save(self.parsed)
            if update is not None:
                update.rewritten = rewritten
        self._pending = False
        self._poll_children()

    def _discover_children(self) -> int:
        """Follow subagent files that appeared; how many started since the last look.
        (``agent-acompact-*`` is the call that wrote a compaction's summary: not a task.)"""
        folder = self.path.with_suffix("") / "subagents"
        started = 0
        if folder.is_dir():
            for file in sorted(folder.glob("agent-*.jsonl")):
                if file not in self.children and not file.name.startswith("agent-acompact"):
                    self.children[file] = Follower(
                        file, self.settings, None, self.workspace, parent=None
                    )
                    started += 1
        return started

    def _poll_children(self) -> None:
        for child in self.children.values():
            if self.store is not None and child.store is None and self.session is not None:
                child.store, child.parent = self.store, self.session.id
                child.tail = FileTail(child.path)  # read again, to be stored from the start
                child.records, child.lines = [], 0
            child.poll()

    def parse(self) -> Parsed | None:
        """The records so far through the import parser, checked; None while they hold no
        conversation yet (a file's first records can be hooks and snapshots)."""
        parse_read = codex.parse_read if self.fmt == codex.FORMAT else claude_code.parse_read
        try:
            parsed = parse_read(
                list(self.records),
                self.lines,
                self.path.name,
                Counter(self.bad),
                list(self.warnings),
            )
            if check(parsed):
                return None
        except ImportError_:
            return None
        return parsed

    def save(self, parsed: Parsed) -> bool:
        """Store what changed since the last save; True when it was written again whole."""
        store = self.store
        assert store is not None
        sigs = [_signature(i) for i in parsed.items]
        common = 0
        for old, new in zip(self._stored, sigs, strict=False):
            if old != new:
                break
            common += 1
        with store.begin_write():
            if self.session is None:
                key = source_key(self.path, parsed.source_session)
                self.session = store.session_for_source(key) or store.create_session(
                    workspace=parsed.cwd or self.workspace,
                    title=f"watch: {parsed.title[:60]}",
                    provider="import",
                    strategy=self.settings.strategy,
                    parent_session_id=self.parent,
                    agent_id=parsed.agent_id,
                    source=key,
                    params=strategy_params(self.settings, self.settings.strategy),
                    origin=session_origin(self.settings),
                )
                self._stored = []
            whole = not self._stored or common < self._resume_at
            if whole:
                store.clear_session(self._sid)
                start, rounds, live, observations = 0, 0, [], []
                self._round_starts = []
            else:
                start, rounds = self._resume_at, self._resume_round
                store.drop_rounds(self._sid, rounds + 1)
                live = store.history(self._sid).messages
                ids = {m.id for m in live}
                observations = [o for o in store.observations(self._sid) if o.message_id in ids]
                self._round_starts = [p for p in self._round_starts if p < start]
            tail = Parsed(fmt=parsed.fmt, items=parsed.items[start:], title=parsed.title)
            tail.cwd = parsed.cwd
            report = write(
                store,
                tail,
                self.workspace,
                self.settings,
                resume=Resume(self.session, rounds, live, observations),
            )
            if whole and parsed.items and parsed.items[0].model:
                store.update_session(self._sid, model=parsed.items[0].model)
        self._round_starts += [start + p for p in report.round_starts]
        self._stored = sigs
        self._resume_from(parsed.items)
        return whole

    @property
    def _sid(self) -> int:
        assert self.session is not None and self.session.id is not None
        return self.session.id

    def _resume_from(self, items: list[Item]) -> None:
        """Where the next save starts: the last round (stored again as it grows), or just
        after a compaction that no round follows yet."""
        last_start = self._round_starts[-1] if self._round_starts else 0
        summaries = [n for n, i in enumerate(items) if i.kind == "summary"]
        if summaries and summaries[-1] > last_start:
            self._resume_at, self._resume_round = summaries[-1] + 1, len(self._round_starts)
        elif self._round_starts:
            self._resume_at, self._resume_round = last_start, len(self._round_starts) - 1
        else:
            self._resume_at, self._resume_round = 0, 0
