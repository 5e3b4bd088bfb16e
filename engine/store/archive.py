"""Compactions and the archive: applying and undoing a compaction in one transaction, the
archived segments and their summaries, pins, and the full-text search over the archive."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from peewee import (
    JOIN,
    chunked,
)

from engine.models import (
    ArchivedSegment,
    Compaction,
    Observation,
    RecallHit,
    Summary,
    utcnow,
)
from engine.store import dialect, search
from engine.store.access import reads, writes
from engine.store.errors import StoreError
from engine.store.models import (
    CompactionRow,
    MessageRow,
    ObservationRow,
    RoundRow,
    SegmentRow,
    SummaryRow,
)
from engine.store.part import StorePart
from engine.store.rows import (
    Select,
    compaction_model,
    message_model,
    observation_model,
    summary_model,
)
from prompts.agents_prompts.summary_prompt import RECALL_NOTE, SEGMENT_PENDING


class ArchiveStore(StorePart):
    """Compactions, summaries, archived segments, pins and archive search."""

    # ------------------------------------------------------------------ compaction
    @writes
    def apply_compaction(
        self,
        session_id: int,
        message_ids: list[int],
        summary: Summary | None,
        compaction: Compaction,
        supersede: list[int] | None = None,
    ) -> tuple[Compaction, Summary | None, ArchivedSegment]:
        """Archive messages, insert their summary and retire earlier ones, in one transaction.

        The messages ``message_ids`` leave history (they are linked to a new archived segment,
        never deleted); a round all of whose messages are archived is marked archived; the
        summary joins L3; the summaries ``supersede`` (replaced or re-compacted by this one)
        stop being active but stay in the archive; the compaction record is written. Any
        failure rolls everything back.
        """
        comp_row, summary_row, segment_id = self._compacted(
            session_id, message_ids, summary, compaction, supersede
        )
        comp = compaction_model(comp_row)
        stored_summary = None if summary_row is None else summary_model(summary_row)
        return comp, stored_summary, self.segment(segment_id)

    @writes
    def archive_recorded(
        self,
        session_id: int,
        message_ids: list[int],
        summary: Summary | None,
        compaction: Compaction,
        supersede: list[int] | None = None,
    ) -> None:
        """:meth:`apply_compaction` for an import, which needs nothing back: the segment's
        messages are not read again (issue 44: reading them back was a tenth of the history
        import's writer)."""
        self._compacted(session_id, message_ids, summary, compaction, supersede)

    def _compacted(
        self,
        session_id: int,
        message_ids: list[int],
        summary: Summary | None,
        compaction: Compaction,
        supersede: list[int] | None,
    ) -> tuple[CompactionRow, SummaryRow | None, int]:
        if not message_ids:
            raise ValueError("a compaction must archive at least one message")
        with self.together():
            # Plain SQL for the statements that name every archived message: peewee took
            # longer to write their lists than SQLite to run them (issue 44).
            marks = ", ".join("?" for _ in message_ids)
            rows = dialect.sql(
                self.db,
                'SELECT "round_id", "tokens" FROM "message_row" '
                f'WHERE "session_id" = ? AND "id" IN ({marks}) AND "segment_id" IS NULL',
                [session_id, *message_ids],
            ).fetchall()
            if len(rows) != len(set(message_ids)):
                raise StoreError("some of those messages are missing or already archived")
            round_ids = {round_id for round_id, _ in rows}
            numbers = [
                r.number for r in RoundRow.select(RoundRow.number).where(RoundRow.id.in_(round_ids))
            ]
            summary_row = None
            if summary is not None:
                summary_row = SummaryRow.create(
                    session=session_id,
                    **summary.model_dump(exclude={"id", "session_id"}),
                )
            if supersede:
                SummaryRow.update(active=False).where(
                    (SummaryRow.session == session_id) & SummaryRow.id.in_(supersede)
                ).execute()
            comp_row = CompactionRow.create(
                session=session_id,
                summary=summary_row,
                **compaction.model_dump(exclude={"id", "session_id", "summary_id"}),
            )
            seg_row = SegmentRow.create(
                compaction=comp_row,
                summary=summary_row,
                first_round=min(numbers),
                last_round=max(numbers),
                tokens=sum(tokens or 0 for _, tokens in rows),
            )
            self._archive_messages(message_ids, seg_row)
            search.index_segment(self.db, seg_row.id)
            if summary_row is not None:
                self._name_segment(summary_row, seg_row.id)
            still_live = MessageRow.select(MessageRow.round).where(
                MessageRow.round.in_(round_ids) & MessageRow.segment.is_null()
            )
            RoundRow.update(archived=True).where(
                RoundRow.id.in_(round_ids) & RoundRow.id.not_in(still_live)
            ).execute()
            self._touch(session_id)
        return comp_row, summary_row, int(seg_row.id)

    def _archive_messages(self, message_ids: list[int], segment: SegmentRow) -> None:
        marks = ", ".join("?" for _ in message_ids)
        dialect.sql(
            self.db,
            f'UPDATE "message_row" SET "segment_id" = ? WHERE "id" IN ({marks})',
            [segment.id, *message_ids],
        )

    def _name_segment(self, summary_row: SummaryRow, segment_id: int) -> None:
        """Write the segment's id into the summary's recall note: it exists only now."""
        pending = RECALL_NOTE.format(segment=SEGMENT_PENDING)
        if pending in summary_row.content:
            named = RECALL_NOTE.format(segment=f"#{segment_id}")
            summary_row.content = summary_row.content.replace(pending, named)
            summary_row.save()

    # ------------------------------------------------------------------ archive search
    @reads
    def search_archive(self, session_id: int, query: str, limit: int = 5) -> list[RecallHit]:
        """Archived messages of the session matching ``query``, best first (Recall)."""
        return search.search(self.db, session_id, query, limit)

    @writes
    def index_segment(self, segment_id: int) -> int:
        """Add a segment's messages to the archive index; returns how many."""
        return search.index_segment(self.db, segment_id)

    @writes
    def unindex_segment(self, segment_id: int) -> int:
        """Remove a segment from the archive index (its messages are back in history).

        :meth:`undo_compaction` calls it inside its own transaction; call it in the same
        transaction as any other code that restores a segment's messages.
        """
        return search.unindex_segment(self.db, segment_id)

    @reads
    def indexed_messages(self, session_id: int) -> set[int]:
        """Ids of the session's messages in the archive index (consistency checks)."""
        return search.indexed_messages(self.db, session_id)

    @reads
    def observations_for_messages(self, message_ids: list[int]) -> list[Observation]:
        """The observations behind the given tool messages (full results), in order."""
        q = ObservationRow.select().where(ObservationRow.message.in_(message_ids))
        return [observation_model(r) for r in q.order_by(ObservationRow.id)]

    @writes
    def undo_compaction(self, session_id: int, compaction_id: int | None = None) -> Compaction:
        """Reverse the latest compaction (or ``compaction_id``, which must be the latest one
        not yet undone), in one transaction.

        Its archived messages return to history in their places (history is ordered by id),
        their rounds are no longer archived, its summary stays in the archive but leaves L3,
        the summaries it replaced or re-compacted are active again, and the record gets
        ``undone_at``. Raises StoreError naming the compaction to undo first.
        """
        with self.together():
            done = list(
                CompactionRow.select()
                .where(
                    (CompactionRow.session == session_id)
                    & CompactionRow.outcome.in_(["success", "fallback"])
                    & CompactionRow.undone_at.is_null()
                )
                .order_by(CompactionRow.id.desc())
            )
            if not done:
                raise StoreError(f"session {session_id} has no compaction to undo")
            latest = done[0]
            if compaction_id is not None and compaction_id != latest.id:
                if compaction_id not in {c.id for c in done}:
                    raise StoreError(
                        f"session {session_id} has no compaction {compaction_id} that can be "
                        "undone (it does not exist, did not archive anything, or was undone)"
                    )
                raise StoreError(
                    f"compaction {compaction_id} is not the latest: undo compaction "
                    f"{latest.id} first (later compactions build on it)"
                )
            segments = [sg.id for sg in SegmentRow.select().where(SegmentRow.compaction == latest)]
            restored = MessageRow.select(MessageRow.id).where(MessageRow.segment.in_(segments))
            ids = [r.id for r in restored]
            self._restore_messages(ids)
            for segment_id in segments:
                self.unindex_segment(segment_id)
            round_ids = MessageRow.select(MessageRow.round).where(MessageRow.id.in_(ids))
            RoundRow.update(archived=False).where(RoundRow.id.in_(round_ids)).execute()
            if latest.summary_id is not None:
                SummaryRow.update(active=False).where(SummaryRow.id == latest.summary_id).execute()
            back = (latest.stats or {}).get("superseded_summaries") or []
            if back:
                SummaryRow.update(active=True).where(SummaryRow.id.in_(back)).execute()
            latest.undone_at = utcnow()
            latest.save()
            self._touch(session_id)
        return compaction_model(latest)

    def _restore_messages(self, message_ids: list[int]) -> None:
        MessageRow.update(segment=None).where(MessageRow.id.in_(message_ids)).execute()

    @writes
    def pin(self, session_id: int, message_ids: list[int], pinned: bool = True) -> int:
        """Pin (or unpin) messages of the session; returns how many changed."""
        return int(
            MessageRow.update(pinned=pinned)
            .where(
                (MessageRow.session == session_id)
                & MessageRow.id.in_(message_ids)
                & (MessageRow.pinned != pinned)
            )
            .execute()
        )

    @writes
    def record_compaction(self, compaction: Compaction) -> Compaction:
        """Store a compaction that changed nothing (failed or skipped)."""
        row = CompactionRow.create(
            session=compaction.session_id,
            **compaction.model_dump(exclude={"id", "session_id", "summary_id"}),
        )
        self.access._figures_changed(compaction.session_id)
        return compaction_model(row)

    @reads
    def last_summary_compaction_at(self, session_id: int) -> datetime | None:
        """When the session's newest compaction that wrote a summary was made (None: none
        has). Asked before every request: one row, not the session's every compaction."""
        row = _LAST_SUMMARY_COMPACTION.first(self.db, (session_id,))
        return None if row is None else row.created_at

    @reads
    def compactions(self, session_id: int) -> list[Compaction]:
        q = (
            CompactionRow.select()
            .where(CompactionRow.session == session_id)
            .order_by(CompactionRow.id)
        )
        return [compaction_model(r) for r in q]

    @reads
    def compactions_of(self, session_ids: Collection[int]) -> dict[int, list[Compaction]]:
        """:meth:`compactions` of each of ``session_ids`` (one without any: ``[]``), read in
        one query per 500 sessions rather than one each (``report`` over a whole history)."""
        out: dict[int, list[Compaction]] = {sid: [] for sid in session_ids}
        for batch in chunked(sorted(out), 500):
            q = (
                CompactionRow.select()
                .where(CompactionRow.session.in_(batch))
                .order_by(CompactionRow.id)
            )
            for r in q:
                out[r.session_id].append(compaction_model(r))
        return out

    @reads
    def segment(self, segment_id: int) -> ArchivedSegment:
        row = SegmentRow.get_by_id(segment_id)
        msgs = [
            message_model(m)
            for m in MessageRow.select().where(MessageRow.segment == row).order_by(MessageRow.id)
        ]
        return ArchivedSegment(
            id=row.id,
            compaction_id=row.compaction_id,
            summary_id=row.summary_id,
            first_round=row.first_round,
            last_round=row.last_round,
            messages=msgs,
            tokens=row.tokens,
        )

    @reads
    def segments(self, session_id: int) -> list[ArchivedSegment]:
        """The archived segments, oldest first (an undone compaction's is back in history)."""
        return [self.segment(i) for i in self.segment_ids(session_id)]

    @reads
    def segment_ids(self, session_id: int) -> list[int]:
        """The ids of :meth:`segments`, without loading their messages."""
        q = (
            SegmentRow.select(SegmentRow.id)
            .join(CompactionRow, JOIN.INNER)
            .where((CompactionRow.session == session_id) & CompactionRow.undone_at.is_null())
            .order_by(SegmentRow.id)
        )
        return [r.id for r in q]

    @reads
    def summary(self, summary_id: int) -> Summary:
        return summary_model(SummaryRow.get_by_id(summary_id))

    @reads
    def summaries(self, session_id: int) -> list[Summary]:
        """Every summary of the session, active or superseded, oldest first."""
        # plain SQL: an import asks at each recorded compaction and at each session's end
        return [summary_model(r) for r in _SUMMARIES.all(self.db, (session_id,))]


_SUMMARIES = Select(SummaryRow, "{session} = ?", order="{id}")
_LAST_SUMMARY_COMPACTION = Select(
    CompactionRow,
    "{session} = ? AND {summary} IS NOT NULL",
    fields=("created_at",),
    order="{id} DESC",
    limit=1,
)
