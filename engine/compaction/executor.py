"""Carrying a compaction out: what a policy cuts is summarised, archived and recorded.

A policy (:mod:`engine.compaction.policy`) decides; :class:`CompactionExecutor` works the
compaction out (:meth:`~CompactionExecutor.prepare`: the cut, the summary, the figures after,
written nowhere) and stores it in one transaction (:meth:`~CompactionExecutor.commit`). It reads
the session's history through :class:`KeptHistory` (the context's
:class:`engine.context.history.HistoryManager` is one), so it names no strategy and no request
builder: everything a seed does differently is a part of the policy it is given.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from engine.compaction.ledger import measure_fidelity
from engine.compaction.placement import summary_tokens
from engine.compaction.policy import (
    CompactionPolicy,
    Plan,
    PolicyView,
    ResultForm,
    before_last_rounds,
)
from engine.compaction.raw_middle import write_raw_middle
from engine.compaction.records import (
    NOT_COMPACTED,
    CompactionDraft,
    CompactionResult,
    messages_as_sent,
    request_count_after,
)
from engine.compaction.summary import SummaryCompressor, SummaryOutcome
from engine.events import (
    CompactionFailed,
    CompactionFinished,
    CompactionProgress,
    CompactionStarted,
    EventSink,
    Notice,
    ignore_events,
)
from engine.models import Compaction, History, Message, Outcome, Placement, Summary, Trigger
from engine.store import Store


class KeptHistory(Protocol):
    """The session's history as the compaction reads it (and reloads it after a change)."""

    @property
    def history(self) -> History:
        """L3 as stored now."""
        ...

    @property
    def pinned_ids(self) -> frozenset[int]:
        """The ids of the pinned messages in history."""
        ...

    def sent_form(self, policy: CompactionPolicy) -> History:
        """L3 with each tool result in the form ``policy``'s seed keeps in history."""
        ...

    def tokens(self) -> int:
        """Tokens of L3 as stored."""
        ...

    def reload(self) -> History:
        """Read history again from the store (after a compaction changed it)."""
        ...


@dataclass(frozen=True)
class _Cut:
    """What a compaction archives: its messages, their rounds, and why nothing (when empty)."""

    segment: list[Message]
    rounds: list[int]
    reason: str


@dataclass(frozen=True)
class _After:
    """The figures once the cut is archived and the summary stands in for it."""

    kept: list[Message]
    kept_tokens: int
    """L3 tokens that stay, without the new summary."""
    after: int
    """L3 tokens after: ``kept_tokens`` plus the summary's."""
    original: int
    """The request's count before (L3's when the view cannot count a request)."""
    compacted: int
    """The same count after."""
    request_after: Callable[[Summary | None], int] | None


