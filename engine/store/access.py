"""How a :class:`~engine.store.repository.Store` reaches its file: opening (inspect, create,
migrate, pragmas), binding the tables per thread, and the ``@reads`` / ``@writes`` decorators
that run every method on this store's own connection (writes as one ``BEGIN IMMEDIATE``
transaction, retried while another process holds the lock)."""

from __future__ import annotations

import functools
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any, Self, TypeVar
from urllib.parse import urlsplit

from peewee import (
    Database,
    OperationalError,
    SqliteDatabase,
)

from engine.models import (
    utcnow,
)
from engine.store import dialect, locks, postgres, schema, search
from engine.store.errors import StoreError
from engine.store.models import (
    TABLES,
    BaseRow,
    FiguresRow,
    RoundRow,
    SessionRow,
)
from engine.store.rows import Select, insert_statement, update_statement

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


def reads(method: Callable[..., _T]) -> Callable[..., _T]:
    """Run a Store method on this store's own file: bind the tables to it on this thread."""

    @functools.wraps(method)
    def wrapper(self: StoreAccess, *args: Any, **kwargs: Any) -> _T:
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
    def wrapper(self: StoreAccess, *args: Any, **kwargs: Any) -> _T:
        if self.read_only:
            raise StoreError(f"{self.where} is open read-only; this command does not write")
        self.bind()
        if self.db.in_transaction():
            return _run(self, method, False, args, kwargs)
        for attempt in range(LOCKED_RETRIES + 1):
            try:
                with self.begin_write():
                    return _run(self, method, True, args, kwargs)
            except OperationalError as exc:
                if not locks.is_locked(exc):
                    raise self.disk_error(exc) from None
                if attempt == LOCKED_RETRIES:
                    waited = (attempt + 1) * self.busy_timeout
                    raise StoreError(self.locked_message(waited)) from None
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    return wrapper


