"""A file's sessions staged in a scratch database, copied into this one in a few statements.

The history import (issue 44) writes each new file's sessions in its worker processes, with
the import's own writer (:func:`engine.recordings.writer.write`), into a scratch SQLite file
of the same schema: the rows, their JSON columns, the archive of each recorded compaction and
its search index are made there. The one process that writes the user's database then only
copies them: ``ATTACH`` the scratch file and one ``INSERT … SELECT`` per table, every id
shifted past the highest id of its table here (and every reference to it by the same), in the
table order foreign keys want. Ids come out as the rows written here one by one would have
got them (``MAX(id) + 1`` on, in the same order), so the content is the same either way
(``tests/engine/recordings/test_history_staged.py`` compares both).

SQLite only: a PostgreSQL database is written as before.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from peewee import Database, ForeignKeyField

from engine.store import search
from engine.store.dialect import sql
from engine.store.models import (
    TABLES,
    BaseRow,
    ExchangeBlobRow,
    ImportedFileRow,
    MessageRow,
    SegmentRow,
    SessionRow,
    TokenCountRow,
)

SCHEMA = "staged"
"""The name the scratch file is attached under (the first of several: ``staged1``, …)."""

MOST_ATTACHED = 8
"""How many scratch files one transaction copies at most: SQLite attaches at most 10
databases to a connection (``SQLITE_MAX_ATTACHED``, its default build), ``temp`` and
``main`` aside."""

_NOT_STAGED: tuple[type[BaseRow], ...] = (ImportedFileRow, ExchangeBlobRow)
"""Tables a staged import never writes (the file's record is the writer's)."""

_IDS_WITHOUT_KEY: dict[tuple[type[BaseRow], str], type[BaseRow]] = {
    (SessionRow, "parent_session_id"): SessionRow
}
"""Columns holding another row's id without a foreign key, and the table of that row."""

Shift = dict[str, int]
"""What each table's staged ids were shifted by, by table name."""


def schema_name(n: int) -> str:
    """The name the ``n``-th scratch file of a transaction is attached under."""
    return SCHEMA if n == 0 else f"{SCHEMA}{n}"


@contextmanager
def attached(db: Database, scratches: list[Path]) -> Iterator[list[str]]:
    """Each of ``scratches`` attached (outside a transaction: SQLite cannot detach a file
    the transaction has read), under the names it yields, in order; detached after."""
    if len(scratches) > MOST_ATTACHED:
        raise ValueError(f"at most {MOST_ATTACHED} scratch files at once, not {len(scratches)}")
    names: list[str] = []
    try:
        for n, scratch in enumerate(scratches):
            sql(db, f"ATTACH DATABASE ? AS {schema_name(n)}", (str(scratch),))
            names.append(schema_name(n))
        yield names
    finally:
        for name in names:
            sql(db, f"DETACH DATABASE {name}")


def copy_staged(db: Database, schema: str = SCHEMA) -> Shift:
    """Copy every row of the scratch database attached as ``schema`` into this one (call
    inside a write transaction); the shift of each table's ids. A table this does not know
    to copy, holding rows, is an error: nothing would be lost silently."""
    _refuse_unknown(db, schema)
    shift: Shift = {}
    for model in TABLES:
        table = model._meta.table_name
        (top,) = sql(db, f'SELECT MAX("id") FROM main."{table}"').fetchone()
        shift[table] = int(top or 0)
    for model in TABLES:
        table = model._meta.table_name
        if model in _NOT_STAGED:
            (rows,) = sql(db, f'SELECT COUNT(*) FROM {schema}."{table}"').fetchone()
            if rows:
                raise RuntimeError(f"a staged import wrote {table}, which it never writes")
            continue
        if model is TokenCountRow:  # by digest: a count known here already stays
            sql(
                db,
                f'INSERT OR IGNORE INTO main."{table}" ("digest", "tokens") '
                f'SELECT "digest", "tokens" FROM {schema}."{table}" ORDER BY "id"',
            )
            continue
        columns, values = _shifted_columns(model, shift)
        sql(
            db,
            f'INSERT INTO main."{table}" ({columns}) '
            f'SELECT {values} FROM {schema}."{table}" ORDER BY "id"',
        )
    _copy_index(db, shift, schema)
    return shift