class CompactionExecutor:
    """Carries out one session's compactions over its kept history, through the store."""

    def __init__(
        self,
        store: Store,
        session_id: int,
        kept: KeptHistory,
        events: EventSink = ignore_events,
        raw_middle_folder: Callable[[], Path] | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.kept = kept
        self.events = events
        self.raw_middle_folder = raw_middle_folder
        """Where seed 004's raw middles go (the session's folder); None: not written."""
        self._segments: dict[int, list[Message]] = {}
        """Archived segments' messages by segment id, loaded once (they never change)."""

    def compact(
        self,
        policy: CompactionPolicy,
        summaries: SummaryCompressor,
        trigger: Trigger,
        focus: str | None = None,
        view: PolicyView | None = None,
        live_call: Callable[[float], str] | None = None,
    ) -> CompactionResult:
        """Archive what ``policy`` cuts now, summarise it as the policy says, in one transaction.

        ``view`` is what the policy decides on (default: history as stored, nothing in
        progress); ``live_call`` asks the model on the live conversation (seed 002's mock user
        turn). Always records a Compaction: ``skipped`` when nothing may be archived or the
        policy skips after failed summary calls (seed 004), ``failed`` if storing failed
        (history unchanged), ``fallback`` when the extractive summary stood in.
        """
        draft = self.prepare(policy, summaries, trigger, focus, view, live_call)
        if isinstance(draft, CompactionResult):
            return draft
        return self.commit(draft)

    def prepare(
        self,
        policy: CompactionPolicy,
        summaries: SummaryCompressor,
        trigger: Trigger,
        focus: str | None = None,
        view: PolicyView | None = None,
        live_call: Callable[[float], str] | None = None,
        dry_run: bool = False,
        keep_rounds: int | None = None,
    ) -> CompactionDraft | CompactionResult:
        """Everything a compaction would do, written nowhere: what it archives, the draft
        summary, the figures after (a dry run, or the dialog's preview before an edit).

        ``keep_rounds`` is a cut chosen by hand (the workbench's F5): every closed round but the
        last ``keep_rounds`` goes, pins honoured, whatever the policy would select; the summary,
        its placement and lifecycle stay the policy's. Returns the ``skipped`` result instead
        when there is nothing to compact (or the policy skips after failed summary calls); it is
        stored unless ``dry_run``. An automatic compaction whose summary the policy refuses
        (:meth:`~CompactionPolicy.refuses_summary`) is skipped too, said and never stored.
        """
        began = time.monotonic()
        # History as this strategy sends it: what it cuts and summarises, and what the
        # request figures count (seeds 001-003: tool results as the tools returned them, not
        # seed 000's A3 form). The record's tokens_before / tokens_after stay L3 as stored, the
        # history pane's figures, for every strategy.
        view = view or PolicyView(history=self.kept.sent_form(policy), pinned=self.kept.pinned_ids)
        history = view.history
        before = self.kept.tokens()
        base = Compaction(
            session_id=self.session_id,
            trigger=trigger,
            strategy=policy.name,
            focus=focus,
            tokens_before=before,
            tokens_after=before,
            messages_retained=len(history.messages),
        )  # what a skipped one records; a stored one adds its figures (_record)
        plan = policy.plan(view, emergency=trigger == Trigger.EMERGENCY)
        cut = self._cut(plan, view, keep_rounds)
        if not cut.segment:  # F-008: "未执行压缩时，统计字段全部为 0 或 null"
            reason = cut.reason or "nothing to compact"
            return self._skipped(base, reason, began, NOT_COMPACTED, store=not dry_run)

        self.events(
            CompactionStarted(trigger=trigger.value, tokens_before=before, rounds=len(cut.rounds))
        )
        earlier = policy.recompacted(history)
        summarised = earlier + cut.segment
        stored = self._as_stored(cut.segment)
        raw = self._raw(policy, earlier, stored)
        outcome = self._summarise(policy, summaries, summarised, raw, focus, live_call)
        if outcome is not None and outcome.skipped:
            reason = outcome.error or "the summary call failed"
            return self._skipped(base, reason, began, NOT_COMPACTED, store=not dry_run)
        summary = self._summary(policy, outcome, summarised, cut)
        retired = policy.supersedes(history) if summary is not None else []
        refusal = ""
        if summary is not None and trigger == Trigger.AUTO:
            refusal = policy.refuses_summary(view, cut.segment, summary, retired)
        if refusal:  # said, and nothing stored: history stays as it is
            return self._refused(base, refusal, began, stats=None)
        figures = self._figures_after(view, before, cut.segment, summary, retired)
        if (
            policy.stores_only_shrinking
            and trigger != Trigger.MANUAL
            and figures.compacted >= figures.original
        ):
            # seed 004: compacting is to reduce the total; one that does not is said, and
            # nothing is stored (issue 39: ratios 1.0191, 1.0007 were stored)
            return self._refused(base, _not_shrinking(figures), began, stats=NOT_COMPACTED)
        stats = _stats(plan, view, summarised, figures, retired, outcome, keep_rounds)
        return CompactionDraft(
            record=self._record(base, cut, figures, summary, outcome, stats, began, stored),
            summary=summary,
            messages=cut.segment,
            summarised=summarised,
            supersede=retired,
            kept_tokens=figures.kept_tokens,
            writes_raw_middle=policy.writes_raw_middle,
            request_after=figures.request_after,
        )

    # ------------------------------------------------------------------ prepare's phases
    @staticmethod
    def _cut(plan: Plan, view: PolicyView, keep_rounds: int | None) -> _Cut:
        """The policy's cut, or every closed round but the last ``keep_rounds`` (by hand)."""
        if keep_rounds is None:
            return _Cut(plan.cut, plan.cut_rounds, plan.reason)
        segment = before_last_rounds(view, keep_rounds)
        rounds = sorted({m.meta.round for m in segment if m.meta.round is not None})
        before_kept = {0: "", 1: " before the last round"}.get(
            keep_rounds, f" before the last {keep_rounds} rounds"
        )
        reason = f"nothing to compact: history holds no unpinned closed rounds{before_kept}"
        return _Cut(segment, rounds, reason)

    def _as_stored(self, segment: list[Message]) -> list[Message]:
        """``segment``'s messages as stored: the facts of an extractive summary (and the
        fidelity figures) are read from them (a tool result's A3 form names its error line,
        its files)."""
        by_id = {m.id: m for m in self.kept.history.messages}
        return [by_id.get(m.id, m) for m in segment]

    def _raw(
        self, policy: CompactionPolicy, earlier: list[Message], stored: list[Message]
    ) -> list[Message] | None:
        """What an extractive summary is written from, when not the summarised messages."""
        # An earlier summary stands for archived messages the store still holds: the
        # extractive form is written from those, so re-compacting loses nothing it held.
        if earlier:
            return self._archived_messages() + stored
        if policy.tool_results is ResultForm.AS_RETURNED:
            return stored
        return None

    def _summarise(
        self,
        policy: CompactionPolicy,
        summaries: SummaryCompressor,
        summarised: list[Message],
        raw: list[Message] | None,
        focus: str | None,
        live_call: Callable[[float], str] | None,
    ) -> SummaryOutcome | None:
        """The policy's summary of ``summarised`` (None: the policy writes none)."""
        self.events(CompactionProgress(stage="summarizing", done=0, total=len(summarised)))
        if policy.summary is None:
            return None
        return summaries.summarize(
            summarised,
            focus,
            on_notice=lambda text: self.events(Notice(message=text)),
            spec=policy.summary,
            call=live_call,
            raw=raw,
        )

    def _summary(
        self,
        policy: CompactionPolicy,
        outcome: SummaryOutcome | None,
        summarised: list[Message],
        cut: _Cut,
    ) -> Summary | None:
        """The summary row the outcome becomes, counted (None without an outcome)."""
        if outcome is None:
            return None
        summary = Summary(
            session_id=self.session_id,
            content=outcome.content,
            start_time=summarised[0].created_at,
            cutoff_time=cut.segment[-1].created_at,
            first_round=min(cut.rounds),
            last_round=max(cut.rounds),
            fallback=outcome.fallback,
            placement=policy.placement or Placement.SYSTEM_BLOCK,
            strategy=policy.name,
        )
        summary.tokens = summary_tokens(summary)
        return summary

    def _figures_after(
        self,
        view: PolicyView,
        before: int,
        segment: list[Message],
        summary: Summary | None,
        retired: list[int],
    ) -> _After:
        """L3's and the request's counts once ``segment`` goes and ``summary`` comes."""
        history = view.history
        gone = {m.id for m in segment}
        kept = [m for m in history.messages if m.id not in gone]
        carried = sum(s.tokens or 0 for s in history.summaries if s.id not in retired)
        as_stored = {m.id: m.tokens or 0 for m in self.kept.history.messages}
        kept_tokens = carried + sum(as_stored.get(m.id, m.tokens or 0) for m in kept)
        after = kept_tokens + (summary.tokens or 0 if summary else 0)
        request_after = request_count_after(view, history, retired, kept)
        original = view.request_tokens if request_after is not None else before
        compacted = request_after(summary) if request_after is not None else after
        return _After(kept, kept_tokens, after, original, compacted, request_after)

    def _record(
        self,
        base: Compaction,
        cut: _Cut,
        figures: _After,
        summary: Summary | None,
        outcome: SummaryOutcome | None,
        stats: dict[str, Any],
        began: float,
        stored: list[Message],
    ) -> Compaction:
        """The record of a compaction worked out: its figures, outcome and fidelity."""
        return base.model_copy(
            update={
                "tokens_after": figures.after,
                "messages_compacted": len(cut.segment),
                "messages_retained": len(figures.kept),
                "rounds_compacted": len(cut.rounds),
                "duration_ms": (time.monotonic() - began) * 1000,
                "outcome": Outcome.FALLBACK if outcome and outcome.fallback else Outcome.SUCCESS,
                "error": outcome.error if outcome else None,
                "placement": summary.placement if summary else None,
                "stats": stats,
                "fidelity": measure_fidelity(
                    self.store, stored, summary.content if summary else None
                ),
            }
        )

    def _archived_messages(self) -> list[Message]:
        """Every message the session's active segments hold, oldest first: only the ids are
        asked for each time (an undo drops a segment), each segment's messages once."""
        ids = self.store.segment_ids(self.session_id)
        for i in ids:
            if i not in self._segments:
                self._segments[i] = self.store.segment(i).messages
        return [m for i in ids for m in self._segments[i]]

    # ------------------------------------------------------------------ storing
    def commit(self, draft: CompactionDraft, content: str | None = None) -> CompactionResult:
        """Store a prepared compaction in one transaction; ``content`` replaces the draft
        summary (the user's edit: both are kept, the record marked as edited)."""
        record, summary = draft.record, draft.summary
        stats = dict(record.stats)
        if summary is not None and content is not None and content != summary.content:
            record, summary = self._edited(draft, record, summary, content, stats)
        if draft.writes_raw_middle:
            stats["raw_middle_file"] = self._write_raw_middle(draft.summarised, stats)
        record = record.model_copy(update={"stats": stats})
        segment = draft.messages
        self.events(CompactionProgress(stage="storing", done=len(segment), total=len(segment)))
        try:
            comp, stored_summary, seg = self.store.apply_compaction(
                self.session_id,
                [m.id for m in segment if m.id is not None],
                summary,
                record,
                supersede=draft.supersede,
            )
        except Exception as exc:
            return self._failed(record, exc)
        self.kept.reload()
        self.events(CompactionFinished(compaction=comp, summary=stored_summary))
        return CompactionResult(comp, stored_summary, seg)

    def _edited(
        self,
        draft: CompactionDraft,
        record: Compaction,
        summary: Summary,
        content: str,
        stats: dict[str, Any],
    ) -> tuple[Compaction, Summary]:
        """The record and summary with the user's ``content``: figures counted again, the
        draft kept in ``stats`` (changed in place)."""
        stats["edited"] = True
        stats["draft_summary"] = summary.content
        summary = summary.model_copy(update={"content": content})
        summary.tokens = summary_tokens(summary)
        after = draft.kept_tokens + summary.tokens
        compacted = after if draft.request_after is None else draft.request_after(summary)
        original = stats["originalTokenCount"]
        stats["compactedTokenCount"] = compacted
        stats["compactionRatio"] = round(compacted / original, 4) if original else 1.0
        fidelity = measure_fidelity(self.store, self._as_stored(draft.messages), content)
        record = record.model_copy(update={"tokens_after": after, "fidelity": fidelity})
        return record, summary

    def _failed(self, record: Compaction, exc: Exception) -> CompactionResult:
        """Storing failed: a ``failed`` record is stored instead, history unchanged."""
        failed = record.model_copy(
            update={
                "outcome": Outcome.FAILED,
                "error": f"storing the compaction failed: {exc}",
                "tokens_after": record.tokens_before,
                "messages_compacted": 0,
                "messages_retained": record.messages_retained + record.messages_compacted,
                "rounds_compacted": 0,
                "placement": None,
                "stats": {},
            }
        )
        stored = self.store.record_compaction(failed)
        self.kept.reload()
        self.events(CompactionFailed(compaction=stored, error=failed.error or ""))
        return CompactionResult(stored, None, None)

    def _refused(
        self, base: Compaction, reason: str, began: float, stats: dict[str, Any] | None
    ) -> CompactionResult:
        """A compaction the policy refuses once worked out: said, and nothing stored."""
        skipped = self._skipped(base, reason, began, stats, store=False)
        self.events(CompactionFailed(compaction=skipped.compaction, error=reason))
        return skipped

    def _skipped(
        self,
        base: Compaction,
        reason: str,
        began: float,
        stats: dict[str, Any] | None = None,
        *,
        store: bool = True,
    ) -> CompactionResult:
        record = base.model_copy(
            update={
                "outcome": Outcome.SKIPPED,
                "error": reason,
                "duration_ms": (time.monotonic() - began) * 1000,
                "stats": stats or {},
            }
        )
        if not store:
            return CompactionResult(record, None, None)
        stored = self.store.record_compaction(record)
        self.events(CompactionFailed(compaction=stored, error=reason))
        return CompactionResult(stored, None, None)

    def _write_raw_middle(self, middle: list[Message], stats: dict[str, Any]) -> str | None:
        """Seed 004 F-006 (:func:`engine.compaction.raw_middle.write_raw_middle`); a failure is
        a notice and in ``stats``, never a blocked compaction."""
        if self.raw_middle_folder is None:
            return None
        try:
            return str(write_raw_middle(self.store, self.raw_middle_folder(), middle))
        except OSError as exc:
            stats["raw_middle_error"] = str(exc)
            self.events(Notice(message=f"The raw middle could not be written: {exc}"))
            return None


def _not_shrinking(figures: _After) -> str:
    """Why seed 004 stores nothing: the request would not shrink."""
    compacted, original = figures.compacted, figures.original
    return (
        f"the summary would leave the request at {compacted:,} tokens for "
        f"{original:,} before (ratio {compacted / original if original else 1:.4f}): "
        "the request would not shrink, so nothing was archived or stored"
    )


def _stats(
    plan: Plan,
    view: PolicyView,
    summarised: list[Message],
    figures: _After,
    retired: list[int],
    outcome: SummaryOutcome | None,
    keep_rounds: int | None,
) -> dict[str, Any]:
    """The record's statistics: what was measured, the summary's attempts, seed 004's F-008."""
    original, compacted = figures.original, figures.compacted
    stats: dict[str, Any] = {
        "measured": plan.measure.describe(),
        "fired": plan.measure.fires,
        "superseded_summaries": retired,
        "summary_attempts": outcome.attempts if outcome else 0,
        # Seed 004 F-008, under its own names, in the count its trigger measures (F-001:
        # the whole request counted locally, before and after).
        "originalTokenCount": original,
        "compactedTokenCount": compacted,
        "compactionRatio": round(compacted / original, 4) if original else 1.0,
        # The middle holds the earlier summary it re-compacts; "Head + Tail" are kept.
        "compactedMessageCount": messages_as_sent(summarised),
        "retainedMessageCount": view.head_messages + messages_as_sent(figures.kept),
    }
    if outcome is not None and outcome.warning:
        stats["summary_warning"] = outcome.warning
    if keep_rounds is not None:
        stats["kept_rounds"] = keep_rounds
    return stats
