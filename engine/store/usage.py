"""Usage: what each model call used and cost, as the provider reported it; and each session's
figures made from it, stored (:class:`~engine.store.models.FiguresRow`)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from peewee import DatabaseError

from engine.models import (
    UsageRecord,
)
from engine.store import dialect
from engine.store.access import reads, writes
from engine.store.models import (
    FiguresRow,
    LossesRow,
    SessionRow,
    UsageRow,
)
from engine.store.part import StorePart
from engine.store.rows import (
    Select,
    usage_model,
    usage_row,
)


@dataclass(frozen=True)
class StoredFigures:
    """A session's stored figures as read: ``figures`` None when not made since the last
    change; keep new ones with the ``generation`` read here."""

    session_id: int
    generation: int
    priced_with: str
    figures: dict[str, Any] | None


class UsageStore(StorePart):
    """Usage records, one per model call, and the figures each session's make."""

    @writes
    def add_usage(self, record: UsageRecord) -> UsageRecord:
        new_id = self._insert_row(UsageRow, usage_row(record))
        self.access._figures_changed(record.session_id)
        return record.model_copy(update={"id": new_id})

    @writes
    def add_usages(self, records: list[UsageRecord]) -> None:
        """Write several usage records at once (an import's batch)."""
        self._insert_rows(UsageRow, [usage_row(r) for r in records])
        for session_id in {r.session_id for r in records}:
            self.access._figures_changed(session_id)

    @reads
    def usages(self, session_id: int, from_round: int | None = None) -> list[UsageRecord]:
        """A session's usage records in the order written; with ``from_round``, only those of
        that round and later (what :meth:`drop_rounds` from it replaced: ``watch`` reads back
        the rounds it stored again, not the whole session)."""
        # plain SQL: an import reads a session's usage back for its compactions' flags
        if from_round is not None:
            return [usage_model(r) for r in _USAGES_FROM.all(self.db, (session_id, from_round))]
        return [usage_model(r) for r in _USAGES.all(self.db, (session_id,))]

    @reads
    def last_usage(self, session_id: int) -> UsageRecord | None:
        """The last real measurement: a record of all zeros (a provider fault, an import) is
        not one and is passed over."""
        row = _LAST_USAGE.first(self.db, (session_id,))
        return None if row is None else usage_model(row)

    def stored_figures(
        self, session_ids: Collection[int] | None = None
    ) -> dict[int, StoredFigures]:
        """The stored figures of ``session_ids`` (every session's when None), by session.

        A session without a row is given one first (generation 0, no figures), where the
        database can be written, even by a command that opened it only to look: figures are
        kept against a generation read *before* they were made, so a write between the read
        and the keeping (which moves the generation on) makes them be thrown away. A session
        missing from the answer has no row (the database could not be written): its figures
        are made each time and not kept."""
        self._hold(session_ids)
        self.bind()
        q = FiguresRow.select(
            FiguresRow.session, FiguresRow.generation, FiguresRow.priced_with, FiguresRow.figures
        )
        if session_ids is not None:
            q = q.where(FiguresRow.session.in_(list(session_ids)))
        out = {}
        rows: list[Any] = list(q.tuples())
        for sid, generation, priced_with, figures in rows:
            if isinstance(figures, str):  # PostgreSQL hands TEXT back as it is
                figures = json.loads(figures)
            out[sid] = StoredFigures(sid, generation, priced_with or "", figures)
        return out

    def keep_figures(self, made: Sequence[tuple[StoredFigures, str, dict[str, Any]]]) -> int:
        """Store figures made from what was read at each :class:`StoredFigures`' generation,
        with what they were priced with: ``(read, priced_with, figures)``. Figures whose
        session changed since are not kept. A cache: a database that cannot be written now
        (read-only, locked) keeps none, and says how many it kept."""
        if not made:
            return 0

        def keep() -> int:
            kept = 0
            for read, priced_with, figures in made:
                kept += (
                    FiguresRow.update(priced_with=priced_with, figures=figures)
                    .where(
                        (FiguresRow.session == read.session_id)
                        & (FiguresRow.generation == read.generation)
                    )
                    .execute()
                )
            return kept

        return self._cache_write(keep) or 0

    @reads
    def stored_losses(self, session_id: int) -> tuple[list[int], list[dict[str, Any]]] | None:
        """The compactions' ledger stored for ``session_id`` and the ids of the compactions
        it was made for; None when none is stored."""
        row = (
            LossesRow.select(LossesRow.compactions, LossesRow.losses)
            .where(LossesRow.session == session_id)
            .tuples()
            .first()
        )
        if row is None or row[1] is None:
            return None
        ids, losses = row
        if isinstance(losses, str):  # PostgreSQL hands TEXT back as it is
            losses = json.loads(losses)
        return [int(i) for i in ids.split(",") if i], losses

    def keep_losses(
        self, session_id: int, compactions: Sequence[int], losses: list[dict[str, Any]]
    ) -> bool:
        """Store the ledger of ``session_id``'s ``compactions`` (a cache: a database that
        cannot be written now keeps none); True when kept."""

        def keep() -> bool:
            ids = ",".join(str(i) for i in compactions)
            LossesRow.insert(session=session_id, compactions=ids, losses=losses).on_conflict(
                conflict_target=[LossesRow.session],
                update={LossesRow.compactions: ids, LossesRow.losses: losses},
            ).execute()
            return True

        return bool(self._cache_write(keep))

    def _hold(self, session_ids: Collection[int] | None) -> None:
        """A figures row for each of ``session_ids`` (every session) without one."""
        table, sessions = FiguresRow._meta.table_name, SessionRow._meta.table_name
        only = (
            "" if session_ids is None else f" AND s.id IN ({', '.join('?' for _ in session_ids)})"
        )
        statement = (
            f'INSERT INTO "{table}" (session_id, generation, priced_with) '
            f"SELECT s.id, 0, '' FROM \"{sessions}\" s WHERE NOT EXISTS "
            f'(SELECT 1 FROM "{table}" f WHERE f.session_id = s.id){only} '
            "ON CONFLICT DO NOTHING"
        )
        params = () if session_ids is None else tuple(session_ids)
        self._cache_write(lambda: dialect.sql(self.db, statement, params))

    def _cache_write(self, write: Any) -> Any:
        """Run ``write`` in a write transaction of its own (inside the caller's, when one is
        open); None when the database cannot be written now."""
        if self.access.read_only_reason is not None:
            return None
        self.bind()
        # A store opened to look has SQLite's query_only set against writing a session by
        # mistake; this one write, of figures made from what it read, lifts it for its time.
        sqlite = not dialect.is_postgres(self.db)
        looking = self.read_only and sqlite
        try:
            if looking:
                dialect.sql(self.db, "PRAGMA query_only = 0")
            if self.db.in_transaction():
                return write()
            if sqlite:  # a cache never waits for a writer (a long import): kept next time
                dialect.sql(self.db, "PRAGMA busy_timeout = 0")
            with self.begin_write():
                return write()
        except DatabaseError:  # read-only file, locked, a read-only PostgreSQL session
            return None
        finally:
            if sqlite:
                dialect.sql(self.db, f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            if looking:
                dialect.sql(self.db, "PRAGMA query_only = 1")


_USAGES = Select(UsageRow, "{session} = ?", order="{id}")
_USAGES_FROM = Select(UsageRow, "{session} = ? AND {round_index} >= ?", order="{id}")
_LAST_USAGE = Select(
    UsageRow,
    "{session} = ? AND {input_tokens} + {output_tokens} + {cache_read_input_tokens}"
    " + {cache_creation_input_tokens} > 0",
    order="{id} DESC",
    limit=1,
)
"""The last usage record that measured something (asked before every request)."""
