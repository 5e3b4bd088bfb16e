"""HistoryManager: the session's L3 history — step-by-step writes, rounds and compaction.

It keeps an in-memory copy of the stored history so that each step costs O(new messages):
appends update the copy, token counts are computed once per message and stored with it, and
only a compaction reloads from the database.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.compaction.ledger import measure_fidelity
from engine.compaction.placement import summary_tokens
from engine.compaction.policy import CompactionPolicy, PolicyView, ResultForm, before_last_rounds
from engine.compaction.strategies.layered import keep_zone_tokens
from engine.compaction.summary import SummaryCompressor, SummaryOutcome
from engine.context.compaction_records import (
    NOT_COMPACTED,
    CompactionDraft,
    CompactionResult,
    messages_as_sent,
    request_count_after,
)
from engine.context.raw_middle import write_raw_middle
from engine.context.session_files import session_folder
from engine.events import (
    CompactionFailed,
    CompactionFinished,
    CompactionProgress,
    CompactionStarted,
    EventSink,
    Notice,
    ignore_events,
)
from engine.messages.tokens import ensure_counted
from engine.models import (
    Compaction,
    History,
    Message,
    MessageMeta,
    Outcome,
    Placement,
    Round,
    RoundStatus,
    Summary,
    Trigger,
)
from engine.settings.config import Settings
from engine.store import Store

__all__ = [  # the records of a compaction live next door; their users find them here too
    "INTERRUPTED_RESULT",
    "CompactionDraft",
    "CompactionResult",
    "HistoryManager",
]

INTERRUPTED_RESULT = "Interrupted by the user before this tool returned a result."

LOOKUP_BATCH = 500
"""Tool messages whose observations are asked for in one query (SQLite bounds the number of
values an ``IN (...)`` may hold)."""


class HistoryManager:
    """Reads and writes one session's history through the store."""

    def __init__(
        self,
        store: Store,
        session_id: int,
        settings: Settings,
        events: EventSink = ignore_events,
        data_dir: Path | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.settings = settings
        self.events = events
        self.data_dir = data_dir
        """The data folder: seed 004's raw middles go to the session's folder in it
        (:func:`engine.context.session_files.session_folder`); None: not written."""
        self._segments: dict[int, list[Message]] = {}
        """Archived segments' messages by segment id, loaded once (they never change)."""
        self._pinned: frozenset[int] = frozenset()
        self._returned: dict[int, tuple[str, int] | None] = {}
        """Tool results as the tools returned them, by tool message id, with their token
        count (None: no observation was recorded, the stored content is all there is); a tool
        message's result never changes, so this outlives reloads."""
        self._copies: dict[int, Message] = {}
        """The tool messages of the loaded history in that form (rebuilt after a reload)."""
        self._as_returned: tuple[History, int, History] | None = None
        """The last history sent as returned: (stored history, its length, the copy)."""
        self._history = self._load()

    def _load(self) -> History:
        history = self.store.history(self.session_id)
        missing = {}
        for msg in history.messages:
            if msg.tokens is None and msg.id is not None:
                missing[msg.id] = ensure_counted(msg)
        if missing:
            self.store.set_message_tokens(missing)
        for s in history.summaries:
            if s.tokens is None:
                s.tokens = summary_tokens(s)
        self._pinned = frozenset(m.id for m in history.messages if m.pinned and m.id is not None)
        return history

    def reload(self) -> History:
        self._copies.clear()
        self._history = self._load()
        return self._history

    @property
    def history(self) -> History:
        """L3 as stored now (summaries, then the messages of rounds not archived)."""
        return self._history

    def sent_form(self, policy: CompactionPolicy) -> History:
        """L3 with each tool result in the form ``policy``'s seed keeps in history.

        Seed 000 keeps the A3-compressed form, which is what is stored; seeds 001-003 keep the
        result as the tool returned it (:attr:`ResultForm.AS_RETURNED`): each tool message is
        then a copy (same id, round and step) holding its observation's text, the one the model
        saw. A strategy's own cut (seed 002's first and last 1 000 characters) is its
        projection's, made afterwards."""
        hist = self._history
        if policy.tool_results is not ResultForm.AS_RETURNED:
            return hist
        known = self._as_returned
        if known is not None and known[0] is hist and known[1] == len(hist.messages):
            return known[2]
        messages = self.returned_form(hist.messages)
        sent = History(summaries=hist.summaries, messages=messages)
        self._as_returned = (hist, len(hist.messages), sent)
        return sent

    def returned_form(self, messages: list[Message]) -> list[Message]:
        """``messages`` with each tool result as the tool returned it (see :meth:`sent_form`)."""
        self._load_returned(messages)
        return [self._copy(m) for m in messages]

    def _copy(self, msg: Message) -> Message:
        if msg.role != "tool" or msg.id is None:
            return msg
        returned = self._returned.get(msg.id)
        if returned is None:
            return msg
        copy = self._copies.get(msg.id)
        if copy is None or copy.pinned != msg.pinned:
            text, tokens = returned
            copy = msg.model_copy(update={"content": text, "tokens": tokens})
            self._copies[msg.id] = copy
        return copy

    def _load_returned(self, messages: list[Message]) -> None:
        missing = [
            m.id
            for m in messages
            if m.role == "tool" and m.id is not None and m.id not in self._returned
        ]
        if not missing:
            return
        by_id = {m.id: m for m in messages if m.id is not None}
        found: dict[int, str] = {}
        for start in range(0, len(missing), LOOKUP_BATCH):
            for obs in self.store.observations_for_messages(missing[start : start + LOOKUP_BATCH]):
                if obs.message_id is not None:
                    found[obs.message_id] = obs.text
        for mid in missing:
            text = found.get(mid)
            stored = by_id[mid]
            if text is None or text == stored.content:
                self._returned[mid] = None
                continue
            counted = stored.model_copy(update={"content": text, "tokens": None})
            self._returned[mid] = (text, ensure_counted(counted))

    def tokens(self) -> int:
        """Tokens of L3 as stored: summaries plus history messages (cached counts)."""
        return sum(s.tokens or 0 for s in self._history.summaries) + sum(
            m.tokens or 0 for m in self._history.messages
        )

    def kept_tokens(self) -> int:
        """Tokens of the rounds a compaction would keep (the keep zone) plus summaries."""
        return keep_zone_tokens(self._history, self.settings.keep_rounds)

    # ------------------------------------------------------------------ writes
    def open_round(self, user_text: str) -> tuple[Round, Message]:
        msg = Message(role="user", content=user_text)
        ensure_counted(msg)
        rnd, stored = self.store.open_round(self.session_id, msg)
        self._history.messages.append(stored)
        return rnd, stored

    def append(self, round_index: int, message: Message) -> Message:
        """Write one step to history at once (seed A2: the history is written step by step)."""
        ensure_counted(message)
        stored = self.store.append_message(self.session_id, round_index, message)
        self._history.messages.append(stored)
        return stored

    def finish_round(
        self, round_index: int, status: RoundStatus, error: str | None = None
    ) -> Round:
        return self.store.finish_round(self.session_id, round_index, status, error)

    def close_dangling(self, round_index: int, reason: str, answer: str) -> list[Message]:
        """Pair every unanswered tool_use of a round, then end it with an assistant message.

        Used on cancellation and on restart after a crash, so that the stored history is
        always a valid API conversation.
        """
        written: list[Message] = []
        msgs = [m for m in self._history.messages if m.meta.round == round_index]
        answered = {m.meta.tool_use_id for m in msgs if m.role == "tool"}
        for msg in msgs:
            for call in msg.tool_calls:
                if call.id in answered:
                    continue
                content = json.dumps(
                    {"status": "error", "error": {"code": "interrupted", "message": reason}}
                )
                written.append(
                    self.append(
                        round_index,
                        Message(
                            role="tool",
                            content=content,
                            meta=MessageMeta(
                                step=msg.meta.step,
                                tool_name=call.name,
                                tool_use_id=call.id,
                                is_error=True,
                                interrupted=True,
                            ),
                        ),
                    )
                )
        if not msgs or not (msgs[-1].role == "assistant" and msgs[-1].meta.final):
            written.append(
                self.append(
                    round_index,
                    Message(
                        role="assistant",
                        content=answer,
                        meta=MessageMeta(final=True, interrupted=True),
                    ),
                )
            )
        return written

    # ------------------------------------------------------------------ compaction
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

    def _archived_messages(self) -> list[Message]:
        """Every message the session's active segments hold, oldest first: only the ids are
        asked for each time (an undo drops a segment), each segment's messages once."""
        ids = self.store.segment_ids(self.session_id)
        for i in ids:
            if i not in self._segments:
                self._segments[i] = self.store.segment(i).messages
        return [m for i in ids for m in self._segments[i]]

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
        view = view or PolicyView(history=self.sent_form(policy), pinned=self.pinned_ids)
        history = view.history
        before = self.tokens()
        base = Compaction(
            session_id=self.session_id,
            trigger=trigger,
            strategy=policy.name,
            focus=focus,
            tokens_before=before,
            tokens_after=before,
            messages_retained=len(history.messages),
        )
        plan = policy.plan(view, emergency=trigger == Trigger.EMERGENCY)
        if keep_rounds is None:
            segment, rounds, reason = plan.cut, plan.cut_rounds, plan.reason
        else:
            segment = before_last_rounds(view, keep_rounds)
            rounds = sorted({m.meta.round for m in segment if m.meta.round is not None})
            before_kept = {0: "", 1: " before the last round"}.get(
                keep_rounds, f" before the last {keep_rounds} rounds"
            )
            reason = f"nothing to compact: history holds no unpinned closed rounds{before_kept}"
        if not segment:  # F-008: "未执行压缩时，统计字段全部为 0 或 null"
            reason = reason or "nothing to compact"
            return self._skipped(base, reason, began, NOT_COMPACTED, store=not dry_run)

        self.events(
            CompactionStarted(trigger=trigger.value, tokens_before=before, rounds=len(rounds))
        )
        earlier = policy.recompacted(history)
        summarised = earlier + segment
        # An earlier summary stands for archived messages the store still holds: the
        # extractive form is written from those, so re-compacting loses nothing it held.
        # The facts of an extractive summary (and the fidelity figures) are read from the
        # messages as stored: a tool result's A3 form names its error line, its files.
        by_id = {m.id: m for m in self._history.messages}
        stored = [by_id.get(m.id, m) for m in segment]
        raw = None
        if earlier:
            raw = self._archived_messages() + stored
        elif policy.tool_results is ResultForm.AS_RETURNED:
            raw = stored
        self.events(CompactionProgress(stage="summarizing", done=0, total=len(summarised)))
        summary: Summary | None = None
        outcome: SummaryOutcome | None = None
        if policy.summary is not None:
            outcome = summaries.summarize(
                summarised,
                focus,
                on_notice=lambda text: self.events(Notice(message=text)),
                spec=policy.summary,
                call=live_call,
                raw=raw,
            )
            if outcome.skipped:
                reason = outcome.error or "the summary call failed"
                return self._skipped(base, reason, began, NOT_COMPACTED, store=not dry_run)
            summary = Summary(
                session_id=self.session_id,
                content=outcome.content,
                start_time=summarised[0].created_at,
                cutoff_time=segment[-1].created_at,
                first_round=min(rounds),
                last_round=max(rounds),
                fallback=outcome.fallback,
                placement=policy.placement or Placement.SYSTEM_BLOCK,
                strategy=policy.name,
            )
            summary.tokens = summary_tokens(summary)
        retired = policy.supersedes(history) if summary is not None else []
        refusal = ""
        if summary is not None and trigger == Trigger.AUTO:
            refusal = policy.refuses_summary(view, segment, summary, retired)
        if refusal:  # said, and nothing stored: history stays as it is
            skipped = self._skipped(base, refusal, began, store=False)
            self.events(CompactionFailed(compaction=skipped.compaction, error=refusal))
            return skipped
        gone = {m.id for m in segment}
        kept = [m for m in history.messages if m.id not in gone]
        carried = sum(s.tokens or 0 for s in history.summaries if s.id not in retired)
        as_stored = {m.id: m.tokens or 0 for m in self._history.messages}
        kept_tokens = carried + sum(as_stored.get(m.id, m.tokens or 0) for m in kept)
        after = kept_tokens + (summary.tokens or 0 if summary else 0)
        request_after = request_count_after(view, history, retired, kept)
        original = view.request_tokens if request_after is not None else before
        compacted = request_after(summary) if request_after is not None else after
        if policy.stores_only_shrinking and trigger != Trigger.MANUAL and compacted >= original:
            # seed 004: compacting is to reduce the total; one that does not is said, and
            # nothing is stored (issue 39: ratios 1.0191, 1.0007 were stored)
            refusal = (
                f"the summary would leave the request at {compacted:,} tokens for "
                f"{original:,} before (ratio {compacted / original if original else 1:.4f}): "
                "the request would not shrink, so nothing was archived or stored"
            )
            skipped = self._skipped(base, refusal, began, NOT_COMPACTED, store=False)
            self.events(CompactionFailed(compaction=skipped.compaction, error=refusal))
            return skipped
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
            "retainedMessageCount": view.head_messages + messages_as_sent(kept),
        }
        if outcome is not None and outcome.warning:
            stats["summary_warning"] = outcome.warning
        if keep_rounds is not None:
            stats["kept_rounds"] = keep_rounds
        record = base.model_copy(
            update={
                "tokens_after": after,
                "messages_compacted": len(segment),
                "messages_retained": len(kept),
                "rounds_compacted": len(rounds),
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
        return CompactionDraft(
            record=record,
            summary=summary,
            messages=segment,
            summarised=summarised,
            supersede=retired,
            kept_tokens=kept_tokens,
            writes_raw_middle=policy.writes_raw_middle,
            request_after=request_after,
        )

    def commit(self, draft: CompactionDraft, content: str | None = None) -> CompactionResult:
        """Store a prepared compaction in one transaction; ``content`` replaces the draft
        summary (the user's edit: both are kept, the record marked as edited)."""
        record, summary = draft.record, draft.summary
        stats = dict(record.stats)
        if summary is not None and content is not None and content != summary.content:
            stats["edited"] = True
            stats["draft_summary"] = summary.content
            summary = summary.model_copy(update={"content": content})
            summary.tokens = summary_tokens(summary)
            after = draft.kept_tokens + summary.tokens
            compacted = after if draft.request_after is None else draft.request_after(summary)
            original = stats["originalTokenCount"]
            stats["compactedTokenCount"] = compacted
            stats["compactionRatio"] = round(compacted / original, 4) if original else 1.0
            by_id = {m.id: m for m in self._history.messages}
            as_stored = [by_id.get(m.id, m) for m in draft.messages]
            fidelity = measure_fidelity(self.store, as_stored, content)
            record = record.model_copy(update={"tokens_after": after, "fidelity": fidelity})
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
            self.reload()
            self.events(CompactionFailed(compaction=stored, error=failed.error or ""))
            return CompactionResult(stored, None, None)
        self.reload()
        self.events(CompactionFinished(compaction=comp, summary=stored_summary))
        return CompactionResult(comp, stored_summary, seg)

    def undo(self, compaction_id: int | None = None) -> Compaction:
        """Reverse the latest compaction (see :meth:`Store.undo_compaction`)."""
        undone = self.store.undo_compaction(self.session_id, compaction_id)
        self.reload()
        return undone

    def pin(self, message_ids: list[int], pinned: bool = True) -> int:
        """Pin (or unpin) history messages; a pinned message is never archived."""
        changed = self.store.pin(self.session_id, message_ids, pinned)
        self.reload()
        return changed

    @property
    def pinned_ids(self) -> frozenset[int]:
        """The ids of the pinned messages in history."""
        return self._pinned

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
        """Seed 004 F-006 (:func:`engine.context.raw_middle.write_raw_middle`); a failure is a
        notice and in ``stats``, never a blocked compaction."""
        if self.data_dir is None:
            return None
        try:
            folder = session_folder(self.data_dir, self.store.path, self.session_id)
            return str(write_raw_middle(self.store, folder, middle))
        except OSError as exc:
            stats["raw_middle_error"] = str(exc)
            self.events(Notice(message=f"The raw middle could not be written: {exc}"))
            return None
