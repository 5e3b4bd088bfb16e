"""The repository: every read and write of a session, in terms of ``engine.models``.

Each write is committed as it happens (a crash loses at most the step being written). A
compaction is one transaction: a crash at any point leaves either the old history or the new
one, never a mix. Nothing is ever deleted by compaction: archived messages stay in the message
table, linked to the segment (and through it to the summary) that replaced them.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from peewee import (
    JOIN,
    ForeignKeyField,
    IntegrityError,
    OperationalError,
    SqliteDatabase,
    chunked,
    fn,
)

from engine.models import (
    ArchivedSegment,
    Compaction,
    History,
    Message,
    MessageMeta,
    Observation,
    RecallHit,
    Round,
    RoundStatus,
    Session,
    SessionInfo,
    StrategySwitch,
    Summary,
    TodoItem,
    ToolCall,
    Usage,
    UsageRecord,
    utcnow,
)
from engine.store import schema, search
from engine.store.lease import Heartbeat, Holder, SessionBusy, is_alive, new_owner
from engine.store.models import (
    TABLES,
    BaseRow,
    CompactionRow,
    LeaseRow,
    MessageRow,
    ObservationRow,
    RoundRow,
    SegmentRow,
    SessionRow,
    StrategySwitchRow,
    SummaryRow,
    TokenCountRow,
    UsageRow,
)
from engine.store.schema import StoreError
from prompts.agents_prompts.summary_prompt import RECALL_NOTE, SEGMENT_PENDING

PRAGMAS = {
    "foreign_keys": 1,
    "synchronous": "normal",
}
"""Per-connection settings; ``busy_timeout`` comes from :meth:`Store.open`, and WAL is switched
on once, after the file was accepted (it is a property of the file)."""

DEFAULT_BUSY_TIMEOUT = 30.0
"""Seconds a statement waits for another process' write before "database is locked"."""
LOCKED_RETRIES = 5
"""A write transaction that still found the database locked is retried this many times."""
LEASE_HEARTBEAT = 5.0
"""Seconds between refreshes of a held lease."""
LEASE_STALE_AFTER = 60.0
"""A lease held from another host is dead when its heartbeat is older than this."""
LEASE_POLL = 0.1
"""How often a waiting writer looks at the lease again."""

_T = TypeVar("_T")


_opening = threading.Lock()


class SessionNotFound(StoreError):
    """No session with that id."""


