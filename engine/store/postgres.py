"""A ctxscope database on a PostgreSQL server (``--db postgresql://user@host:port/dbname``):
connecting, naming it without its password, and its schema version.

The URL goes to libpq as it is, so the password comes from the URL, ``PGPASSWORD`` or
``~/.pgpass`` as for ``psql``; ctxscope never stores or prints it (:func:`masked`). Where
SQLite keeps the version in ``PRAGMA user_version``, a PostgreSQL database keeps it in the
one-row table :data:`VERSION_TABLE`, with the same application id.
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from peewee import Database as PeeweeDatabase
from peewee import PostgresqlDatabase, Psycopg3Adapter

from engine.store.dialect import Dialect, sql, without_nul
from engine.store.errors import StoreError
from tools.secrets import QUERY_PASSWORD, url_credentials

SCHEMES = ("postgresql://", "postgres://")
VERSION_TABLE = "ctxscope_schema"
"""One row: ``application_id`` (the same as SQLite's ``PRAGMA application_id``) and
``version`` (SQLite's ``PRAGMA user_version``)."""
CONNECT_TIMEOUT = 10
"""Seconds to wait for the server before giving up."""


def is_url(target: object) -> bool:
    """Does ``target`` (a ``--db`` value) name a PostgreSQL database?"""
    return isinstance(target, str) and target.startswith(SCHEMES)


def masked(url: str) -> str:
    """``url`` with its password (if any) as ``***``: how a database is named to the user.
    libpq also takes one in the query (``?password=pw``): that is masked too."""
    url = QUERY_PASSWORD.sub(r"\1***", url)
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # a port that is not a number: named without what follows the scheme
        return url.split("://", 1)[0] + "://…"
    if password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def one_line(exc: BaseException, url: str) -> str:
    """A driver's error as one line, without the password (from the URL's user part or its
    query)."""
    text = " ".join(str(exc).split())
    for password in url_credentials(url):
        text = text.replace(password, "***")
    return text


class Psycopg3(Psycopg3Adapter):
    """peewee's psycopg 3 adapter with the driver imported here, when a database is opened.

    peewee is imported without the server drivers (:mod:`engine.store`: a SQLite command does
    not pay for psycopg), so its own adapter would find no driver; this one asks for psycopg
    itself and sets what peewee's sets from it at its import."""

    def __init__(self) -> None:
        import psycopg
        from psycopg.pq import TransactionStatus
        from psycopg.types.json import Json, Jsonb

        self.psycopg = psycopg
        self.txn_idle = TransactionStatus.IDLE
        self.txn_inerror = TransactionStatus.INERROR
        self.txn_unknown = TransactionStatus.UNKNOWN
        self.txn_intrans = TransactionStatus.INTRANS
        super().__init__()
        self.json_type = Json
        self.jsonb_type = Jsonb

    def check_driver(self) -> None:
        """The driver is there: :meth:`__init__` imported it."""

    def get_binary_type(self) -> Any:
        return self.psycopg.Binary

    def connect(self, db: Any, **params: Any) -> Any:
        if db._encoding:
            params.setdefault("client_encoding", db._encoding)
        if db.database.startswith(SCHEMES):
            params.setdefault("conninfo", db.database)
        else:
            params.setdefault("dbname", db.database)
        return self.psycopg.connect(**params)

    def server_side_cursor(self, conn: Any) -> Any:
        in_txn = self.txn_status(conn) == self.txn_intrans
        return conn.cursor(name=str(uuid.uuid1()), withhold=not in_txn)


class PostgresDialect(Dialect):
    """What the store does differently on PostgreSQL: the schema version in
    :data:`VERSION_TABLE`, the lease as an advisory lock, the full-text index a ``tsvector``."""

    full_text = "tsvector"

    def stored_version(self, db: PeeweeDatabase, application_id: int) -> int | None:
        return version(db, application_id)  # type: ignore[arg-type]

    def set_version(self, db: PeeweeDatabase, version: int) -> None:
        set_version(db, version)  # type: ignore[arg-type]

    def session_lock_held(self, db: PeeweeDatabase, session_id: int) -> bool:
        return session_lock_held(db, session_id)  # type: ignore[arg-type]


class Database(PostgresqlDatabase):
    """peewee's PostgreSQL database, each text parameter without NUL characters, through
    :class:`Psycopg3` whichever drivers peewee found at its import."""

    psycopg2_adapter = Psycopg3
    psycopg3_adapter = Psycopg3
    dialect = PostgresDialect()

    def execute_sql(self, sql: str, params: Any = None) -> Any:
        if params:
            params = tuple(without_nul(p) for p in params)
        return super().execute_sql(sql, params)  # type: ignore[no-untyped-call]


def connect(url: str, *, read_only: bool, busy_timeout: float) -> PostgresqlDatabase:
    """A peewee database for ``url`` (psycopg 3), connected on this thread; a connection
    that fails is one :class:`StoreError` line naming the masked URL."""
    try:
        import psycopg  # noqa: F401 - peewee finds it itself; asked here for a readable refusal
    except ImportError:
        raise StoreError(
            f"cannot use {masked(url)}: the PostgreSQL driver is not installed "
            "(pip install 'ctxscope[postgresql]', or psycopg[binary])"
        ) from None
    options = f"-c lock_timeout={int(busy_timeout * 1000)}"
    if read_only:
        options += " -c default_transaction_read_only=on"
    db = Database(
        url,
        prefer_psycopg3=True,
        field_types={"FLOAT": "DOUBLE PRECISION"},  # REAL would keep 6 digits
        connect_timeout=CONNECT_TIMEOUT,
        application_name="ctxscope",
        options=options,
    )
    try:
        db.connect(reuse_if_open=True)
    except Exception as exc:
        raise StoreError(f"cannot connect to {masked(url)}: {one_line(exc, url)}") from None
    return db


def version(db: PostgresqlDatabase, application_id: int) -> int | None:
    """The database's schema version; None for a database with no tables at all.

    Raises :class:`StoreError` for a database holding another program's tables."""
    tables = {
        name
        for (name,) in sql(
            db,
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema()",
        ).fetchall()
    }
    if VERSION_TABLE not in tables:
        if tables:
            shown = ", ".join(sorted(tables)[:5])
            raise StoreError(
                f"{masked(db.database)} holds tables of another program ({shown}); it was not "
                "modified. Create an empty database for ctxscope (createdb) and name it with --db"
            )
        return None
    row = sql(db, f'SELECT application_id, version FROM "{VERSION_TABLE}"').fetchone()
    if row is None or row[0] != application_id:
        raise StoreError(
            f"{masked(db.database)} has a {VERSION_TABLE} table that is not ctxscope's; "
            "it was not modified"
        )
    return int(row[1])


def create_version(db: PostgresqlDatabase, application_id: int, version: int) -> None:
    sql(
        db,
        f'CREATE TABLE "{VERSION_TABLE}" '
        "(application_id BIGINT NOT NULL, version INTEGER NOT NULL)",
    )
    sql(db, f'INSERT INTO "{VERSION_TABLE}" VALUES (?, ?)', (application_id, version))


def set_version(db: PostgresqlDatabase, version: int) -> None:
    sql(db, f'UPDATE "{VERSION_TABLE}" SET version = ?', (version,))


# ---------------------------------------------------------------------- the writer lease
LEASE_LOCKS = 0x6374
"""The first key of a session lease's advisory lock (the second is the session's id)."""


def hold_session_lock(url: str, session_id: int) -> Any | None:
    """A connection of its own holding the session's lease lock, or None when another client
    holds it. The lock lives as long as the connection: closing it (or the process dying, which
    the server sees as the connection closing) frees it."""
    import psycopg

    con = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
    row = con.execute("SELECT pg_try_advisory_lock(%s, %s)", (LEASE_LOCKS, session_id)).fetchone()
    if row is not None and row[0]:
        return con
    con.close()
    return None


def release_session_lock(con: Any) -> None:
    """Free a lease lock :func:`hold_session_lock` took, then close its connection. Closing
    alone frees it only once the server's backend for that connection has exited, a moment
    later: a writer asking straight after a release could find the session still held."""
    try:
        con.execute("SELECT pg_advisory_unlock_all()")
    except Exception:  # noqa: BLE001 — a broken connection: closing it frees the lock
        pass
    finally:
        con.close()


def session_lock_held(db: PostgresqlDatabase, session_id: int) -> bool:
    """Does a live client hold the session's lease lock?"""
    row = sql(
        db,
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
        "AND classid = ? AND objid = ? AND objsubid = 2)",
        (LEASE_LOCKS, session_id),
    ).fetchone()
    return bool(row and row[0])
