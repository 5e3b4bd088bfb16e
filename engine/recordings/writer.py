"""Store a parsed recording as a session: rounds, steps, tool pairs, observations, usage.

Like a live round (``Agent._run_tool``), each tool result is stored twice: the ``tool`` message
holds the A3-compressed form (:class:`~engine.compaction.tool_results.ToolResultCompressor` over
the envelope
:mod:`engine.recordings.envelopes` rebuilds) and an :class:`Observation` holds the full text.

:func:`check` runs first, over the items only, and finds every problem (results answering no
call, a conversation that does not start with the user); it also renames repeated tool_use
ids (``toolu_x`` → ``toolu_x~2``, with a warning: the API refuses duplicates, and refusing
would lose real sessions where a resumed run reused an id). :func:`write` then stores
everything in one ``BEGIN IMMEDIATE`` transaction, the ended rounds in a few statements
(:meth:`Store.append_rounds`) rather than a few per round.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from engine.compaction.ledger import fidelity, fidelity_json
from engine.compaction.tool_results import ToolResultCompressor
from engine.messages.tokens import (
    BLOCK_OVERHEAD,
    compact_json,
    count_summary,
    count_text,
    count_thinking,
    ensure_counted,
    has_text,
    thinking_texts,
)
from engine.models import (
    MISSING_RESULT,
    Compaction,
    Message,
    MessageMeta,
    Observation,
    RoundStatus,
    Session,
    Summary,
    ToolCall,
    Trigger,
    Usage,
    UsageRecord,
)
from engine.recordings.base import PROMPT_ROLES, ImportError_, ImportReport, Item, Parsed
from engine.recordings.degenerate import session_flags, warning_lines
from engine.recordings.envelopes import envelope
from engine.recordings.repeated import remember_repeated, repeated_digest, repeated_texts
from engine.settings.config import Settings, session_origin
from engine.settings.params import strategy_params
from engine.store import Store, StoreError

CONTINUED = "(The conversation continues after a compaction.)"
"""The user message of a round that a recorded compaction left without one."""


def recorded_model(parsed: Parsed) -> str:
    """The model a recorded session is stored with: the one the recording names for the
    session, else the first one an assistant step names (``import`` and ``watch`` alike)."""
    return parsed.model or next((i.model for i in parsed.items if i.model), "")


def archives_earlier_file(summary: Item) -> bool:
    """Whether ``summary``, met with nothing stored before it, is an agent's compaction whose
    conversation is in an earlier file (a recorded compaction's figures come with it), not
    the summary a continued session starts from: it is stored as a compaction of a round of
    its own (:func:`before_file`), which the next round never joins."""
    return summary.pre_tokens is not None or bool(summary.compaction)


def before_file(summary: Item) -> str:
    """The user message standing for what a compaction at a file's start compacted (the
    conversation before it is in an earlier file, or nowhere)."""
    size = f" ({summary.pre_tokens:,} tokens by the agent's count)" if summary.pre_tokens else ""
    return f"(The conversation before this compaction{size} is not in this file.)"


def check(parsed: Parsed) -> list[str]:
    """Problems that make ``parsed`` unstorable; renames duplicate tool_use ids in place."""
    problems: list[str] = []
    seen: dict[str, int] = {}
    pending: dict[str, str] = {}  # recorded id -> stored id, awaiting a result
    started = False
    orphans: list[Item] = []
    for item in parsed.items:
        if item.kind == "summary":
            pending.clear()
            started = True  # a continued session may go on with the assistant
            continue
        if not started:
            if item.kind != "user" or item.demonstration:
                if item.kind == "user":
                    continue  # demonstrations wait for the task
                problems.append(f"line {item.line}: the conversation must start with a user input")
                break
            started = True
        if item.kind == "user":
            pending.clear()
        elif item.kind == "assistant":
            pending.clear()
            for i, call in enumerate(item.calls):
                n = seen.get(call.id, 0) + 1
                seen[call.id] = n
                new_id = call.id if n == 1 else f"{call.id}~{n}"
                if new_id != call.id:
                    parsed.warnings.append(
                        f"line {item.line}: tool_use id {call.id} repeats an earlier one; "
                        f"stored as {new_id}"
                    )
                    item.calls[i] = ToolCall(id=new_id, name=call.name, input=call.input)
                pending[call.id] = new_id
        elif item.kind == "result":
            if item.tool_use_id not in pending and parsed.fmt == "claude-code":
                # Real Claude Code files hold these after a rewind or a compaction: the call
                # they answer is not on the active chain. Dropped, counted, warned.
                orphans.append(item)
                parsed.warnings.append(
                    f"line {item.line}: tool_result for {item.tool_use_id!r} answers no call "
                    "on the active chain; left out"
                )
                continue
            if item.tool_use_id not in pending:
                problems.append(
                    f"line {item.line}: tool_result for {item.tool_use_id!r}, which no "
                    "preceding assistant tool_use awaits"
                )
                continue
            item.tool_use_id = pending.pop(item.tool_use_id)
    if orphans:
        parsed.items = [i for i in parsed.items if all(i is not o for o in orphans)]
        parsed.skipped["orphan_result"] += len(orphans)
    if not started and not problems:
        problems.append("the file holds no user input")
    return problems


def texts_to_count(parsed: Parsed, settings: Settings) -> Iterator[str]:
    """The texts :func:`write` will count for ``parsed`` (already :func:`check`-ed) and its
    subagents: each message's wire texts, every tool result in full and in its history form,
    thinking, recorded summaries. The history import counts them in its worker processes
    (:func:`engine.messages.tokens.given_counts`), so the one writer does not tokenise. A text
    left out here is counted by the writer as before: only the time changes, never a count."""
    compressor = ToolResultCompressor(settings)
    calls: dict[str, ToolCall] = {}
    yield CONTINUED
    yield from repeated_texts(settings.strategy, settings, ())
    yield from (e.get("text") or "" for e in parsed.hidden if e.get("role") in PROMPT_ROLES)
    for item in parsed.items:
        yield item.text
        if item.kind == "user" and item.demonstration:
            yield f"[demonstration]\n{item.text}"
        elif item.kind == "assistant":
            yield from thinking_texts(item.thinking or [])
            for made in item.calls:
                calls[made.id] = made
                yield made.name
                yield compact_json(made.input)
        elif item.kind == "result":
            answered = calls.get(item.tool_use_id or "")
            if answered is not None:
                name = answered.name
                result = envelope(name, answered.input, item.text, item.is_error, item.recorded)
                yield compressor.to_json(name, result)
    for child in parsed.children:
        yield from texts_to_count(child, settings)


class WrittenElsewhere(StoreError):
    """The session changed since this process last stored it: another process writes it (a
    second ``ctxscope watch`` of the same file into the same database)."""


@dataclass
class Resume:
    """Where a session already stored in part goes on (``ctxscope watch``): ``parsed`` holds
    only the items after what is stored, which ended with round ``rounds``."""

    session: Session
    rounds: int
    live: list[Message]
    """The stored messages no compaction archived (a later recorded compaction archives them)."""
    observations: list[Observation]
    """The observations of ``live``."""


def write(
    store: Store,
    parsed: Parsed,
    workspace: str,
    settings: Settings,
    recorded_cwd: bool = False,
    parent: int | None = None,
    resume: Resume | None = None,
    source: str | None = None,
) -> ImportReport:
    """Store ``parsed`` (already :func:`check`-ed) as a new session, in one transaction, then
    its subagents (``parsed.children``) as sessions linked to it.

    With ``recorded_cwd`` the session names the folder the recording names (its ``cwd``) but
    has no workspace: a recording does not choose where tools run, the user gives the folder
    (``Session.workspace_given``, :mod:`engine.session.workspace`). Without it ``workspace``
    is the folder the user gave. With ``resume`` the items go on into that session after its
    stored rounds.
    """
    with store.begin_write():
        if resume is not None:
            session = resume.session
        else:
            folder = parsed.cwd if recorded_cwd else workspace
            session = _new_session(store, parsed, folder, settings, recorded_cwd, parent, source)
        assert session.id is not None
        if resume is not None:
            _check_unchanged(store, session.id, resume.rounds)
        items = _ItemWriter(store, parsed, session, settings, resume)
        items.write_all()
        report = items.finish()
        for child in parsed.children:
            problems = check(child)
            if problems:
                report.warnings.append(
                    f"subagent {child.agent_id or child.title}: not imported: {problems[0]}"
                )
                report.skipped["subagent"] = report.skipped.get("subagent", 0) + 1
                continue
            report.children.append(
                write(store, child, workspace, settings, recorded_cwd, session.id)
            )
    return report


def _new_session(
    store: Store,
    parsed: Parsed,
    workspace: str,
    settings: Settings,
    recorded_cwd: bool,
    parent: int | None,
    source: str | None,
) -> Session:
    """The session a recording is written into (in the caller's transaction)."""
    return store.create_session(
        workspace=workspace,
        workspace_given=not recorded_cwd,
        title=f"import: {parsed.title[:60]}",
        provider="import",
        model=recorded_model(parsed),
        strategy=settings.strategy,
        parent_session_id=parent,
        agent_id=parsed.agent_id,
        params=strategy_params(settings, settings.strategy),
        source=source,
        origin=session_origin(settings),
        agent=parsed.fmt,
        agent_version=parsed.agent_version,
        recorded_id=parsed.source_session,
    )


class _ItemWriter:
    """Writes a recording's items into one session, item by item: rounds opened and closed,
    steps, tool pairs (a call without a result paired with a missing one), observations, usage,
    the recorded compactions; :meth:`finish` stores what waits and the figures after.

    Ended rounds wait in ``ended`` and are written together (a few statements for the whole
    session, see Store.append_rounds) before a compaction, which archives them by id, and at
    the end; so do the observations (linked to their messages by id) and the usage records.
    """

    def __init__(
        self,
        store: Store,
        parsed: Parsed,
        session: Session,
        settings: Settings,
        resume: Resume | None,
    ) -> None:
        assert session.id is not None
        self.store, self.parsed, self.session, self.settings = store, parsed, session, settings
        self.sid = session.id
        self.compressor = ToolResultCompressor(settings)
        report = ImportReport(session=session, fmt=parsed.fmt, records=parsed.records)
        report.skipped = dict(parsed.skipped)
        report.warnings = list(parsed.warnings)
        report.recorded = dict(parsed.recorded)
        self.report = report
        self.index = resume.rounds if resume else 0
        self.step = 0
        self.last_final = False
        self.live: list[Message] = list(resume.live) if resume else []
        """The stored messages no compaction archived."""
        self.pending: dict[str, ToolCall] = {}
        """Calls of the current step without a result yet."""
        self.pending_at: datetime | None = None
        """When the response that made them was recorded: the time a result the recording
        never got is given (not the import's)."""
        self.position = 0
        """Of the item being written, in ``parsed.items``."""
        self.demos: list[Item] = []
        self.batch: list[Message] = []
        """The open round's messages."""
        self.batch_obs: list[tuple[int, Observation]] = []
        """The open round's observations, by their message's place in ``batch``."""
        self.ended: list[tuple[list[Message], RoundStatus, list[tuple[int, Observation]]]] = []
        self.usages: list[UsageRecord] = []
        self.observations: list[Observation] = list(resume.observations) if resume else []
        self.stored_observations = len(self.observations)
        self.round_open = False
        self.resumed = resume is not None

    def write_all(self) -> None:
        for n, item in enumerate(self.parsed.items):
            self.position = n  # read by open_round
            if item.kind == "user":
                self.user(item)
            elif item.kind == "summary":
                self.summary(item)
            elif item.kind == "assistant":
                self.assistant(item)
            else:
                self.result(item)

    # ------------------------------------------------------------------ rounds
    def append(self, msg: Message) -> int:
        tokens = ensure_counted(msg)
        if msg.role != "tool":
            # A recorded text or step costs what its wire form costs; results are added
            # at their full size below.
            self.report.tokens_raw += tokens
        self.batch.append(msg)
        self.report.messages += 1
        return len(self.batch) - 1

    def close_round(self, finished: bool) -> None:
        if not self.round_open:
            return
        status = RoundStatus.FINISHED if finished else RoundStatus.INTERRUPTED
        self.ended.append((self.batch, status, self.batch_obs))
        self.batch, self.batch_obs = [], []
        self.round_open = False

    def write_ended(self) -> None:
        ended = self.ended
        if not ended:
            return
        written = self.store.append_rounds(self.sid, [(msgs, status) for msgs, status, _ in ended])
        for (_, stored), (_, _, round_obs) in zip(written, ended, strict=True):
            self.live.extend(stored)
            for i, obs in round_obs:
                obs.message_id = stored[i].id
                self.observations.append(obs)
        assert written[-1][0].index == self.index, (written[-1][0].index, self.index)
        ended.clear()

    def pair_missing(self) -> None:
        for call in self.pending.values():
            assert self.pending_at is not None  # set with the calls
            self.append(
                Message(
                    role="tool",
                    content=self.compressor.to_json(
                        call.name, envelope(call.name, call.input, MISSING_RESULT, True, None)
                    ),
                    meta=MessageMeta(
                        step=self.step,
                        tool_name=call.name,
                        tool_use_id=call.id,
                        is_error=True,
                        interrupted=True,
                    ),
                    created_at=self.pending_at,
                )
            )
            self.report.missing_results += 1
        self.pending.clear()

    def open_round(self, item: Item, text: str, origin: dict[str, object] | None) -> None:
        self.pair_missing()
        self.close_round(self.last_final)
        self.index, self.step, self.last_final, self.round_open = self.index + 1, 0, False, True
        msg = Message(role="user", content=text, created_at=item.created_at, meta=MessageMeta())
        msg.meta.origin = origin
        self.append(msg)
        self.report.rounds += 1
        self.report.round_starts.append(self.position)

    # ------------------------------------------------------------------ items
    def user(self, item: Item) -> None:
        if item.demonstration:
            self.demos.append(item)
            if not self.round_open:
                return  # they wait for the task, which opens the round
        else:
            first = _first_origin(self.parsed) if not self.index else None
            merged = {**first, **item.origin} if first and item.origin else None
            self.open_round(item, item.text, merged or first or item.origin)
        for demo in self.demos:
            self.append(
                Message(
                    role="user",
                    content=f"[demonstration]\n{demo.text}",
                    meta=MessageMeta(origin={"demonstration": True}),
                    created_at=demo.created_at,
                )
            )
        self.demos.clear()

    def summary(self, item: Item) -> None:
        self.pair_missing()
        self.close_round(self.last_final)  # the next step needs a round of its own
        self.write_ended()
        if not self.live and archives_earlier_file(item):
            # The file begins at the agent's compaction: what it compacted is in an
            # earlier file. A round saying so is what the compaction archives.
            self.open_round(item, before_file(item), {"synthetic": True, "before_file": True})
            self.close_round(True)
            self.write_ended()
        calls = _compaction_calls(item, self.sid, self.index)
        self.usages += calls
        self.report.usage_records += len(calls)
        if self.live:
            _compact(
                self.store,
                self.sid,
                item,
                self.live,
                self.observations,
                self.report,
                self.settings,
                self.parsed.cwd,
            )
        else:
            # A session continued from another starts with the summary of the
            # earlier one: nothing here to archive, so it is the first input.
            self.open_round(item, item.text, {"compact_summary": True})

    def assistant(self, item: Item) -> None:
        if not self.round_open:
            self.open_round(item, CONTINUED, {"synthetic": True})
        self.pair_missing()
        self.step += 1
        self.last_final = not item.calls
        origin: dict[str, object] | None = None
        if item.thinking:
            origin = {"thinking": item.thinking}
            thought = count_thinking(item.thinking)
            self.report.thinking_tokens += thought
            self.report.tokens_raw += thought
        self.append(
            Message(
                role="assistant",
                content=item.text,
                tool_calls=item.calls,
                meta=MessageMeta(step=self.step, final=self.last_final, origin=origin),
                created_at=item.created_at,
            )
        )
        self.pending.update({c.id: c for c in item.calls})
        self.pending_at = item.created_at
        if item.usage is not None:
            self.usages.append(
                UsageRecord(
                    session_id=self.sid,
                    round_index=self.index,
                    step=self.step,
                    usage=item.usage,
                    source="import",
                    created_at=item.created_at,
                    model=item.model,
                    local_estimate=item.input_estimate,
                )
            )
            self.report.usage_records += 1

    def result(self, item: Item) -> None:
        call = self.pending.pop(item.tool_use_id)
        result = envelope(call.name, call.input, item.text, item.is_error, item.recorded)
        compressed = self.compressor.to_json(call.name, result)
        at = self.append(
            Message(
                role="tool",
                content=compressed,
                meta=MessageMeta(
                    step=self.step,
                    tool_name=call.name,
                    tool_use_id=call.id,
                    is_error=item.is_error,
                ),
                created_at=item.created_at,
            )
        )
        full = count_text(item.text)
        self.report.tokens_raw += full
        observation = Observation(
            session_id=self.sid,
            round_index=self.index,
            step=self.step,
            tool_use_id=call.id,
            tool_name=call.name,
            result=result.model_dump(mode="json"),
            text=item.text,
            tokens_full=full,
            tokens_compressed=self.batch[at].tokens or 0,
        )
        self.batch_obs.append((at, observation))
        self.report.observations += 1
        if item.closes_round:
            self.last_final = True

    # ------------------------------------------------------------------ the end
    def finish(self) -> ImportReport:
        """Close the last round, store what waits, and the figures and warnings after."""
        store, sid, report, settings = self.store, self.sid, self.report, self.settings
        parsed = self.parsed
        self.pair_missing()
        self.close_round(parsed.finished if parsed.finished is not None else self.last_final)
        self.write_ended()
        store.add_usages(self.usages)
        store.add_observations(self.observations[self.stored_observations :])
        # History as stored: what no compaction archived, under the summaries still active.
        report.tokens_stored = sum(m.tokens or 0 for m in self.live)
        active = [s for s in store.summaries(sid) if s.active] if report.compactions else []
        report.tokens_stored += sum(count_summary(s) for s in active)
        # What every request of it repeats, so that its `context` needs no tokenizer.
        strategy = self.session.strategy or settings.strategy
        remember_repeated(store, repeated_texts(strategy, settings, active), repeated_digest)
        # and the thinking it keeps, which the workbench's gauge shows (issue 30: no tokenizer)
        thoughts = [(m.meta.origin or {}).get("thinking", []) for m in self.live]
        remember_repeated(store, [t for blocks in thoughts for t in thinking_texts(blocks)])
        _warn_if_thin(parsed, report)
        if report.compactions:
            # Empty, opaque, spiralling... compactions said at once (docs/importing.md).
            flags = session_flags(store, sid, settings, usages=self._usages_as_stored())
            report.warnings += warning_lines(flags)
        return report

    def _usages_as_stored(self) -> list[UsageRecord] | None:
        """The session's usage records as reading them back would give them (a new
        session's are all in hand, in the order stored, their times with a zone as stored);
        None where they must be read (a resumed session, a time without a zone)."""
        if self.resumed:
            return None  # earlier records are stored, not in hand
        if any(u.created_at.tzinfo is None for u in self.usages):
            return None
        return self.usages


_PATH_KEYS = ("file_path", "path", "notebook_path")


def _check_unchanged(store: Store, session_id: int, rounds: int) -> None:
    """Refuse to go on after round ``rounds`` unless that is where the session ends now.

    Two watchers of one file into one database each keep where they stopped; one that stored
    fewer rounds (it had read less of the file) rewrites the session under the other, whose
    next rounds would be numbered from a place that is gone. Inside the write transaction the
    check and the write see the same rounds; the caller's transaction rolls back whole."""
    stored = store.rounds(session_id)
    last = stored[-1].index if stored else 0
    if last != rounds:
        raise WrittenElsewhere(
            f"session {session_id} in {store.where} was changed by another process (it holds "
            f"{last} rounds, this one stored {rounds}): is a second `ctxscope watch` following "
            "the same file into the same database? Stop one of them, or give each its own --db"
        )


def _relative(messages: list[Message], cwd: str) -> list[Message]:
    """``messages`` with tool paths under ``cwd`` made relative to it, as a summary names
    them (Claude Code records absolute paths; its summaries write ``lib/app.ex``)."""
    if not cwd:
        return messages
    head = cwd.rstrip("/") + "/"
    out = []
    for msg in messages:
        if not any(
            str(c.input.get(k, "")).startswith(head) for c in msg.tool_calls for k in _PATH_KEYS
        ):
            out.append(msg)
            continue
        calls = [
            c.model_copy(
                update={
                    "input": {
                        k: (
                            v[len(head) :]
                            if k in _PATH_KEYS and isinstance(v, str) and v.startswith(head)
                            else v
                        )
                        for k, v in c.input.items()
                    }
                }
            )
            for c in msg.tool_calls
        ]
        out.append(msg.model_copy(update={"tool_calls": calls}))
    return out


THIN = 0.5
"""Warn when the stored messages are fewer than this share of the conversation records."""


def _warn_if_thin(parsed: Parsed, report: ImportReport) -> None:
    """One line when far fewer messages were stored than conversation records were read."""
    read = parsed.conversation_records
    if read and report.messages < THIN * read:
        report.warnings.append(
            f"only {report.messages} messages stored from {read} conversation records read; "
            "see records_skipped for where the rest went"
        )


def _first_origin(parsed: Parsed) -> dict[str, object] | None:
    """What the first user message keeps of the recording beyond the conversation."""
    origin: dict[str, object] = {}
    if parsed.recorded:
        origin["recorded"] = parsed.recorded
    if parsed.hidden:  # the prompt's entries with their counts (new dicts: the parse is compared)
        origin["hidden_prefix"] = [
            _counted_entry(e) if e.get("role") in PROMPT_ROLES else e for e in parsed.hidden
        ]
    return origin or None


def _counted_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A prompt entry as stored: with its local count; a tool's definition counted and
    named, its text not kept (Claude Code's 14 tools are ~100 KB a session, the same in every
    session of a version: the figures need only the count)."""
    tokens = count_text(entry.get("text") or "")
    if entry.get("role") == "tool":
        return {k: v for k, v in entry.items() if k != "text"} | {"tokens": tokens}
    return {**entry, "tokens": tokens}


def _compaction_calls(item: Item, sid: int, index: int) -> list[UsageRecord]:
    """The requests that wrote a recorded compaction's summary (Claude Code's
    ``agent-acompact-*`` file: its own call, the copies of the parent's context left out;
    another call for the same boundary too): real calls, billed with the session."""
    call = item.recorded_call or {}
    calls = [call, *call.get("duplicate_calls", [])]
    return [
        UsageRecord(
            session_id=sid,
            round_index=index or None,
            step=None,
            usage=Usage(**c["usage"]),
            source="import",
            created_at=item.created_at,
            model=c.get("model") or "",
        )
        for c in calls
        if c.get("usage")
    ]


def _compact(
    store: Store,
    sid: int,
    item: Item,
    live: list[Message],
    observations: list[Observation],
    report: ImportReport,
    settings: Settings,
    cwd: str = "",
) -> None:
    """A recorded compaction: everything so far is archived under the recorded summary,
    scored with ctxscope's own fidelity ledger (what of the archived part the summary keeps)."""
    ids = [m.id for m in live if m.id is not None]
    archived = set(ids)
    figures = fidelity(
        _relative(live, cwd), [o for o in observations if o.message_id in archived], item.text, cwd
    )
    rounds = [m.meta.round or 0 for m in live]
    summary = Summary(
        session_id=sid,
        content=item.text,
        start_time=live[0].created_at,
        cutoff_time=item.created_at,
        first_round=min(rounds),
        last_round=max(rounds),
        strategy=settings.strategy,
        created_at=item.created_at,
    )
    # count_summary without tokenising the text twice (the raw figure counts it bare).
    text_tokens = count_text(item.text)
    report.tokens_raw += text_tokens
    summary.tokens = BLOCK_OVERHEAD + text_tokens if has_text(item.text) else 0
    before = sum(m.tokens or 0 for m in live)
    compaction = Compaction(
        session_id=sid,
        trigger=Trigger.MANUAL if item.trigger == "manual" else Trigger.AUTO,
        strategy=settings.strategy,
        tokens_before=before,
        tokens_after=summary.tokens,
        messages_compacted=len(ids),
        rounds_compacted=len(set(rounds)),
        summary_id=None,
        placement=summary.placement,
        stats={
            "imported": True,
            "recorded": True,
            "recorded_pre_tokens": item.pre_tokens,
            **{f"recorded_{k}": v for k, v in (item.compaction or {}).items()},
            **(item.recorded_call or {}),
        },
        fidelity=fidelity_json(figures),
        created_at=item.created_at,
    )
    earlier = [s.id for s in store.summaries(sid) if s.active and s.id is not None]
    store.archive_recorded(sid, ids, summary, compaction, supersede=earlier)
    live.clear()
    report.compactions += 1


def store_parsed(store: Store, parsed: Parsed, workspace: str, settings: Settings) -> ImportReport:
    """:func:`check` then :func:`write`; raises :class:`ImportError_` before storing anything."""
    problems = check(parsed)
    if problems:
        raise ImportError_(problems, parsed.fmt)
    return write(store, parsed, workspace, settings)
