"""Following a session file another agent is still writing (``ctxscope watch``).

:class:`~engine.recordings.file_tail.FileTail` reads only the bytes appended since its last
look (:mod:`engine.recordings.file_tail`); it opens the file for reading only: nothing is ever
written to it.

:class:`Follower` turns those lines into records and parses them with the importer's own
parser (:func:`engine.recordings.claude_code.parse_read` or
:func:`engine.recordings.codex.parse_read`, the one parser of each format, used both by
``import`` and here; the first record says which; for Claude Code through
:class:`~engine.recordings.claude_code_follow.TailParser`, which parses only the records from
the last round's input on and gives the same items), computes the figures ``watch`` shows
(:class:`Figures`), and, given a store, keeps one session in step with the file. The session
is found again by its source key (the file's path and the recording's session id), so
watching the same file again updates it instead of adding another. Only the last round is
stored again as it grows (the ended rounds stay as written); when an earlier part of the
parsed conversation changed (the agent rewound, or the chain was rewritten), the session's
content is written again whole, in one transaction; a file replaced by another recording
gives the session that recording's title and workspace.

``watch`` is never silent about a file: lines are read by the importer's tolerant reader
(:class:`~engine.recordings.base.JsonLines`), and what the follower cannot read (yet) is
said in :attr:`Follower.notices`, in the import report's words: a file that holds no
conversation yet (and what it holds), records of kinds this version does not read, a file
that cannot be opened.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.compaction.ledger import FILE_KINDS
from engine.config import Settings, session_origin
from engine.messages.tokens import BLOCK_OVERHEAD, count_text, has_text
from engine.models import Session
from engine.params import strategy_params
from engine.recordings import claude_code, codex
from engine.recordings.base import ImportError_, Item, JsonLines, Parsed
from engine.recordings.claude_code_chain import Record
from engine.recordings.claude_code_follow import TailParser
from engine.recordings.degenerate import session_flags, warning_lines
from engine.recordings.file_tail import FileTail
from engine.recordings.own_agent import auto_compact_at, context_of
from engine.recordings.writer import Resume, check, write
from engine.store import Store


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
    for item in items:
        if item.kind == "summary":
            out.compactions += 1
        else:
            out.messages += 1
        out.tool_calls += len(item.calls)
    # The last usage (or compaction) from the end: what comes after it is counted locally.
    last = next(
        (
            n
            for n in range(len(items) - 1, -1, -1)
            if (items[n].kind == "assistant" and items[n].usage) or items[n].kind == "summary"
        ),
        -1,
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
        base = context_of(usage)
    elif last >= 0:
        base = count_text(items[last].text)
    out.context_tokens = base + sum(_tokens(i) for i in items[last + 1 :])
    out.compact_at = auto_compact_at(parsed.fmt, out.context_window, settings, compact_limit)
    out.until_compact = max(0, out.compact_at - out.context_tokens)
    out.warning = out.context_tokens >= settings.watch_warn_ratio * out.compact_at
    return out


def with_files(fidelity: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """A stored fidelity (kept / total by ledger kind) with ``files``: read and changed
    together, the figure the reports name first."""
    files = [fidelity[k] for k in FILE_KINDS if k in fidelity]
    out = dict(fidelity)
    out["files"] = {
        "kept": sum(f.get("kept", 0) for f in files),
        "total": sum(f.get("total", 0) for f in files),
    }
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
        repr(item.origin),
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
    compaction: dict[str, Any] | None = None
    """With a ``compaction`` event, the last compaction's figures
    (:meth:`Follower.compaction_figures`)."""


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
        self.records: list[Record] = []
        self.lines = 0
        self.reader = JsonLines()
        """The tolerant line reader: what it left out, named in the notices and the parse."""
        self._tail_parser: TailParser | None = None
        """Claude Code: the parse that costs what was appended (the whole-file parser's
        items, :mod:`engine.recordings.claude_code_follow`)."""
        self.notices: list[str] = []
        """What the follower could not read (yet), in the import report's words, since the
        last :meth:`take_notices`: ``watch`` is never silent about a file."""
        self._said: set[str] = set()
        self.parsed: Parsed | None = None
        self.session: Session | None = None
        self._stored: list[tuple[Any, ...]] = []
        self._resume_at = 0
        self._resume_round = 0
        self._round_starts: list[int] = []
        self._compactions = 0
        self._warned = False
        self.figures: Figures | None = None
        """The figures of the last update: the state every ``--jsonl`` line carries."""
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
        if chunk.error:
            self._notice(f"{self.path}: {chunk.error}")
        if chunk.reset:
            self.records, self.lines, self.reader = [], 0, JsonLines()
            self._tail_parser = None
            self._stored, self._compactions, self._warned = [], 0, False
            self._unreported, self.fmt, self._said = 0, "", set()
        new = 0
        for raw in chunk.lines:
            self.lines += 1
            if raw is None:
                self.reader.lines += 1
                self.reader.not_read.line("line over 32 MB", self.lines)
                continue
            obj = self.reader.feed(self.lines, raw.decode("utf-8", errors="replace"))
            if obj is None:
                continue
            if not isinstance(obj.get("type"), str):
                self.reader.not_read.line("not a record (no type)", self.lines)
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
        self.figures = fig
        # Stored at once the first time (the update names its session) and when a
        # compaction landed (its event carries the stored fidelity, the figure ``show``
        # gives); otherwise after the figures went out (:meth:`save_pending`).
        self._pending = True
        if self.session is None or "compaction" in events:
            self.save_pending(update)
        update.session_id = self.session.id if self.session else None
        if "compaction" in events:
            update.compaction = self.compaction_figures(parsed)
        return update

    def compaction_figures(self, parsed: Parsed) -> dict[str, Any]:
        """The last recorded compaction: its trigger, the context the agent recorded before it
        (``pre_tokens``), the summary's tokens, and, once stored, ctxscope's fidelity of it:
        of the ledger items of what it archived, how many the summary keeps, by kind, and
        ``files`` (read and changed together); None without a store."""
        summary = next(i for i in reversed(parsed.items) if i.kind == "summary")
        out: dict[str, Any] = {
            "trigger": summary.trigger,
            "pre_tokens": summary.pre_tokens,
            "summary_tokens": BLOCK_OVERHEAD + count_text(summary.text)
            if has_text(summary.text)
            else 0,
            "fidelity": None,
        }
        out["degenerate"] = []
        if self.store is not None and self.session is not None:
            done = [c for c in self.store.compactions(self._sid) if c.undone_at is None]
            if done and done[-1].fidelity is not None:
                out["summary_tokens"] = done[-1].tokens_after
                out["fidelity"] = with_files(done[-1].fidelity)
            if done:
                # The compaction that just landed, if degenerate: in the event, and a notice
                # (the warning line ``watch`` and the workbench show).
                flags = [
                    f
                    for f in session_flags(self.store, self._sid, self.settings)
                    if f.compaction_id == done[-1].id
                ]
                out["degenerate"] = [f.as_json() for f in flags]
                self.notices += warning_lines(flags)
        return out

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
        conversation yet (a file's first records can be hooks and snapshots), said in a
        notice."""
        not_read = self.reader.not_read.copy()
        try:
            if self.fmt == codex.FORMAT:
                records = codex.known(list(self.records), not_read)
                reader = JsonLines()
                reader.lines, reader.skipped = self.reader.lines, Counter(self.reader.skipped)
                reader.warnings, reader.not_read = list(self.reader.warnings), not_read
                parsed = codex.parse_records(records, reader, self.path.name)
            else:
                if self._tail_parser is None:
                    self._tail_parser = TailParser(self.path.name)
                parsed = self._tail_parser.parse(
                    self.records,
                    self.reader.lines,
                    Counter(self.reader.skipped),
                    list(self.reader.warnings),
                    not_read,
                )
            problems = self._tail_parser.check(parsed) if self._tail_parser else check(parsed)
        except ImportError_ as exc:
            said = "; ".join(exc.problems).replace(
                " holds no conversation ", " holds no conversation yet "
            )
            self._notice(f"{self.path}: {said}")
            return None
        if problems:
            self._notice(f"{self.path}: cannot be followed yet: {'; '.join(problems)}")
            return None
        for sentence in parsed.not_read_sentences():
            self._notice(f"{self.path}: {sentence}")
        return parsed

    def _notice(self, text: str) -> None:
        """Say ``text`` once (a file that stays as it is is not reported at every look)."""
        if text not in self._said:
            self._said.add(text)
            self.notices.append(text)

    def take_notices(self) -> list[str]:
        """The notices since the last call (and its subagents')."""
        out, self.notices = self.notices, []
        for child in self.children.values():
            out += child.take_notices()
        return out

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
                # Only the live rounds' observations (a long session holds thousands more).
                live_rounds = sorted({m.meta.round for m in live if m.meta.round is not None})
                observations = [
                    o
                    for r in live_rounds
                    for o in store.observations(self._sid, r)
                    if o.message_id in ids
                ]
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
            # Another recording written in the file's place, or a title the agent wrote
            # later (``ai-title``): the session says what it now holds.
            title = f"watch: {parsed.title[:60]}"
            if title != self.session.title:
                self.session = store.update_session(self._sid, title=title)
            workspace = parsed.cwd or self.workspace
            if whole and workspace != self.session.workspace:
                self.session = store.update_session(self._sid, workspace=workspace)
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
