"""What differs between the store's two databases, SQLite and PostgreSQL, in one place: the
plain SQL's placeholders, a new row's id, a block of ids for an import, and the write
transaction (SQLite's ``BEGIN IMMEDIATE``; on PostgreSQL a transaction that first takes the
database's write lock, a transaction-level advisory lock).

The store's plain SQL is written once, with ``?`` placeholders, from the models' metadata;
:func:`sql` runs it on either database, rewriting it for PostgreSQL (``%s``, ``%`` doubled)
once per statement.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import peewee
from peewee import Database, PostgresqlDatabase

WRITE_LOCK = 0x63747873_0001
"""The advisory lock every write transaction on PostgreSQL takes first: one write transaction
at a time per database, as SQLite's ``BEGIN IMMEDIATE`` gives, so a read-then-write (the next
round's number, "is this file stored already?") sees no other writer between its statements."""


NUL_STORED_AS = "\ufffd"
"""PostgreSQL's text cannot hold the NUL character (SQLite's can): one in a value (a binary
file's bytes in a tool result) is stored as U+FFFD, the replacement character."""


def without_nul(value: Any) -> Any:
    if isinstance(value, str) and "\0" in value:
        return value.replace("\0", NUL_STORED_AS)
    return value


def is_postgres(db: Database) -> bool:
    return isinstance(db, PostgresqlDatabase)


class Dialect:
    """What the store does differently on one database, beyond its SQL (above): this is
    SQLite's; a database of another kind carries its own as ``db.dialect``
    (:class:`engine.store.postgres.PostgresDialect`), found by :func:`dialect_of`."""

    full_text: str = "fts5"
    """The full-text index this database has (:mod:`engine.store.search` keeps one of each
    kind): SQLite's FTS5 table, or PostgreSQL's ``tsvector`` column (``"tsvector"``)."""

    def stored_version(self, db: Database, application_id: int) -> int | None:
        """The schema version ``db`` records (SQLite: ``PRAGMA user_version``); None for a
        database that records none yet."""
        return int(sql(db, "PRAGMA user_version").fetchone()[0])

    def set_version(self, db: Database, version: int) -> None:
        db.pragma("user_version", version)  # type: ignore[attr-defined]

    def session_lock_held(self, db: Database, session_id: int) -> bool | None:
        """Does a live client hold the session's lease lock? None: the database has no such
        lock (SQLite: the lease row's process and heartbeat say)."""
        return None


SQLITE = Dialect()


def dialect_of(db: Database) -> Dialect:
    """``db``'s dialect: the one it carries, SQLite's otherwise."""
    found: Dialect = getattr(db, "dialect", SQLITE)
    return found


@functools.lru_cache(maxsize=4096)
def for_postgres(statement: str) -> str:
    """``statement`` with its ``?`` placeholders as ``%s`` and its ``%`` doubled (psycopg's
    format); a ``?`` inside a quoted literal or name is left alone."""
    out: list[str] = []
    quote: str | None = None
    for char in statement:
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "?":
            out.append("%s")
            continue
        out.append("%%" if char == "%" else char)
    return "".join(out)


def sql(db: Database, statement: str, params: Sequence[Any] = ()) -> Any:
    """Run ``statement`` (``?`` placeholders) on ``db``'s connection for this thread; its cursor."""
    if is_postgres(db):
        statement = for_postgres(statement)
    return db.execute_sql(statement, tuple(params))  # type: ignore[no-untyped-call]


def execute_many(db: Database, statement: str, rows: Sequence[Sequence[Any]]) -> None:
    """One prepared ``statement`` run for each of ``rows``, errors as peewee's."""
    if is_postgres(db):
        statement = for_postgres(statement)
        rows = [tuple(without_nul(v) for v in row) for row in rows]
    with peewee.__exception_wrapper__:  # type: ignore[attr-defined]
        db.cursor().executemany(statement, rows)  # type: ignore[no-untyped-call]


def insert_returning_id(db: Database, statement: str, params: Sequence[Any]) -> int:
    """Run an INSERT of one row; the id it was given."""
    if is_postgres(db):
        (new_id,) = sql(db, statement + ' RETURNING "id"', params).fetchone()
        return int(new_id)
    new_id = sql(db, statement, params).lastrowid
    assert new_id is not None
    return int(new_id)


def reserve_ids(db: Database, table: str, count: int) -> int:
    """The first of ``count`` consecutive ids for new rows of ``table`` given by the caller (an
    import writes its rows with their ids). Call inside a write transaction."""
    if is_postgres(db):
        (last,) = sql(
            db,
            "SELECT setval(pg_get_serial_sequence(?, 'id'), "
            f'GREATEST((SELECT COALESCE(MAX("id"), 0) + 1 FROM "{table}"), '
            "nextval(pg_get_serial_sequence(?, 'id'))) + ?)",
            (table, table, max(count - 1, 0)),
        ).fetchone()
        return int(last) - max(count - 1, 0)
    (top,) = sql(db, f'SELECT MAX("id") FROM "{table}"').fetchone()
    return int(top or 0) + 1


@contextmanager
def write_transaction(db: Database, lock_timeout: float) -> Iterator[None]:
    """A transaction that holds the database's write lock from its first statement: SQLite's
    ``BEGIN IMMEDIATE`` (its busy timeout is the connection's); on PostgreSQL the advisory
    :data:`WRITE_LOCK`, waited for at most ``lock_timeout`` seconds, freed at commit or
    rollback (a client that dies mid-write loses its transaction and its lock together)."""
    if not is_postgres(db):
        with db.atomic("IMMEDIATE"):
            yield
        return
    with db.atomic():
        if db.transaction_depth() == 1:
            sql(db, f"SET LOCAL lock_timeout = '{int(lock_timeout * 1000)}ms'")
            sql(db, "SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK,))
        yield
