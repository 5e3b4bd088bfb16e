"""Following a session file another agent is still writing (``ctxscope watch``).

:class:`~engine.recordings.file_tail.FileTail` reads only the bytes appended since its last
look (:mod:`engine.recordings.file_tail`); it opens the file for reading only: nothing is ever
written to it.

:class:`Follower` turns those lines into records, tells the agent from the first records it
reads (:func:`engine.recordings.agents.detect_records`) and parses them with that agent's tail
parser (:meth:`~engine.recordings.agents.protocol.AgentFormat.tail_parser`: the importer's own
parser, used both by ``import`` and here; for Claude Code through
:class:`~engine.recordings.claude_code_follow.TailParser`, which parses only the records from
the last round's input on and gives the same items), computes the figures ``watch`` shows
against the agent's own window and auto-compact point (:class:`Figures`;
:func:`engine.recordings.agents.context_rules_for_parsed`), and, given a store, keeps one
session in step with the file: its model, agent and version as ``import`` stores them. The
session is found again by its source key (the file's path and the recording's session id), so
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

import copy
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.compaction.ledger import FILE_KINDS
from engine.figures import call_context
from engine.messages.tokens import BLOCK_OVERHEAD, count_text, has_text
from engine.models import Message, Observation, Session
from engine.recordings import agents, claude_code
from engine.recordings.agents.protocol import HEAD_RECORDS, AgentFormat, ContextRules, TailParser
from engine.recordings.base import ImportError_, Item, JsonLines, Parsed
from engine.recordings.degenerate import session_flags, warning_lines
from engine.recordings.file_tail import FileTail
from engine.recordings.follow_tally import Counts, ItemTally, common_prefix
from engine.recordings.followed_figures import FollowedFigures
from engine.recordings.identity import stored_recording, watched_source
from engine.recordings.importing import drop_session, imported_source
from engine.recordings.writer import Resume, archives_earlier_file, recorded_model, write
from engine.settings.config import Settings, session_origin
from engine.settings.params import strategy_params
from engine.store import Store


@dataclass
class Figures:
    """What ``watch`` reports after each update (``--jsonl`` prints these)."""

    messages: int = 0
    tool_calls: int = 0
    context_tokens: int = 0
    """The context at the agent's last API call as recorded (input, cache read, cache write,
    output: the figure every surface prints, :class:`engine.figures.SessionFigures`); after a
    compaction with no call since, the summary and what followed it, counted locally."""
    next_request_tokens: int = 0
    """The next request as the agent will send it, estimated: the context above plus what was
    recorded after the last call (results, the user's next message), counted locally."""
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


def figures(
    parsed: Parsed,
    settings: Settings,
    env: Mapping[str, str] | None = None,
    rules: ContextRules | None = None,
    counts: Counts | None = None,
) -> Figures:
    """The figures of a parsed session: its last usage and what came after it, against its
    agent's own window and auto-compact point
    (:func:`engine.recordings.agents.context_rules_for_parsed`; ``env``: where the agent's
    settings are found, this process's environment when None). ``counts``: its items' counts,
    where the caller kept them (:class:`~engine.recordings.follow_tally.ItemTally`)."""
    items = parsed.items
    counts = counts or ItemTally().counts(items)
    rules = rules or agents.context_rules_for_recorded(
        parsed.fmt, counts.recorded(parsed), settings, env
    )
    out = Figures(context_window=rules.window)
    out.messages, out.tool_calls = counts.messages, counts.tool_calls
    out.compactions = counts.compactions
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
        base = call_context(usage, items[last].input_estimate)
    elif last >= 0:
        base = count_text(items[last].text)
    out.next_request_tokens = base + sum(_tokens(i) for i in items[last + 1 :])
    measured = last >= 0 and items[last].kind == "assistant"
    out.context_tokens = base if measured else out.next_request_tokens
    # An agent that does not compact on its own: its window is where the context ends.
    out.compact_at = rules.auto_compact_at or rules.window
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
        repr(item.recorded_call),  # the call that wrote a summary, once its file is read
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
    """One session file of an agent whose format can be followed (Claude Code, Codex:
    :meth:`~engine.recordings.agents.protocol.AgentFormat.tail_parser`), parsed after each
    look, and kept stored."""

    def __init__(
        self,
        path: Path,
        settings: Settings,
        store: Store | None = None,
        workspace: str = "",
        parent: int | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.path = path
        self.env = env
        """Where the agent's own settings are found (``HOME``, ``CODEX_HOME``…; None: this
        process's environment)."""
        self.agent: AgentFormat | None = None
        """The agent whose format the file's first records are in (None: not told yet)."""
        self.settings = settings
        self.store = store
        self.workspace = workspace or str(path.parent)
        self.parent = parent
        self.tail = FileTail(path)
        self.copied_from: Follower | None = None
        """The session a subagent file belongs to: the records it copied from there (a side
        question, a fork) are not its own (:func:`claude_code.own_records`)."""
        self.records: list[tuple[int, dict[str, Any]]] = []
        self.lines = 0
        self.reader = JsonLines()
        """The tolerant line reader: what it left out, named in the notices and the parse."""
        self._head: list[dict[str, Any]] = []
        """The first records read while the agent is not told yet (what tells it)."""
        self._tail_parser: TailParser | None = None
        """The agent's parse of the records so far (Claude Code's costs what was appended,
        :mod:`engine.recordings.claude_code_follow`)."""
        self.notices: list[str] = []
        """What the follower could not read (yet), in the import report's words, since the
        last :meth:`take_notices`: ``watch`` is never silent about a file."""
        self._said: set[str] = set()
        self.parsed: Parsed | None = None
        self.session: Session | None = None
        self._stored: list[tuple[Any, ...]] = []
        """The signature of each item stored (:func:`_signature`), in order."""
        self._signed: list[Item] = []
        """The items those signatures are of, as the parser gave them."""
        self._summaries: list[int] = []
        """Where the summaries are among them."""
        self._live: list[Message] | None = None
        """The stored messages no compaction archived of rounds up to :attr:`_live_upto`,
        as the last save went on from them, and their observations (None: read from the
        store at the next save)."""
        self._live_observations: list[Observation] = []
        self._live_upto = 0
        self._facts: tuple[dict[str, Any], list[dict[str, Any]]] | None = None
        """The recorded facts and hidden prefix stored with the first user message (the
        agent's rules read them back: Codex's window); other ones write the session again."""
        self._resume_at = 0
        self._resume_round = 0
        self._round_starts: list[int] = []
        self._compactions = 0
        self._warned = False
        self._tally = ItemTally()
        """What the figures count over the items, kept from one look to the next."""
        self.figures: Figures | None = None
        """The figures of the last update: the state every ``--jsonl`` line carries."""
        self._unreported = 0
        self._pending: bool | None = None  # None: never saved yet
        self.stored_figures = FollowedFigures()
        """The session's figures, summed as it is stored and kept with it at each save."""
        self._generation: int | None = None
        """The generation of the session's stored figures the last save left (any later
        write of the session moves it on)."""
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
            self._unreported, self.agent, self._said = 0, None, set()
            self._head = []
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
            if self.agent is None and len(self._head) < HEAD_RECORDS:
                self._head.append(obj)
            if not isinstance(obj.get("type"), str):
                self.reader.not_read.line("not a record (no type)", self.lines)
                continue
            self.records.append((self.lines, obj))
            new += 1
        self._unreported += new
        if self.agent is None and self._head and not self._tell_agent():
            return None
        started = self._discover_children()
        if not new and not chunk.reset and not started:
            self._poll_children()
            return None
        parsed = self.parse()
        if parsed is None:
            return None
        self.parsed = parsed
        fig = figures(parsed, self.settings, self.env, counts=self._tally.counts(parsed.items))
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
            **(summary.compaction or {}),
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
                        file, self.settings, None, self.workspace, parent=None, env=self.env
                    )
                    self.children[file].copied_from = self
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
        if self._tail_parser is None:
            return None
        try:
            records = self.records
            skipped, warnings = Counter(self.reader.skipped), list(self.reader.warnings)
            if self.copied_from is not None:  # a subagent file: what it copied is not its own
                copied = claude_code.record_keys(self.copied_from.records)
                records = claude_code.own_records(records, copied, skipped, warnings)
            parsed = self._tail_parser.parse(
                records, self.reader.lines, skipped, warnings, not_read
            )
            problems = self._tail_parser.check(parsed)
        except ImportError_ as exc:
            said = "; ".join(exc.problems).replace(
                " holds no conversation ", " holds no conversation yet "
            )
            self._notice(f"{self.path}: {said}")
            return None
        if problems:
            self._notice(f"{self.path}: cannot be followed yet: {'; '.join(problems)}")
            return None
        # Said when a kind (or a why) is new, not at every look that adds a line of one
        # already said: the sentences name counts and lines, which grow with the file.
        named = {f"kind:{k}" for k in parsed.not_read.kinds} | set(parsed.not_read.lines)
        if not named <= self._said:
            self._said |= named
            for sentence in parsed.not_read_sentences():
                self._notice(f"{self.path}: {sentence}")
        return parsed

    def _tell_agent(self) -> bool:
        """Tell the agent from the first records read (:func:`engine.recordings.agents.
        detect_records`) and take its tail parser; False (said in a notice) while no agent
        claims them, or when the agent's files cannot be followed."""
        self.agent = agents.detect_records(self._head)
        followed = ", ".join(agents.followable())
        if self.agent is None:
            self._notice(
                f"{self.path}: holds no record of a format watch follows yet "
                f"({len(self._head)} records read; watch follows {followed})"
            )
            return False
        # One set before the first look stays (bench_follow_parse measures another parse).
        self._tail_parser = self._tail_parser or self.agent.tail_parser(self.path)
        if self._tail_parser is None:
            self._notice(
                f"{self.path}: is a recording of {self.agent.label}, which watch does not "
                f"follow (it follows {followed}); import it instead"
            )
            self._head = []
            return False
        self._head = []
        return True

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
        try:
            return self._save(parsed)
        except BaseException:
            # rolled back: what the follower kept of the session is read again next time
            self._generation, self._live = None, None
            self.stored_figures.forget()
            raise

    def _save(self, parsed: Parsed) -> bool:
        store = self.store
        assert store is not None
        sigs, summaries = self._signatures(parsed.items)
        common = 0
        for old, new in zip(self._stored, sigs, strict=False):
            if old is not new and old != new:
                break
            common += 1
        with store.begin_write():
            if self.session is None:
                key = watched_source(self.path, parsed.source_session)
                self.session = self._held(parsed, key) or store.create_session(
                    workspace=parsed.cwd or self.workspace,
                    title=f"watch: {parsed.title[:60]}",
                    provider="import",
                    strategy=self.settings.strategy,
                    parent_session_id=self.parent,
                    agent_id=parsed.agent_id,
                    source=key,
                    params=strategy_params(self.settings, self.settings.strategy),
                    origin=session_origin(self.settings),
                    agent=parsed.fmt,
                    agent_version=parsed.agent_version,
                )
                self._stored, self._live = [], None
            else:
                self._written_elsewhere()
            facts = (parsed.recorded, parsed.hidden)
            # A result now where the last stored round began (an input delivered from the
            # queue moves after the results its step gets later) belongs to an earlier
            # round: from there the stored rounds no longer hold; the file is stored again.
            moved = common == self._resume_at < len(sigs) and parsed.items[common].kind == "result"
            whole = not self._stored or common < self._resume_at or facts != self._facts or moved
            live: list[Message]
            observations: list[Observation]
            if whole:
                store.clear_session(self._sid)
                start, rounds, live, observations = 0, 0, [], []
                self._round_starts = []
            else:
                start, rounds = self._resume_at, self._resume_round
                store.drop_rounds(self._sid, rounds + 1)
                live, observations = self._live_until(rounds)
                self._round_starts = [p for p in self._round_starts if p < start]
            tail = Parsed(fmt=parsed.fmt, items=parsed.items[start:], title=parsed.title)
            tail.cwd = parsed.cwd
            if start == 0:  # kept with the first user message, as import keeps them
                tail.recorded, tail.hidden = parsed.recorded, parsed.hidden
            report = write(
                store,
                tail,
                self.workspace,
                self.settings,
                resume=Resume(self.session, rounds, live, observations),
            )
            # The model an assistant record names (the first items are the user's input): the
            # same as ``import`` stores, as soon as the file names one.
            model = recorded_model(parsed)
            if model and model != self.session.model:
                self.session = store.update_session(self._sid, model=model)
            if parsed.agent_version and parsed.agent_version != self.session.agent_version:
                self.session = store.update_session(self._sid, agent_version=parsed.agent_version)
            # Another recording written in the file's place, or a title the agent wrote
            # later (``ai-title``): the session says what it now holds.
            title = f"watch: {parsed.title[:60]}"
            if title != self.session.title:
                self.session = store.update_session(self._sid, title=title)
            workspace = parsed.cwd or self.workspace
            if whole and workspace != self.session.workspace:
                self.session = store.update_session(self._sid, workspace=workspace)
            # The figures every surface prints, brought up to date by the rows written and
            # kept with the session: ``watch --jsonl`` prints the kept copy with each update.
            self._generation = self.stored_figures.stored(
                store,
                self.session,
                self.settings,
                None if whole else rounds + 1,
                self.env,
                None if report.compactions else report.tokens_stored,
            )
        self._round_starts += [start + p for p in report.round_starts]
        self._stored, self._signed, self._summaries = sigs, list(parsed.items), summaries
        if report.compactions:  # it archived messages: read again at the next save
            self._live = None
        else:  # the rounds up to ``rounds`` stay as they are; the later ones are read if kept
            self._live, self._live_observations, self._live_upto = live, observations, rounds
        self._facts = copy.deepcopy((parsed.recorded, parsed.hidden))
        self._resume_from(parsed.items)
        return whole

    def _written_elsewhere(self) -> None:
        """In the save's transaction: when the session is not as the last save left it (the
        generation of its figures moved on: another process wrote it), what the follower kept
        of it (its live messages, its figures' sums) is read again from the store."""
        store = self.store
        assert store is not None
        read = store.stored_figures([self._sid]).get(self._sid)
        if self._generation is None or read is None or read.generation != self._generation:
            self._live = None
            self.stored_figures.forget()

    def _signatures(self, items: list[Item]) -> tuple[list[tuple[Any, ...]], list[int]]:
        """Each item's :func:`_signature`, and where the summaries are. The items the parser
        kept from the last save (the same objects from the start: Claude Code's tail parser
        keeps those before the last round's input) keep theirs, so a save signs what was
        parsed again, not the whole session; but a summary is signed again, the call that
        wrote it being attached anew at each look (``agents.claude_code._FollowedSession``)."""
        kept = min(common_prefix(self._signed, items), len(self._stored))
        sigs = self._stored[:kept]
        summaries = [n for n in self._summaries if n < kept]
        for n in summaries:
            sigs[n] = _signature(items[n])
        for n in range(kept, len(items)):
            sigs.append(_signature(items[n]))
            if items[n].kind == "summary":
                summaries.append(n)
        return sigs, summaries

    def _live_until(self, rounds: int) -> tuple[list[Message], list[Observation]]:
        """The stored messages no compaction archived of rounds up to ``rounds`` (the later
        ones were just dropped, to be written again) and their observations: those the last
        save went on from, and the rounds stored since that are kept now, read (a save of
        the same last round reads nothing); read whole from the store when none were kept."""
        store = self.store
        assert store is not None
        if self._live is None:
            live = store.history(self._sid).messages
            ids = {m.id for m in live}
            # Only the live rounds' observations (a long session holds thousands more).
            live_rounds = sorted({m.meta.round for m in live if m.meta.round is not None})
            return live, [
                o
                for r in live_rounds
                for o in store.observations(self._sid, r)
                if o.message_id in ids
            ]
        if rounds < self._live_upto:
            live = [m for m in self._live if m.meta.round is None or m.meta.round <= rounds]
            kept = {m.id for m in live}
            return live, [o for o in self._live_observations if o.message_id in kept]
        ended = range(self._live_upto + 1, rounds + 1)
        fresh = [m for r in ended for m in store.round_messages(self._sid, r)]
        # by their messages, not by round: a round's are found among all the session's
        tools = [m.id for m in fresh if m.id is not None and m.role == "tool"]
        observations = store.observations_for_messages(tools) if tools else []
        return self._live + fresh, self._live_observations + observations

    def _held(self, parsed: Parsed, key: str) -> Session | None:
        """The session already holding this file's recording (one recording, one session):
        the one a watch of it stored, or the one an import stored it in — followed from now
        on (found again by ``key``), its subagents followed again from their own files."""
        store = self.store
        assert store is not None
        if self.parent is not None:  # a subagent's file: found by its own key only
            return store.session_for_source(key)
        held = stored_recording(
            store, self.path, 0, parsed.source_session, imported_source(self.path, 0)
        )
        if held is None or held.id is None or held.source == key:
            return held
        for child in store.child_sessions(held.id):
            drop_session(store, child)
        return store.update_session(held.id, source=key)

    @property
    def _sid(self) -> int:
        assert self.session is not None and self.session.id is not None
        return self.session.id

    def _resume_from(self, items: list[Item]) -> None:
        """Where the next save starts: the last round (stored again as it grows), or just
        after a compaction that no round follows yet."""
        last_start = self._round_starts[-1] if self._round_starts else 0
        # the last summary, looked for from the end down to the last round's start
        summary = next(
            (n for n in range(len(items) - 1, last_start - 1, -1) if items[n].kind == "summary"),
            -1,
        )
        if summary >= 0 and (
            summary > last_start
            or (summary == last_start and archives_earlier_file(items[last_start]))
        ):
            self._resume_at, self._resume_round = summary + 1, len(self._round_starts)
        elif self._round_starts:
            self._resume_at, self._resume_round = last_start, len(self._round_starts) - 1
        else:
            self._resume_at, self._resume_round = 0, 0