def _run(
    store: StoreAccess,
    method: Callable[..., _T],
    opened: bool,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> _T:
    """Run a write, noting for :meth:`StoreAccess.together` whether it ``opened`` the
    transaction it runs in; the write around it (if any) gets its own note back after."""
    writing = store._writing
    outer, writing.opened = writing.opened, opened
    try:
        return method(store, *args, **kwargs)
    finally:
        writing.opened = outer


def _switch_journal(db: SqliteDatabase, mode: str, timeout: float) -> None:
    """Give the file ``mode`` as its journal, waiting up to ``timeout`` for other processes.

    SQLite answers a switch with "database is locked" at once, without calling the busy
    handler, while another connection holds the write lock of a file still in its rollback
    journal (a process that has just created the database and is switching it too): the
    switch is tried again, after a short pause, until the file has the mode (from either
    process) or the time is up.
    """
    deadline = time.monotonic() + timeout
    pause = 0.01
    while schema.sql(db, "PRAGMA journal_mode").fetchone()[0] != mode:
        try:
            schema.sql(db, f"PRAGMA journal_mode = {mode}")
        except OperationalError as exc:
            if not locks.is_locked(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


class _Writing(threading.local):
    """What this thread's running write of a store knows about its transaction."""

    opened = False
    """It opened the transaction it runs in, rather than joining a caller's."""


class StoreAccess:
    """A ctxscope database file, opened; the base of every part of :class:`Store`."""

    def __init__(
        self,
        db: Database,
        path: Path,
        read_only: bool = False,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        where: str | None = None,
    ) -> None:
        self.db = db
        self.path = path
        """The database file; for a PostgreSQL database, a file that is not there whose folder
        holds the files written beside the database (``data/``)."""
        self.where = str(path) if where is None else where
        """The database as the user names it: the file, or the URL without its password."""
        self.url: str | None = None
        """A PostgreSQL database's URL as given (kept to open it again, never shown)."""
        self.read_only = read_only
        """Opened for reading only: SQLite refuses every write (``PRAGMA query_only``)."""
        self.read_only_reason: str | None = None
        """Why the file could not be opened for writing (a read-only mount, permissions);
        None when read-only was asked for, or the store writes."""
        self.busy_timeout = busy_timeout
        self._writing = _Writing()

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        read_only: bool = False,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        durable: bool = True,
        made_here: bool = False,
    ) -> Self:
        """Open (or create) the database at ``path``; refuse foreign or corrupt files.

        A file is inspected read-only first and nothing is written to it before it is
        accepted. ``read_only`` stores (``show``, ``context``, ``sessions``) never write a
        session; they still bring an old schema up to date.

        ``durable=False`` is for a scratch database that is thrown away after use (a replay's):
        commits are not flushed to the disk (``synchronous = off``) and the rollback journal
        stays in memory (``journal_mode = memory``, not WAL), so a transaction still commits or
        rolls back whole, but a crash of the machine (or of the process, mid-commit) may leave
        the file corrupt. Never for a database a user keeps.

        ``made_here``: the file is a copy of an empty database this process just created at
        the current schema (a history import's worker copies one for each file it writes):
        it is not inspected again, which was half the cost of opening it.
        """
        if postgres.is_url(path):
            return cls._open_postgres(str(path), read_only, busy_timeout)
        path = Path(path)
        version = schema.SCHEMA_VERSION if made_here else schema.inspect(path)
        reason = None if made_here else schema.read_only_reason(path)
        if reason is not None:
            return cls._open_read_only(path, version, reason, busy_timeout)
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
            _switch_journal(db, "wal" if durable else "memory", busy_timeout)
            if read_only:
                db.pragma("query_only", 1, permanent=True)
        except Exception as exc:
            db.close()
            raise StoreError(f"cannot use {path}: {exc}") from None
        finally:
            _opening.release()
        return store

    @classmethod
    def _open_postgres(cls, url: str, read_only: bool, busy_timeout: float) -> Self:
        """A database on a PostgreSQL server: created at the current schema when it has no
        tables, migrated when older, refused when it holds another program's tables. Creating
        and migrating hold the database's write lock, so two clients starting at once create
        it once."""
        from engine.settings.config import default_database

        db = postgres.connect(url, read_only=read_only, busy_timeout=busy_timeout)
        name = urlsplit(url).path.strip("/") or "postgres"
        store = cls(
            db,
            # its files written beside it (``data/``) go beside the installation's default
            # database file, never into the current directory, unless ``data_dir`` says
            default_database().parent / f"{name}.postgresql",
            read_only=read_only,
            busy_timeout=busy_timeout,
            where=postgres.masked(url),
        )
        store.url = url
        try:
            with _opening:
                store.bind()
                schema.prepare_postgres(db, read_only)
        except StoreError as exc:
            db.close()
            raise StoreError(f"cannot use {store.where}: {exc}") from None
        except Exception as exc:
            db.close()
            raise StoreError(f"cannot use {store.where}: {postgres.one_line(exc, url)}") from None
        return store

    def begin_write(self) -> AbstractContextManager[None]:
        """A transaction holding the database's write lock from its start (SQLite's
        ``BEGIN IMMEDIATE``, an advisory lock on PostgreSQL): for a write that reads first."""
        return dialect.write_transaction(self.db, self.busy_timeout)

    @classmethod
    def _open_read_only(
        cls, path: Path, version: int | None, reason: str, busy_timeout: float
    ) -> Self:
        """A database this process cannot write, opened for reading only: nothing is created,
        migrated or switched to WAL, and every write is refused (``read_only_reason`` says
        why, for the commands to tell the user)."""
        if version is None:
            raise StoreError(f"{path} is empty and read-only ({reason}): nothing to read")
        if version < schema.SCHEMA_VERSION:
            raise StoreError(
                f"{path} is read-only ({reason}) and at schema {version}; this ctxscope "
                f"reads schema {schema.SCHEMA_VERSION} only after upgrading it, which needs "
                "write access"
            )
        pragmas = {**PRAGMAS, "busy_timeout": int(busy_timeout * 1000), "query_only": 1}
        pragmas.pop("synchronous")
        db = SqliteDatabase(
            schema.read_only_uri(path), pragmas=pragmas, timeout=busy_timeout, uri=True
        )
        store = cls(db, path, read_only=True, busy_timeout=busy_timeout)
        store.read_only_reason = reason
        try:
            with _opening:
                store.bind()
                db.connect(reuse_if_open=True)
        except Exception as exc:
            db.close()
            raise StoreError(f"cannot read {path} ({reason}): {exc}") from None
        return store

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One ``BEGIN IMMEDIATE`` transaction for work that spans many Store calls (an
        import): it commits or rolls back whole, and a lock held past the busy timeout or a
        full disk leaves it as one :class:`StoreError` line (not retried: the body is the
        caller's)."""
        self.bind()
        try:
            with self.begin_write():
                yield
        except (OperationalError, sqlite3.OperationalError) as exc:
            if locks.is_locked(exc):
                raise StoreError(self.locked_message(self.busy_timeout)) from None
            raise self.disk_error(exc) from None

    def together(self) -> AbstractContextManager[object]:
        """All of a write's statements or none: inside a ``@writes`` method, around the
        statements that must not be kept alone.

        A write that opened its own transaction has that already, and a savepoint on top
        would only cost (about 0.1 ms, at every step of a live session); one that joined a
        caller's transaction (an import's) takes a savepoint, so that its failure undoes its
        own statements and no more, as before.
        """
        return nullcontext() if self._writing.opened else self.db.atomic()

    def disk_error(self, exc: Exception) -> Exception:
        """A full disk as one line (the transaction has rolled back); anything else as is."""
        return StoreError(locks.full_message(self.path)) if locks.is_full(exc) else exc

    def locked_message(self, waited: float) -> str:
        """A lock held past the busy timeout, in words naming who holds the file: the live
        ctxscope writers the lease table knows, and the processes with a write lock on it."""
        who = self.live_writers()
        who += [locks.describe_process(pid) for pid in locks.lock_holders(self.path)]
        held = "; ".join(who) if who else "a process this one cannot name"
        return (
            f"{self.where} stayed locked for {waited:g} s by another writer ({held}); "
            "nothing was written: try again when it has finished"
        )

    def live_writers(self) -> list[str]:
        """The ctxscope processes that hold a session's lease now, described (the sessions
        part knows the lease table; none here)."""
        return []

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

    def _touch(self, session_id: int) -> None:
        """Bump the session's ``updated_at`` (every write of a step does: plain SQL), and
        mark its stored figures out of date (:meth:`_figures_changed`)."""
        sql, values = update_statement(SessionRow, ("updated_at",))
        schema.sql(self.db, sql, values(utcnow(), id=session_id))
        self._figures_changed(session_id)

    def _figures_changed(self, session_id: int) -> None:
        """The session's stored figures (:class:`~engine.store.models.FiguresRow`) no longer
        hold: cleared, and their generation moved on, in the transaction of the write that
        changed them, so figures made from what was read before it are never kept."""
        schema.sql(self.db, _FIGURES_CHANGED, (session_id,))

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
        sql, values = insert_statement(table, rows[0])
        dialect.execute_many(self.db, sql, [values(r) for r in rows])

    def _insert_row(self, table: type[BaseRow], row: dict[str, Any]) -> int:
        """:meth:`_insert_rows` for one row (a live step's message, observation or usage,
        written at every step of every round); returns the new row's id."""
        sql, values = insert_statement(table, row)
        return dialect.insert_returning_id(self.db, sql, values(row))

    def _round_id(self, session_id: int, round_index: int) -> int:
        """:meth:`_round_row`'s id alone (every step of every round asks it)."""
        return int(self._found_round(_ROUND_ID, session_id, round_index).id)

    def _round_row(self, session_id: int, round_index: int) -> Any:
        """The round as a row of its fields (a :class:`~engine.store.rows.Select` row, which
        :func:`~engine.store.rows.round_model` takes): each round's end reads it."""
        return self._found_round(_ROUND, session_id, round_index)

    def _found_round(self, query: Select, session_id: int, round_index: int) -> Any:
        found = query.first(self.db, (session_id, round_index))
        if found is None:
            raise StoreError(f"session {session_id} has no round {round_index}")
        return found


_FIGURES_CHANGED = (
    f'UPDATE "{FiguresRow._meta.table_name}" SET generation = generation + 1, figures = NULL '
    "WHERE session_id = ?"
)

_ROUND = Select(RoundRow, "{session} = ? AND {number} = ?")
_ROUND_ID = Select(RoundRow, "{session} = ? AND {number} = ?", fields=("id",))
