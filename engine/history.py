"""HistoryManager: the session's L3 history — step-by-step writes, rounds and compaction.

It keeps an in-memory copy of the stored history so that each step costs O(new messages):
appends update the copy, token counts are computed once per message and stored with it, and
only a compaction reloads from the database.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from engine.config import Settings
from engine.events import (
    CompactionFailed,
    CompactionFinished,
    CompactionProgress,
    CompactionStarted,
    EventSink,
    Notice,
    ignore_events,
)
from engine.models import (
    ArchivedSegment,
    Compaction,
    History,
    Message,
    MessageMeta,
    Outcome,
    Round,
    RoundStatus,
    Summary,
    Trigger,
)
from engine.store import Store
from engine.strategies.base import Strategy, keep_zone_tokens
from engine.summary import SummaryCompressor
from engine.tokens import count_text, ensure_counted

INTERRUPTED_RESULT = "Interrupted by the user before this tool returned a result."
MISSING_RESULT = "No result was recorded for this tool call."


@dataclass
class CompactionResult:
    compaction: Compaction
    summary: Summary | None
    segment: ArchivedSegment | None


class HistoryManager:
    """Reads and writes one session's history through the store."""

    def __init__(
        self,
        store: Store,
        session_id: int,
        settings: Settings,
        events: EventSink = ignore_events,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.settings = settings
        self.events = events
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
                s.tokens = count_text(s.content)
        return history

    def reload(self) -> History:
        self._history = self._load()
        return self._history

    @property
    def history(self) -> History:
        """L3 as stored now (summaries, then the messages of rounds not archived)."""
        return self._history

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
        strategy: Strategy,
        summaries: SummaryCompressor,
        trigger: Trigger,
        focus: str | None = None,
        in_progress: int | None = None,
        on_progress: Callable[[str], None] | None = None,
    ) -> CompactionResult:
        """Archive the rounds the strategy selects and replace them by one summary.

        Always records a Compaction: ``skipped`` when nothing may be archived, ``failed`` if
        storing failed (history unchanged), ``fallback`` when the extractive summary stood in.
        """
        began = time.monotonic()
        before = self.tokens()
        base = Compaction(
            session_id=self.session_id,
            trigger=trigger,
            strategy=strategy.name,
            focus=focus,
            tokens_before=before,
            tokens_after=before,
            messages_retained=len(self._history.messages),
        )
        selected = strategy.select_rounds(
            self._history, in_progress=in_progress, emergency=trigger == Trigger.EMERGENCY
        )
        if not selected:
            keep = self.settings.keep_rounds
            base.outcome = Outcome.SKIPPED
            base.error = f"nothing to compact: history holds no rounds beyond the last {keep}"
            stored = self.store.record_compaction(base)
            self.events(CompactionFailed(compaction=stored, error=base.error))
            return CompactionResult(stored, None, None)

        chosen = set(selected)
        segment = [m for m in self._history.messages if m.meta.round in chosen]
        self.events(
            CompactionStarted(trigger=trigger.value, tokens_before=before, rounds=len(selected))
        )
        self.events(CompactionProgress(stage="summarizing", done=0, total=len(segment)))
        outcome = summaries.summarize(
            segment, focus, on_notice=lambda text: self.events(Notice(message=text))
        )
        summary = Summary(
            session_id=self.session_id,
            content=outcome.content,
            start_time=segment[0].created_at,
            cutoff_time=segment[-1].created_at,
            first_round=min(selected),
            last_round=max(selected),
            fallback=outcome.fallback,
            tokens=count_text(outcome.content),
        )
        kept = [m for m in self._history.messages if m.meta.round not in chosen]
        after = (
            sum(s.tokens or 0 for s in self._history.summaries)
            + (summary.tokens or 0)
            + sum(m.tokens or 0 for m in kept)
        )
        record = base.model_copy(
            update={
                "tokens_after": after,
                "messages_compacted": len(segment),
                "messages_retained": len(kept),
                "rounds_compacted": len(selected),
                "duration_ms": (time.monotonic() - began) * 1000,
                "outcome": Outcome.FALLBACK if outcome.fallback else Outcome.SUCCESS,
                "error": outcome.error,
            }
        )
        self.events(CompactionProgress(stage="storing", done=len(segment), total=len(segment)))
        try:
            comp, stored_summary, seg = self.store.apply_compaction(
                self.session_id, selected, summary, record
            )
        except Exception as exc:
            failed = base.model_copy(
                update={
                    "outcome": Outcome.FAILED,
                    "error": f"storing the compaction failed: {exc}",
                    "duration_ms": (time.monotonic() - began) * 1000,
                }
            )
            stored = self.store.record_compaction(failed)
            self.reload()
            self.events(CompactionFailed(compaction=stored, error=failed.error or ""))
            return CompactionResult(stored, None, None)
        self.reload()
        self.events(CompactionFinished(compaction=comp, summary=stored_summary))
        return CompactionResult(comp, stored_summary, seg)
