"""Forking a session: a new session holding a copy of everything another one stored.

A recorded session (imported or watched) is read-only: changing it (compacting, undoing,
pinning, asking, switching strategy) changes a fork instead, and the recording stays byte for
byte as it was. The copy is made row by row in one transaction, in stored order, every
reference (a message's round and archived segment, a compaction's summary, an observation's
message) pointing at the copy's own rows; the archived segments are indexed for Recall as a
compaction's are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.models import Session, utcnow
from engine.store import dialect, search
from engine.store.access import StoreAccess, writes
from engine.store.conversation import ConversationStore
from engine.store.models import (
    BaseRow,
    CompactionRow,
    MessageRow,
    ObservationRow,
    RoundRow,
    SegmentRow,
    SessionRow,
    StrategySwitchRow,
    SummaryRow,
    UsageRow,
)
from engine.store.part import StorePart
from engine.store.rows import session_model
from engine.store.sessions import SessionStore


@dataclass(frozen=True)
class Fork:
    """A session copied from another (:meth:`ForkStore.fork_session`)."""

    session: Session
    of: int
    """The session it is a copy of."""
    source: str
    """What it is a fork of, as the fork stores it (``fork of #2 at round 6``)."""
    messages: dict[int, int]
    """The original's message ids → the fork's."""
    compactions: dict[int, int]
    """The original's compaction ids → the fork's."""

    @property
    def note(self) -> str:
        """The sentence that tells the user (``fork of #2 at round 6: session 7 …``)."""
        return (
            f"{self.source}: session {self.session.id} "
            f"(#{self.of} is a recording and stays as it was)"
        )


Remap = dict[str, dict[Any, Any]]
"""For each reference column of a copied row: old id → the copy's id."""


class ForkStore(StorePart):
    """Copies of sessions (:meth:`fork_session`)."""

    def __init__(
        self, access: StoreAccess, sessions: SessionStore, conversation: ConversationStore
    ) -> None:
        super().__init__(access)
        self.sessions = sessions
        self.conversation = conversation

    @writes
    def fork_session(self, session_id: int, source: str) -> Fork:
        """A new session with a copy of ``session_id``'s rounds, messages, summaries,
        compactions, archive, observations, usage and strategy switches; ``source`` says what
        it is a fork of (``fork of #2 at round 6``). The copy is an ordinary session (no
        provider recorded): whatever runs it next names its own."""
        self.sessions.session_row(session_id)  # SessionNotFound before anything is written
        old = SessionRow.get_by_id(session_id)
        now = utcnow()
        row = SessionRow.create(
            title=f"{source}: {old.title}" if old.title else source,
            workspace=old.workspace,
            # a recording's folder stays shown, not used, in its fork too (issue 29)
            workspace_given=old.workspace_given,
            provider="",
            model=old.model,
            strategy=old.strategy,
            todos=old.todos,
            created_at=now,
            updated_at=now,
            source=source,
            params=old.params,
        )
        new = int(row.id)
        sid = {"session_id": {session_id: new}}
        rounds = self._copy(RoundRow, "session_id = ?", (session_id,), sid)
        summaries = self._copy(SummaryRow, "session_id = ?", (session_id,), sid)
        # the copied usage, compactions and observations are the original's, counted with it
        # (``copied``), never again: a fork bills only what it does itself (issue 39)
        copied = {"copied": True}
        compactions = self._copy(
            CompactionRow,
            "session_id = ?",
            (session_id,),
            {**sid, "summary_id": summaries},
            copied,
        )
        segments = self._copy(
            SegmentRow,
            f"compaction_id IN (SELECT id FROM {_name(CompactionRow)} WHERE session_id = ?)",
            (session_id,),
            {"compaction_id": compactions, "summary_id": summaries},
        )
        messages = self._copy(
            MessageRow,
            "session_id = ?",
            (session_id,),
            {**sid, "round_id": rounds, "segment_id": segments},
        )
        self._copy(
            ObservationRow,
            "session_id = ?",
            (session_id,),
            {**sid, "message_id": messages},
            copied,
        )
        self._copy(UsageRow, "session_id = ?", (session_id,), sid, copied)
        self._copy(StrategySwitchRow, "session_id = ?", (session_id,), sid)
        for segment_id in segments.values():
            search.index_segment(self.db, segment_id)
        return Fork(
            session=session_model(SessionRow.get_by_id(new)),
            of=session_id,
            source=source,
            messages=messages,
            compactions=compactions,
        )

    def fork_to_change(self, session: Session) -> Fork | None:
        """For a recorded session (imported, watched), the fork a change goes to (the
        recording stays as it was); None for any other session, which changes itself."""
        if not session.recorded or session.id is None:
            return None
        rounds = self.conversation.rounds(session.id)
        at = f"fork of #{session.id}" + (f" at round {rounds[-1].index}" if rounds else "")
        return self.fork_session(session.id, at)

    def _copy(
        self,
        table: type[BaseRow],
        where: str,
        params: tuple[Any, ...],
        remap: Remap,
        fixed: dict[str, Any] | None = None,
    ) -> dict[int, int]:
        """Copy ``table``'s rows matching ``where`` (stored values as they are, no conversion),
        each reference in ``remap`` pointed at the copy and each column of ``fixed`` set to its
        value; old id → new id."""
        fixed = fixed or {}
        columns = [f.column_name for f in table._meta.sorted_fields if not f.primary_key]
        names = ", ".join(f'"{c}"' for c in columns)
        rows = dialect.sql(
            self.db, f"SELECT id, {names} FROM {_name(table)} WHERE {where} ORDER BY id", params
        ).fetchall()
        insert = f"INSERT INTO {_name(table)} ({names}) VALUES ({', '.join('?' for _ in columns)})"
        at = [(i, remap[c]) for i, c in enumerate(columns) if c in remap]
        set_to = [(i, fixed[c]) for i, c in enumerate(columns) if c in fixed]
        ids: dict[int, int] = {}
        for old_id, *values in rows:
            for i, mapping in at:
                if values[i] is not None:
                    values[i] = mapping[values[i]]
            for i, value in set_to:
                values[i] = value
            ids[old_id] = dialect.insert_returning_id(self.db, insert, values)
        return ids


def _name(table: type[BaseRow]) -> str:
    return f'"{table._meta.table_name}"'