def _shifted_columns(model: type[BaseRow], shift: Shift) -> tuple[str, str]:
    """The column list of ``model`` and what each takes from the staged row: an id or a
    reference to one plus its table's shift, anything else as it is."""
    names, targets = _columns(model)
    values = [
        column if target is None else f"{column} + {shift[target]}"
        for column, target in zip(names, targets, strict=True)
    ]
    return ", ".join(names), ", ".join(values)


@functools.cache
def _columns(model: type[BaseRow]) -> tuple[list[str], list[str | None]]:
    """``model``'s quoted columns, and for each the table whose ids it holds (None: not
    an id); worked out once per table, not for every file copied."""
    names: list[str] = []
    targets: list[str | None] = []
    for field in model._meta.sorted_fields:
        column = f'"{field.column_name}"'
        target: type[BaseRow] | None = None
        if field is model._meta.primary_key:
            target = model
        elif isinstance(field, ForeignKeyField):
            target = field.rel_model
        else:
            target = _IDS_WITHOUT_KEY.get((model, field.column_name))
        names.append(column)
        targets.append(None if target is None else target._meta.table_name)
    return names, targets


INDEX_COLUMNS = ("body", "session_id", "segment_id", "message_id", "round", "role", "tool_name")
"""The search index's columns, as the scratch database keeps them (:func:`plain_index`)."""


def plain_index(db: Database) -> None:
    """Make a scratch database what a worker writes into: its search index a plain table of
    the same columns, and none of the indexes that serve only reads.

    A worker's compactions add their rows to the plain table as they would to the index,
    and :func:`copy_staged` copies them into the real index, where FTS5 tokenizes them (it
    must, in the database the index lives in). An FTS5 table here tokenized every archived
    message a second time for nothing (issue 44: a third of a worker's cost of archiving a
    compaction).

    The copy reads every table whole in the order of its ids, and the worker's own queries
    read one file's rows, so the indexes of the user's database (by session, by round, by
    message, by time) were only kept up to date at every insert, for nothing (issue 44: 1.5 %
    of a worker's instructions; keeping the two its search rows are read by cost more than
    the scans without them). The unique ones stay: they are constraints, and the token
    counts' ``ON CONFLICT`` needs its own. What the copy inserts into the user's database is
    indexed there, as before."""
    sql(db, f"DROP TABLE {search.TABLE}")
    sql(db, f"CREATE TABLE {search.TABLE} ({', '.join(INDEX_COLUMNS)})")
    for (name,) in sql(db, _READ_INDEXES).fetchall():
        sql(db, f'DROP INDEX "{name}"')


_READ_INDEXES = "SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE 'CREATE INDEX %'"
"""The indexes a table's schema asks for that are not unique (SQLite's own, made for a
primary key or a UNIQUE column, have no ``sql``)."""


def _copy_index(db: Database, shift: Shift, schema: str) -> None:
    """The archive's search index rows, their ids shifted like the rows they name."""
    s, seg, m = (shift[t._meta.table_name] for t in (SessionRow, SegmentRow, MessageRow))
    sql(
        db,
        f"INSERT INTO main.{search.TABLE} ({', '.join(INDEX_COLUMNS)}) "
        f"SELECT body, session_id + {s}, segment_id + {seg}, message_id + {m}, round, role, "
        f"tool_name FROM {schema}.{search.TABLE} ORDER BY rowid",
    )


def _refuse_unknown(db: Database, schema: str) -> None:
    known = {model._meta.table_name for model in TABLES} | {search.TABLE}
    names = sql(
        db, f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table' AND sql IS NOT NULL"
    ).fetchall()
    for (name,) in names:
        if name in known or name.startswith((f"{search.TABLE}_", "sqlite_")):
            continue
        (rows,) = sql(db, f'SELECT COUNT(*) FROM {schema}."{name}"').fetchone()
        if rows:
            raise RuntimeError(f"a staged import wrote {name}, which this copy does not know")
