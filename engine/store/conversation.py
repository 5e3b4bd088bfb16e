"""Rounds and messages, and each tool result's full text (observations)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from peewee import (
    fn,
)

from engine.models import (
    History,
    Message,
    Observation,
    Round,
    RoundStatus,
    utcnow,
)
from engine.store import dialect, schema
from engine.store.access import StoreAccess, reads, writes
from engine.store.models import (
    MessageRow,
    ObservationRow,
    RoundRow,
    SummaryRow,
)
from engine.store.part import StorePart
from engine.store.rows import (
    Select,
    message_model,
    message_row,
    observation_model,
    observation_row,
    round_model,
    summary_model,
    table_columns,
    update_statement,
)
from engine.store.sessions import SessionStore


class ConversationStore(StorePart):
    """What was said: rounds, their messages, and the observations behind tool results."""

    def __init__(self, access: StoreAccess, sessions: SessionStore) -> None:
        super().__init__(access)
        self.sessions = sessions

    # ------------------------------------------------------------------ rounds and messages
    @writes
    def open_round(self, session_id: int, user_message: Message) -> tuple[Round, Message]:
        """Start the next round with its user message; both committed together."""
        self.sessions.get_session(session_id)
        with self.together():
            index = self._last_round(session_id) + 1
            rnd = Round(session_id=session_id, index=index, started_at=utcnow())
            row = {"session": session_id, "number": rnd.index, "started_at": rnd.started_at}
            rnd.id = self._insert_row(RoundRow, row)
            user_message.meta.round = rnd.index
            msg = self._insert_message(session_id, rnd.id, user_message)
            self._touch(session_id)
        return rnd, msg

    def _last_round(self, session_id: int) -> int:
        """The session's highest round number, 0 before its first round."""
        (last,) = schema.sql(self.db, _LAST_ROUND, (session_id,)).fetchone()
        return int(last or 0)

    @writes
    def append_message(self, session_id: int, round_index: int, message: Message) -> Message:
        """Write one step of a round to history, committed at once."""
        round_id = self._round_id(session_id, round_index)
        message.meta.round = round_index
        with self.together():
            msg = self._insert_message(session_id, round_id, message)
            self._touch(session_id)
        return msg

    def _insert_message(self, session_id: int, round_id: int, m: Message) -> Message:
        new_id = self._insert_row(MessageRow, message_row(session_id, round_id, m))
        return m.model_copy(update={"id": new_id})

    @writes
    def append_round(
        self, session_id: int, messages: list[Message], status: RoundStatus
    ) -> tuple[Round, list[Message]]:
        """Write a whole ended round at once: :meth:`append_rounds` for one round."""
        return self.append_rounds(session_id, [(messages, status)])[0]

    @writes
    def append_rounds(
        self, session_id: int, rounds: Sequence[tuple[list[Message], RoundStatus]]
    ) -> list[tuple[Round, list[Message]]]:
        """Write whole ended rounds at once (an import): two INSERTs, however many rounds.

        Each is the session's next round: its messages in order (the first is its user
        input), started and finished at its first and last message's times. Message ids are
        assigned in conversation order, round after round, from the highest id yet (what
        SQLite would give them one by one; the transaction holds the write lock). Returns
        each round with its messages: the ones given, their ids set in place (``meta.round``
        is set on them too), not copies (issue 44: a copy per message was 3 % of an import's
        writing).
        """
        if any(not messages for messages, _ in rounds):
            raise ValueError("a round needs at least its user message")
        last = self._last_round(session_id)
        round_id = dialect.reserve_ids(self.db, RoundRow._meta.table_name, len(rounds))
        message_id = dialect.reserve_ids(
            self.db, MessageRow._meta.table_name, sum(len(messages) for messages, _ in rounds)
        )
        round_rows: list[dict[str, Any]] = []
        message_rows: list[dict[str, Any]] = []
        out: list[tuple[Round, list[Message]]] = []
        for number, (messages, status) in enumerate(rounds, start=last + 1):
            rnd = Round(
                id=round_id,
                session_id=session_id,
                index=number,
                status=status,
                started_at=messages[0].created_at,
                finished_at=messages[-1].created_at,
            )
            round_rows.append(
                {
                    "id": round_id,
                    "session": session_id,
                    "number": number,
                    "status": status.value,
                    "started_at": rnd.started_at,
                    "finished_at": rnd.finished_at,
                }
            )
            for m in messages:
                m.meta.round = number
                message_rows.append({"id": message_id, **message_row(session_id, round_id, m)})
                m.id = message_id
                message_id += 1
            out.append((rnd, messages))
            round_id += 1
        self._insert_rows(RoundRow, round_rows)
        self._insert_rows(MessageRow, message_rows)
        self._touch(session_id)
        return out

    @writes
    def finish_round(
        self, session_id: int, round_index: int, status: RoundStatus, error: str | None = None
    ) -> Round:
        """Mark the round ended: its status, end time and error, the only columns written."""
        row = self._round_row(session_id, round_index)
        row = row._replace(status=status.value, finished_at=utcnow(), error=error)
        sql, values = update_statement(RoundRow, ("status", "finished_at", "error"))
        schema.sql(self.db, sql, values(row.status, row.finished_at, row.error, id=row.id))
        self._touch(session_id)
        return round_model(row)

    @reads
    def rounds(self, session_id: int) -> list[Round]:
        q = (
            RoundRow.select(*table_columns(RoundRow))
            .where(RoundRow.session == session_id)
            .order_by(RoundRow.number)
        )
        return [round_model(r) for r in q.namedtuples()]

    @reads
    def open_rounds(self, session_id: int) -> list[Round]:
        """Rounds still marked open (after a crash, or the one running now)."""
        q = RoundRow.select().where(
            (RoundRow.session == session_id) & (RoundRow.status == RoundStatus.OPEN.value)
        )
        return [round_model(r) for r in q.order_by(RoundRow.number)]

    @reads
    def round_messages(self, session_id: int, round_index: int) -> list[Message]:
        row = self._round_row(session_id, round_index)
        q = MessageRow.select().where(MessageRow.round == row.id).order_by(MessageRow.id)
        return [message_model(r) for r in q]

    @reads
    def first_message(self, session_id: int) -> Message | None:
        """The session's first message (a recording keeps what it knows of itself there:
        ``meta.origin["recorded"]``); None for a session without messages."""
        row = _FIRST_MESSAGE.first(self.db, (session_id,))
        return None if row is None else message_model(row)

    @reads
    def history(self, session_id: int) -> History:
        """L3 as stored: summaries in order, then the messages not archived."""
        self.sessions.get_session(session_id)
        summaries = [
            summary_model(r)
            for r in SummaryRow.select()
            .where((SummaryRow.session == session_id) & (SummaryRow.active == True))  # noqa: E712
            .order_by(SummaryRow.id)
        ]
        # namedtuples, not model instances: a 10 000-message history loads several times faster
        msgs = [
            message_model(r)
            for r in MessageRow.select()
            .where((MessageRow.session == session_id) & MessageRow.segment.is_null())
            .order_by(MessageRow.id)
            .namedtuples()
        ]
        return History(summaries=summaries, messages=msgs)

    @reads
    def all_messages(self, session_id: int) -> list[Message]:
        """Every message of the session, in history or archived, in the order written."""
        q = (
            MessageRow.select(*table_columns(MessageRow))
            .where(MessageRow.session == session_id)
            .order_by(MessageRow.id)
        )
        return [message_model(r) for r in q.namedtuples()]

    @reads
    def history_marker(self, session_id: int) -> tuple[int, int, int]:
        """(last message id, messages in history, last summary id): changes with any write
        to the session's L3, so a long-lived reader can tell when to reload."""
        m = MessageRow
        last, count = (
            m.select(fn.MAX(m.id), fn.COUNT(m.id))
            .where((m.session == session_id) & m.segment.is_null())
            .tuples()
            .first()
        ) or (0, 0)
        summary = (
            SummaryRow.select(fn.MAX(SummaryRow.id))
            .where(SummaryRow.session == session_id)
            .scalar()
        )
        return (last or 0, count or 0, summary or 0)

    @reads
    def set_message_tokens(self, counts: dict[int, int]) -> None:
        """Store token counts computed later (the per-message cache).

        A read-only store keeps them in memory only (its caller already has them).
        """
        if not self.read_only and counts:
            self._store_tokens(counts)

    @writes
    def _store_tokens(self, counts: dict[int, int]) -> None:
        for mid, tokens in counts.items():
            MessageRow.update(tokens=tokens).where(MessageRow.id == mid).execute()

    # ------------------------------------------------------------------ observations and usage
    @writes
    def add_observation(self, obs: Observation) -> Observation:
        new_id = self._insert_row(ObservationRow, observation_row(obs))
        return obs.model_copy(update={"id": new_id})

    @writes
    def add_observations(self, observations: list[Observation]) -> None:
        """Write several observations at once (an import's batch)."""
        self._insert_rows(ObservationRow, [observation_row(o) for o in observations])

    @reads
    def observations(self, session_id: int, round_index: int | None = None) -> list[Observation]:
        q = ObservationRow.select(*table_columns(ObservationRow)).where(
            ObservationRow.session == session_id
        )
        if round_index is not None:
            q = q.where(ObservationRow.round_index == round_index)
        # namedtuples, not model instances: a replay loads a long session's thousands at once
        return [observation_model(r) for r in q.order_by(ObservationRow.id).namedtuples()]

    @reads
    def observation_for(self, session_id: int, tool_use_id: str) -> Observation | None:
        row = ObservationRow.get_or_none(
            (ObservationRow.session == session_id) & (ObservationRow.tool_use_id == tool_use_id)
        )
        return None if row is None else observation_model(row)


_LAST_ROUND = (
    f'SELECT MAX("{RoundRow.number.column_name}") FROM "{RoundRow._meta.table_name}" '
    f'WHERE "{RoundRow.session.column_name}" = ?'
)


_FIRST_MESSAGE = Select(MessageRow, "{session} = ?", order="{id}", limit=1)