def _is_locked(exc: OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


def reads(method: Callable[..., _T]) -> Callable[..., _T]:
    """Run a Store method on this store's own file: bind the tables to it on this thread."""

    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> _T:
        self.bind()
        return method(self, *args, **kwargs)

    return wrapper


def writes(method: Callable[..., _T]) -> Callable[..., _T]:
    """Run a Store method as one ``BEGIN IMMEDIATE`` transaction, retried while locked.

    IMMEDIATE takes the write lock first, so a transaction that reads then writes
    (``open_round``) cannot fail half-way with "database is locked" when another process
    wrote in between; the busy timeout makes it wait its turn instead. A transaction that
    still met a lock rolled back whole, so running it again is safe. Nested calls join the
    outer transaction.
    """

    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> _T:
        if self.read_only:
            raise StoreError(f"{self.path} is open read-only; this command does not write")
        self.bind()
        if self.db.in_transaction():
            return method(self, *args, **kwargs)
        for attempt in range(LOCKED_RETRIES + 1):
            try:
                with self.db.atomic("IMMEDIATE"):
                    return method(self, *args, **kwargs)
            except OperationalError as exc:
                if not _is_locked(exc):
                    raise
                if attempt == LOCKED_RETRIES:
                    raise StoreError(
                        f"{self.path} stayed locked by another process for "
                        f"{(attempt + 1) * self.busy_timeout:g} s; try again"
                    ) from None
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    return wrapper


class Store:
    """A ctxscope database. Create with :meth:`open`; any number may be open at once."""

    def __init__(
        self,
        db: SqliteDatabase,
        path: Path,
        read_only: bool = False,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> None:
        self.db = db
        self.path = path
        self.read_only = read_only
        """Opened for reading only: SQLite refuses every write (``PRAGMA query_only``)."""
        self.busy_timeout = busy_timeout

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        read_only: bool = False,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        durable: bool = True,
    ) -> Store:
        """Open (or create) the database at ``path``; refuse foreign or corrupt files.

        A file is inspected read-only first and nothing is written to it before it is
        accepted. ``read_only`` stores (``show``, ``context``, ``sessions``) never write a
        session; they still bring an old schema up to date.

        ``durable=False`` is for a scratch database that is thrown away after use (a replay's):
        commits are not flushed to the disk (``synchronous = off``) and the rollback journal
        stays in memory (``journal_mode = memory``, not WAL), so a transaction still commits or
        rolls back whole, but a crash of the machine (or of the process, mid-commit) may leave
        the file corrupt. Never for a database a user keeps.
        """
        path = Path(path)
        version = schema.inspect(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder for {path}: {exc}") from None
        pragmas = {**PRAGMAS, "busy_timeout": int(busy_timeout * 1000)}
        if not durable:
            pragmas["synchronous"] = "off"
        db = SqliteDatabase(str(path), pragmas=pragmas, timeout=busy_timeout)
        store = cls(db, path, read_only=read_only, busy_timeout=busy_timeout)
        try:
            # Creating tables and migrating go through the tables' schema manager, which
            # peewee shares between threads: one store opens at a time.
            _opening.acquire()
            store.bind()
            db.connect(reuse_if_open=True)
            if version is None:
                with db.atomic("IMMEDIATE"):
                    # Another process may have created it while this one waited for the lock.
                    if schema.sql(db, "PRAGMA application_id").fetchone()[0] != (
                        schema.APPLICATION_ID
                    ):
                        db.create_tables(TABLES)
                        search.create(db)
                        db.pragma("application_id", schema.APPLICATION_ID)
                        db.pragma("user_version", schema.SCHEMA_VERSION)
            else:
                schema.migrate(db, version)
            journal = "wal" if durable else "memory"
            if schema.sql(db, "PRAGMA journal_mode").fetchone()[0] != journal:
                schema.sql(db, f"PRAGMA journal_mode = {journal}")
            if read_only:
                db.pragma("query_only", 1, permanent=True)
        except Exception as exc:
            db.close()
            raise StoreError(f"cannot use {path}: {exc}") from None
        finally:
            _opening.release()
        return store

    def bind(self) -> None:
        """Bind the tables to this store's file on the calling thread.

        Every method does this on entry; call it yourself only to query the row classes
        directly (tests do). Binding is per thread, so another thread's store is unaffected.
        """
        if SessionRow._meta.database is not self.db:
            self.db.bind(TABLES, bind_refs=False, bind_backrefs=False)

    def close(self) -> None:
        if not self.db.is_closed():
            self.db.close()

    # ------------------------------------------------------------------ the writer lease
    @reads
    def lease_holder(self, session_id: int) -> Holder | None:
        """Who holds the session's lease (alive or not), or None."""
        row = LeaseRow.get_or_none(LeaseRow.session == session_id)
        return None if row is None else _holder(row)

    @reads
    def writer_alive(self, session_id: int, stale_after: float = LEASE_STALE_AFTER) -> bool:
        """True when a live process holds the session's lease."""
        holder = self.lease_holder(session_id)
        return holder is not None and is_alive(holder, stale_after)

    def acquire_lease(
        self,
        session_id: int,
        purpose: str,
        wait: float = 0.0,
        stale_after: float = LEASE_STALE_AFTER,
        heartbeat: float = LEASE_HEARTBEAT,
    ) -> Lease:
        """Become the session's only writer, or raise :class:`SessionBusy`.

        A lease whose holder is provably dead is taken over (``Lease.took_over`` says from
        whom). With ``wait`` > 0, a live holder is waited for up to that many seconds
        (``math.inf``: until it finishes).
        """
        if self.read_only:
            raise StoreError(f"{self.path} is open read-only")
        self.get_session(session_id)
        owner, host, pid, started = new_owner()
        deadline = time.monotonic() + wait
        while True:
            taken, other = self._try_lease(
                session_id, purpose, owner, host, pid, started, stale_after
            )
            if taken:
                lease = Lease(self, session_id, owner, other, heartbeat)
                lease.start()
                return lease
            assert other is not None
            if time.monotonic() >= deadline:
                raise SessionBusy(
                    f"session {session_id} is being written by another ctxscope "
                    f"({other.describe()}); one writer at a time — try again when it is "
                    "done, or pass --wait to queue behind it"
                )
            time.sleep(LEASE_POLL)

    @writes
    def _try_lease(
        self,
        session_id: int,
        purpose: str,
        owner: str,
        host: str,
        pid: int,
        started: str,
        stale_after: float,
    ) -> tuple[bool, Holder | None]:
        """Take the lease if it is free or its holder is dead; else say who holds it."""
        table = LeaseRow
        row = table.get_or_none(table.session == session_id)
        previous = None if row is None else _holder(row)
        if previous is not None:
            if is_alive(previous, stale_after):
                return False, previous
            table.delete().where(table.session == session_id).execute()
        now = utcnow()
        table.create(
            session=session_id,
            owner=owner,
            host=host,
            pid=pid,
            started=started,
            purpose=purpose,
            acquired_at=now,
            heartbeat_at=now,
        )
        return True, previous

    @writes
    def _beat(self, owner: str) -> None:
        table = LeaseRow
        table.update(heartbeat_at=utcnow()).where(table.owner == owner).execute()

    @writes
    def _release(self, owner: str) -> None:
        table = LeaseRow
        table.delete().where(table.owner == owner).execute()

    # ------------------------------------------------------------------ sessions
    @writes
    def create_session(
        self,
        workspace: str,
        title: str = "",
        provider: str = "",
        model: str = "",
        strategy: str = "layered",
    ) -> Session:
        now = utcnow()
        row = SessionRow.create(
            title=title,
            workspace=workspace,
            provider=provider,
            model=model,
            strategy=strategy,
            created_at=now,
            updated_at=now,
        )
        return _session(row)

    @reads
    def get_session(self, session_id: int) -> Session:
        row = SessionRow.get_or_none(SessionRow.id == session_id)
        if row is None:
            raise SessionNotFound(f"no session {session_id} in {self.path}")
        return _session(row)

    @reads
    def latest_session(self) -> Session | None:
        row = SessionRow.select().order_by(SessionRow.updated_at.desc()).first()
        return None if row is None else _session(row)

    @writes
    def update_session(self, session_id: int, **fields: Any) -> Session:
        """Change title, provider, model or strategy; bumps ``updated_at``."""
        allowed = {"title", "provider", "model", "strategy", "workspace"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update session fields {sorted(unknown)}")
        self.get_session(session_id)
        SessionRow.update(updated_at=utcnow(), **fields).where(
            SessionRow.id == session_id
        ).execute()
        return self.get_session(session_id)

    @reads
    def list_sessions(self) -> list[SessionInfo]:
        """Every session, most recently updated first, with its figures."""
        rounds = (
            RoundRow.select(RoundRow.session, fn.COUNT(RoundRow.id).alias("n"))
            .group_by(RoundRow.session)
            .dicts()
        )
        n_rounds = {r["session"]: r["n"] for r in _dicts(rounds)}
        msgs = (
            MessageRow.select(
                MessageRow.session,
                fn.COUNT(MessageRow.id).alias("n"),
                fn.SUM(
                    fn.IIF(MessageRow.segment.is_null(), fn.COALESCE(MessageRow.tokens, 0), 0)
                ).alias("live"),
            )
            .group_by(MessageRow.session)
            .dicts()
        )
        n_msgs = {r["session"]: (r["n"], r["live"] or 0) for r in _dicts(msgs)}
        summ = (
            SummaryRow.select(
                SummaryRow.session, fn.SUM(fn.COALESCE(SummaryRow.tokens, 0)).alias("t")
            )
            .where(SummaryRow.active == True)  # noqa: E712 - peewee expression
            .group_by(SummaryRow.session)
            .dicts()
        )
        summary_tokens = {r["session"]: r["t"] or 0 for r in _dicts(summ)}
        comps = (
            CompactionRow.select(CompactionRow.session, fn.COUNT(CompactionRow.id).alias("n"))
            .where(
                CompactionRow.outcome.in_(["success", "fallback"])
                & CompactionRow.undone_at.is_null()
            )
            .group_by(CompactionRow.session)
            .dicts()
        )
        n_comps = {r["session"]: r["n"] for r in _dicts(comps)}
        out = []
        for row in SessionRow.select().order_by(SessionRow.updated_at.desc(), SessionRow.id.desc()):
            count, live = n_msgs.get(row.id, (0, 0))
            out.append(
                SessionInfo(
                    session=_session(row),
                    rounds=n_rounds.get(row.id, 0),
                    messages=count,
                    current_tokens=live + summary_tokens.get(row.id, 0),
                    compactions=n_comps.get(row.id, 0),
                )
            )
        return out

    @writes
    def delete_session(self, session_id: int) -> None:
        """Delete a session and everything stored for it: rounds, messages (archived ones
        too), summaries, archived segments, compactions, observations, usage records and
        strategy switches, in one transaction. Raises ``SessionNotFound`` for an unknown id."""
        self.get_session(session_id)
        with self.db.atomic():
            # Children before parents: some links are RESTRICT (a segment's summary, an
            # archived message's segment), so a plain cascade from the session would refuse.
            for table in (ObservationRow, UsageRow, StrategySwitchRow, MessageRow):
                table.delete().where(table.session == session_id).execute()
            compactions = CompactionRow.select(CompactionRow.id).where(
                CompactionRow.session == session_id
            )
            SegmentRow.delete().where(SegmentRow.compaction.in_(compactions)).execute()
            for parent in (CompactionRow, SummaryRow, RoundRow):
                parent.delete().where(parent.session == session_id).execute()
            SessionRow.delete().where(SessionRow.id == session_id).execute()

    def _touch(self, session_id: int) -> None:
        """Bump the session's ``updated_at`` (every write of a step does: plain SQL)."""
        table, column = SessionRow._meta.table_name, SessionRow.updated_at.column_name
        schema.sql(
            self.db,
            f'UPDATE "{table}" SET "{column}" = ? WHERE "id" = ?',
            (SessionRow.updated_at.db_value(utcnow()), session_id),
        )

    # ------------------------------------------------------------------ rounds and messages
    @writes
    def open_round(self, session_id: int, user_message: Message) -> tuple[Round, Message]:
        """Start the next round with its user message; both committed together."""
        self.get_session(session_id)
        with self.db.atomic():
            last = (
                RoundRow.select(fn.MAX(RoundRow.number))
                .where(RoundRow.session == session_id)
                .scalar()
            )
            index = (last or 0) + 1
            row = RoundRow.create(session=session_id, number=index, started_at=utcnow())
            user_message.meta.round = index
            msg = self._insert_message(session_id, row.id, user_message)
            self._touch(session_id)
        return _round(row), msg

    @writes
    def append_message(self, session_id: int, round_index: int, message: Message) -> Message:
        """Write one step of a round to history, committed at once."""
        round_id = self._round_id(session_id, round_index)
        message.meta.round = round_index
        with self.db.atomic():
            msg = self._insert_message(session_id, round_id, message)
            self._touch(session_id)
        return msg

    def _insert_message(self, session_id: int, round_id: int, m: Message) -> Message:
        new_id = self._insert_row(MessageRow, _message_row(session_id, round_id, m))
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
        each round with its messages, ids set.
        """
        if any(not messages for messages, _ in rounds):
            raise ValueError("a round needs at least its user message")
        last = (
            RoundRow.select(fn.MAX(RoundRow.number)).where(RoundRow.session == session_id).scalar()
        )
        round_id = _next_id(RoundRow)
        message_id = _next_id(MessageRow)
        round_rows: list[dict[str, Any]] = []
        message_rows: list[dict[str, Any]] = []
        out: list[tuple[Round, list[Message]]] = []
        for number, (messages, status) in enumerate(rounds, start=(last or 0) + 1):
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
            stored = []
            for m in messages:
                m.meta.round = number
                message_rows.append({"id": message_id, **_message_row(session_id, round_id, m)})
                stored.append(m.model_copy(update={"id": message_id}))
                message_id += 1
            out.append((rnd, stored))
            round_id += 1
        self._insert_rows(RoundRow, round_rows)
        self._insert_rows(MessageRow, message_rows)
        self._touch(session_id)
        return out

    def _insert_rows(self, table: type[BaseRow], rows: Sequence[dict[str, Any]]) -> None:
        """INSERT ``rows`` (values by field name, alike in their keys) with one prepared
        statement run per row.

        Stores what ``table.insert_many(rows)`` stores: a field left out takes its default,
        every value goes through its field's ``db_value``. What it saves is peewee building
        the statement, a few microseconds a value, which an import of thousands of messages
        paid in full; ``executemany`` binds the parameters in C, with no variable limit.
        """
        if not rows:
            return
        sql, values = _insert_statement(table, rows[0])
        with _as_peewee_errors():
            self.db.cursor().executemany(sql, [values(r) for r in rows])  # type: ignore[no-untyped-call]

    def _insert_row(self, table: type[BaseRow], row: dict[str, Any]) -> int:
        """:meth:`_insert_rows` for one row (a live step's message, observation or usage,
        written at every step of every round); returns the new row's id."""
        sql, values = _insert_statement(table, row)
        new_id = schema.sql(self.db, sql, values(row)).lastrowid
        assert new_id is not None
        return new_id

    @writes
    def finish_round(
        self, session_id: int, round_index: int, status: RoundStatus, error: str | None = None
    ) -> Round:
        row = self._round_row(session_id, round_index)
        row.status = status.value
        row.finished_at = utcnow()
        row.error = error
        row.save()
        self._touch(session_id)
        return _round(row)

    @reads
    def rounds(self, session_id: int) -> list[Round]:
        q = (
            RoundRow.select(*_columns(RoundRow))
            .where(RoundRow.session == session_id)
            .order_by(RoundRow.number)
        )
        return [_round(r) for r in q.namedtuples()]

    @reads
    def open_rounds(self, session_id: int) -> list[Round]:
        """Rounds still marked open (after a crash, or the one running now)."""
        q = RoundRow.select().where(
            (RoundRow.session == session_id) & (RoundRow.status == RoundStatus.OPEN.value)
        )
        return [_round(r) for r in q.order_by(RoundRow.number)]

    @reads
    def round_messages(self, session_id: int, round_index: int) -> list[Message]:
        row = self._round_row(session_id, round_index)
        q = MessageRow.select().where(MessageRow.round == row).order_by(MessageRow.id)
        return [_message(r) for r in q]

    @reads
    def history(self, session_id: int) -> History:
        """L3 as stored: summaries in order, then the messages not archived."""
        self.get_session(session_id)
        summaries = [
            _summary(r)
            for r in SummaryRow.select()
            .where((SummaryRow.session == session_id) & (SummaryRow.active == True))  # noqa: E712
            .order_by(SummaryRow.id)
        ]
        # namedtuples, not model instances: a 10 000-message history loads several times faster
        msgs = [
            _message(r)
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
            MessageRow.select(*_columns(MessageRow))
            .where(MessageRow.session == session_id)
            .order_by(MessageRow.id)
        )
        return [_message(r) for r in q.namedtuples()]

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

    def _round_id(self, session_id: int, round_index: int) -> int:
        """:meth:`_round_row`'s id, in plain SQL: this runs at every step of every round, and
        peewee takes longer to write the query than SQLite to answer it."""
        table, session, number = (
            RoundRow._meta.table_name,
            RoundRow.session.column_name,
            RoundRow.number.column_name,
        )
        found = schema.sql(
            self.db,
            f'SELECT "id" FROM "{table}" WHERE "{session}" = ? AND "{number}" = ?',
            (session_id, round_index),
        ).fetchone()
        if found is None:
            raise StoreError(f"session {session_id} has no round {round_index}")
        return int(found[0])

    def _round_row(self, session_id: int, round_index: int) -> RoundRow:
        row = RoundRow.get_or_none(
            (RoundRow.session == session_id) & (RoundRow.number == round_index)
        )
        if row is None:
            raise StoreError(f"session {session_id} has no round {round_index}")
        return row

    # ------------------------------------------------------------------ observations and usage
    @writes
    def add_observation(self, obs: Observation) -> Observation:
        new_id = self._insert_row(ObservationRow, _observation_row(obs))
        return obs.model_copy(update={"id": new_id})

    @writes
    def add_observations(self, observations: list[Observation]) -> None:
        """Write several observations at once (an import's batch)."""
        self._insert_rows(ObservationRow, [_observation_row(o) for o in observations])

    @reads
    def observations(self, session_id: int, round_index: int | None = None) -> list[Observation]:
        q = ObservationRow.select().where(ObservationRow.session == session_id)
        if round_index is not None:
            q = q.where(ObservationRow.round_index == round_index)
        return [_observation(r) for r in q.order_by(ObservationRow.id)]

    @reads
    def observation_for(self, session_id: int, tool_use_id: str) -> Observation | None:
        row = ObservationRow.get_or_none(
            (ObservationRow.session == session_id) & (ObservationRow.tool_use_id == tool_use_id)
        )
        return None if row is None else _observation(row)

    @writes
    def add_usage(self, record: UsageRecord) -> UsageRecord:
        new_id = self._insert_row(UsageRow, _usage_row(record))
        return record.model_copy(update={"id": new_id})

    @writes
    def add_usages(self, records: list[UsageRecord]) -> None:
        """Write several usage records at once (an import's batch)."""
        self._insert_rows(UsageRow, [_usage_row(r) for r in records])

    @reads
    def usages(self, session_id: int) -> list[UsageRecord]:
        q = (
            UsageRow.select(*_columns(UsageRow))
            .where(UsageRow.session == session_id)
            .order_by(UsageRow.id)
        )
        return [_usage(r) for r in q.namedtuples()]

    @reads
    def last_usage(self, session_id: int) -> UsageRecord | None:
        """The last real measurement: a record of all zeros (a provider fault, an import) is
        not one and is passed over."""
        u = UsageRow
        measured = (
            u.input_tokens
            + u.output_tokens
            + u.cache_read_input_tokens
            + u.cache_creation_input_tokens
        ) > 0
        row = u.select().where((u.session == session_id) & measured).order_by(u.id.desc()).first()
        return None if row is None else _usage(row)

    # ------------------------------------------------------------------ token counts
    @reads
    def token_counts(self) -> dict[str, int]:
        """Remembered counts of the texts every request repeats, by digest
        (:func:`engine.messages.tokens.remember`)."""
        rows = TokenCountRow.select(TokenCountRow.digest, TokenCountRow.tokens)
        return {row.digest: row.tokens for row in rows}

    @writes
    def remember_token_counts(self, counts: dict[str, int]) -> None:
        """Keep new counts for later runs; a digest already known is left as it is."""
        rows = [{"digest": d, "tokens": n} for d, n in counts.items()]
        for batch in chunked(rows, 200):
            TokenCountRow.insert_many(batch).on_conflict_ignore().execute()

    # ------------------------------------------------------------------ todos
    @reads
    def get_todos(self, session_id: int) -> list[TodoItem]:
        row = SessionRow.get_or_none(SessionRow.id == session_id)
        if row is None:
            raise SessionNotFound(f"no session {session_id} in {self.path}")
        return [TodoItem.model_validate(t) for t in row.todos or []]

    @writes
    def set_todos(self, session_id: int, todos: Iterable[TodoItem]) -> None:
        SessionRow.update(todos=[t.model_dump() for t in todos], updated_at=utcnow()).where(
            SessionRow.id == session_id
        ).execute()

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
        if not message_ids:
            raise ValueError("a compaction must archive at least one message")
        with self.db.atomic():
            rows = list(
                MessageRow.select(MessageRow.id, MessageRow.round, MessageRow.tokens).where(
                    (MessageRow.session == session_id)
                    & (MessageRow.id.in_(message_ids))
                    & MessageRow.segment.is_null()
                )
            )
            if len(rows) != len(set(message_ids)):
                raise StoreError("some of those messages are missing or already archived")
            round_ids = {r.round_id for r in rows}
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
                tokens=sum(r.tokens or 0 for r in rows),
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
        comp = _compaction(comp_row)
        stored_summary = None if summary_row is None else _summary(summary_row)
        return comp, stored_summary, self.segment(seg_row.id)

    def _archive_messages(self, message_ids: list[int], segment: SegmentRow) -> None:
        MessageRow.update(segment=segment).where(MessageRow.id.in_(message_ids)).execute()

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
        return [_observation(r) for r in q.order_by(ObservationRow.id)]

    @writes
    def undo_compaction(self, session_id: int, compaction_id: int | None = None) -> Compaction:
        """Reverse the latest compaction (or ``compaction_id``, which must be the latest one
        not yet undone), in one transaction.

        Its archived messages return to history in their places (history is ordered by id),
        their rounds are no longer archived, its summary stays in the archive but leaves L3,
        the summaries it replaced or re-compacted are active again, and the record gets
        ``undone_at``. Raises StoreError naming the compaction to undo first.
        """
        with self.db.atomic():
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
        return _compaction(latest)

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
    def switch_strategy(self, session_id: int, strategy: str) -> Session:
        """Make ``strategy`` the session's strategy and record the switch (no-op if unchanged)."""
        session = self.get_session(session_id)
        if session.strategy == strategy:
            return session
        with self.db.atomic():
            StrategySwitchRow.create(
                session=session_id,
                previous=session.strategy,
                strategy=strategy,
                created_at=utcnow(),
            )
            SessionRow.update(strategy=strategy, updated_at=utcnow()).where(
                SessionRow.id == session_id
            ).execute()
        return self.get_session(session_id)

    @reads
    def strategy_switches(self, session_id: int) -> list[StrategySwitch]:
        q = (
            StrategySwitchRow.select()
            .where(StrategySwitchRow.session == session_id)
            .order_by(StrategySwitchRow.id)
        )
        return [
            StrategySwitch(previous=r.previous, strategy=r.strategy, created_at=r.created_at)
            for r in q
        ]

    @writes
    def record_compaction(self, compaction: Compaction) -> Compaction:
        """Store a compaction that changed nothing (failed or skipped)."""
        row = CompactionRow.create(
            session=compaction.session_id,
            **compaction.model_dump(exclude={"id", "session_id", "summary_id"}),
        )
        return _compaction(row)

    @reads
    def last_summary_compaction_at(self, session_id: int) -> datetime | None:
        """When the session's newest compaction that wrote a summary was made (None: none
        has). Asked before every request: one row, not the session's every compaction."""
        c = CompactionRow
        row = (
            c.select(c.created_at)
            .where((c.session == session_id) & c.summary.is_null(False))
            .order_by(c.id.desc())
            .first()
        )
        return None if row is None else row.created_at

    @reads
    def compactions(self, session_id: int) -> list[Compaction]:
        q = (
            CompactionRow.select()
            .where(CompactionRow.session == session_id)
            .order_by(CompactionRow.id)
        )
        return [_compaction(r) for r in q]

    @reads
    def segment(self, segment_id: int) -> ArchivedSegment:
        row = SegmentRow.get_by_id(segment_id)
        msgs = [
            _message(m)
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
        return _summary(SummaryRow.get_by_id(summary_id))

    @reads
    def summaries(self, session_id: int) -> list[Summary]:
        """Every summary of the session, active or superseded, oldest first."""
        q = SummaryRow.select().where(SummaryRow.session == session_id).order_by(SummaryRow.id)
        return [_summary(r) for r in q]


# ---------------------------------------------------------------------- row → model
_INSERTS: dict[tuple[type[BaseRow], tuple[str, ...]], tuple[str, list[Any]]] = {}
"""Prepared INSERT statements by table and the fields given (the defaults are not kept:
they are computed again each time, as peewee would)."""


def _insert_statement(
    table: type[BaseRow], row: dict[str, Any]
) -> tuple[str, Callable[[dict[str, Any]], tuple[Any, ...]]]:
    """The INSERT of ``row``'s table for its fields, and what turns a row with those fields
    into the statement's parameters (each value through its field's ``db_value``, a field
    left out as its default)."""
    key = (table, tuple(row))
    found = _INSERTS.get(key)
    if found is None:
        fields = [f for f in table._meta.sorted_fields if not f.primary_key or f.name in row]
        columns = ", ".join(f'"{f.column_name}"' for f in fields)
        marks = ", ".join("?" for _ in fields)
        sql = f'INSERT INTO "{table._meta.table_name}" ({columns}) VALUES ({marks})'
        found = _INSERTS[key] = (sql, fields)
    sql, fields = found
    specs = []
    for f in fields:
        default = f.default() if callable(f.default) else f.default
        specs.append((f.name, f.db_value, f.db_value(default)))

    def values(r: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(to_db(r[name]) if name in r else stored for name, to_db, stored in specs)

    return sql, values


@contextmanager
def _as_peewee_errors() -> Iterator[None]:
    """sqlite3's errors as peewee raises them (so that "locked" is retried by ``@writes``),
    around an ``executemany``, which peewee has no call for (single statements go through
    :func:`engine.store.schema.sql`, peewee's ``execute_sql``, which does this itself)."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        raise OperationalError(*exc.args) from exc
    except sqlite3.IntegrityError as exc:
        raise IntegrityError(*exc.args) from exc


def _message_row(session_id: int, round_id: int, m: Message) -> dict[str, Any]:
    return {
        "session": session_id,
        "round": round_id,
        "role": m.role,
        "content": m.content,
        "tool_calls": [c.model_dump() for c in m.tool_calls],
        "meta": m.meta.model_dump(exclude_defaults=True),
        "tokens": m.tokens,
        "created_at": m.created_at,
    }


def _observation_row(o: Observation) -> dict[str, Any]:
    return {
        "session": o.session_id,
        "message": o.message_id,
        "round_index": o.round_index,
        "step": o.step,
        "tool_use_id": o.tool_use_id,
        "tool_name": o.tool_name,
        "result": o.result,
        "text": o.text,
        "tokens_full": o.tokens_full,
        "tokens_compressed": o.tokens_compressed,
    }


def _usage_row(r: UsageRecord) -> dict[str, Any]:
    return {
        "session": r.session_id,
        "round_index": r.round_index,
        "step": r.step,
        "input_tokens": r.usage.input_tokens,
        "output_tokens": r.usage.output_tokens,
        "cache_read_input_tokens": r.usage.cache_read_input_tokens,
        "cache_creation_input_tokens": r.usage.cache_creation_input_tokens,
        "local_estimate": r.local_estimate,
        "source": r.source,
        "created_at": r.created_at,
    }


def _columns(table: type[BaseRow]) -> list[Any]:
    """Every column, foreign keys under their ``*_id`` names, for ``.namedtuples()`` queries.

    Such rows carry the same attribute names as model instances, so the converters below take
    either; building namedtuples instead of model instances makes big reads much faster.
    """
    return [
        f.alias(f.object_id_name) if isinstance(f, ForeignKeyField) else f
        for f in table._meta.sorted_fields
    ]


def _next_id(table: type[BaseRow]) -> int:
    """The id SQLite would give the next row of ``table``: one past the highest."""
    return int(table.select(fn.MAX(table.id)).scalar() or 0) + 1


def _dicts(query: Any) -> list[dict[str, Any]]:
    """The rows of a ``.dicts()`` query (peewee's stubs type them as models)."""
    return list(query)


def _session(r: SessionRow) -> Session:
    return Session(
        id=r.id,
        title=r.title,
        workspace=r.workspace,
        provider=r.provider,
        model=r.model,
        strategy=r.strategy,
        created_at=r.created_at,
        updated_at=r.updated_at,
    )


def _round(r: RoundRow) -> Round:
    return Round(
        id=r.id,
        session_id=r.session_id,
        index=r.number,
        status=RoundStatus(r.status),
        archived=r.archived,
        started_at=r.started_at,
        finished_at=r.finished_at,
        error=r.error,
    )


def _message(r: MessageRow) -> Message:
    return Message(
        id=r.id,
        role=r.role,
        content=r.content,
        tool_calls=[ToolCall.model_validate(c) for c in r.tool_calls or []],
        meta=MessageMeta.model_validate(r.meta or {}),
        tokens=r.tokens,
        pinned=r.pinned,
        created_at=r.created_at,
    )


def _summary(r: SummaryRow) -> Summary:
    return Summary(
        id=r.id,
        session_id=r.session_id,
        content=r.content,
        start_time=r.start_time,
        cutoff_time=r.cutoff_time,
        first_round=r.first_round,
        last_round=r.last_round,
        fallback=r.fallback,
        tokens=r.tokens,
        placement=r.placement,
        strategy=r.strategy,
        active=r.active,
        created_at=r.created_at,
    )


def _compaction(r: CompactionRow) -> Compaction:
    return Compaction(
        id=r.id,
        session_id=r.session_id,
        trigger=r.trigger,
        strategy=r.strategy,
        focus=r.focus,
        tokens_before=r.tokens_before,
        tokens_after=r.tokens_after,
        messages_compacted=r.messages_compacted,
        messages_retained=r.messages_retained,
        rounds_compacted=r.rounds_compacted,
        duration_ms=r.duration_ms,
        outcome=r.outcome,
        error=r.error,
        summary_id=r.summary_id,
        placement=r.placement,
        stats=r.stats or {},
        fidelity=r.fidelity,
        undone_at=r.undone_at,
        created_at=r.created_at,
    )


def _observation(r: ObservationRow) -> Observation:
    return Observation(
        id=r.id,
        session_id=r.session_id,
        round_index=r.round_index,
        step=r.step,
        tool_use_id=r.tool_use_id,
        tool_name=r.tool_name,
        result=r.result,
        text=r.text,
        tokens_full=r.tokens_full,
        tokens_compressed=r.tokens_compressed,
        message_id=r.message_id,
    )


def _usage(r: UsageRow) -> UsageRecord:
    return UsageRecord(
        id=r.id,
        session_id=r.session_id,
        round_index=r.round_index,
        step=r.step,
        usage=Usage(
            input_tokens=r.input_tokens,
            output_tokens=r.output_tokens,
            cache_read_input_tokens=r.cache_read_input_tokens,
            cache_creation_input_tokens=r.cache_creation_input_tokens,
        ),
        local_estimate=r.local_estimate,
        source=r.source,
        created_at=r.created_at,
    )


def _holder(r: Any) -> Holder:
    return Holder(
        owner=r.owner,
        host=r.host,
        pid=r.pid,
        started=r.started,
        purpose=r.purpose,
        acquired_at=r.acquired_at,
        heartbeat_at=r.heartbeat_at,
    )


class Lease:
    """A held writer lease; :meth:`release` it (or use it as a context manager)."""

    def __init__(
        self, store: Store, session_id: int, owner: str, took_over: Holder | None, beat: float
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.owner = owner
        self.took_over = took_over
        """The dead holder this lease replaced, if any (its round may need recovery)."""
        self._heartbeat = Heartbeat(lambda: store._beat(owner), self._disconnect, beat)

    def _disconnect(self) -> None:
        """The heartbeat thread's own connection (peewee keeps one per thread) is closed."""
        self.store.db.close()

    def start(self) -> None:
        self._heartbeat.start()

    def release(self) -> None:
        """Stop the heartbeat and free the session for the next writer."""
        self._heartbeat.stop()
        self.store._release(self.owner)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
