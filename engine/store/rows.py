"""Rows ↔ models: the statements kept in plain SQL (INSERT, UPDATE of some columns, SELECT
of one table), and the converters between rows and :mod:`engine.models`, shared by every part
of the store."""

from __future__ import annotations

import functools
import json
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

import peewee
from peewee import (
    Database,
    ForeignKeyField,
)
from pydantic import ValidationError

from engine.models import (
    Compaction,
    Message,
    MessageMeta,
    Observation,
    Round,
    RoundStatus,
    Session,
    StrategyParams,
    Summary,
    ToolCall,
    Usage,
    UsageRecord,
)
from engine.store import schema
from engine.store.models import (
    BaseRow,
    CompactionRow,
    MessageRow,
    ObservationRow,
    RoundRow,
    SessionRow,
    SummaryRow,
    UsageRow,
    damaged,
)


# ---------------------------------------------------------------------- plain SQL
@functools.cache
def _insert(
    table: type[BaseRow], names: tuple[str, ...]
) -> tuple[str, Callable[[dict[str, Any]], tuple[Any, ...]]]:
    """:func:`insert_statement`, written once per table and set of fields given."""
    fields = [f for f in table._meta.sorted_fields if not f.primary_key or f.name in names]
    columns = ", ".join(_quoted(f) for f in fields)
    marks = ", ".join("?" for _ in fields)
    sql = f'INSERT INTO "{table._meta.table_name}" ({columns}) VALUES ({marks})'
    # A default that is a value is stored as the same text every time; one that is made by a
    # call (``list``, ``dict``) is made again for each row, as peewee does.
    specs = []
    for f in fields:
        make = f.default if callable(f.default) else None
        stored = None if make else f.db_value(f.default)
        specs.append((f.name, f.db_value, make, stored, _as_stored(f)))

    def values(r: dict[str, Any]) -> tuple[Any, ...]:
        out = []
        for name, to_db, make, stored, plain in specs:
            if name in r:
                value = r[name]
                out.append(value if type(value) in plain else to_db(value))
            else:
                out.append(stored if make is None else to_db(make()))
        return tuple(out)

    return sql, values


_PLAIN: dict[Any, frozenset[type]] = {
    peewee.IntegerField.adapt: frozenset({int, type(None)}),
    peewee._StringField.adapt: frozenset({str, type(None)}),
    peewee.FloatField.adapt: frozenset({float, type(None)}),
    bool: frozenset({bool, type(None)}),
}


def _as_stored(field: Any) -> frozenset[type]:
    """The types of value ``field.db_value`` hands back unchanged (an ``int`` to an integer
    column, a ``str`` to a text one, ``None``): an INSERT passes them on as they are
    instead of calling it (issue 44: those calls were a fifth of an import's writing). Empty
    for a field that converts every value (JSON, times)."""
    if isinstance(field, ForeignKeyField):
        field = field.rel_field
    if type(field).db_value is not peewee.Field.db_value:
        return frozenset()
    return _PLAIN.get(type(field).adapt, frozenset())


def insert_statement(
    table: type[BaseRow], row: dict[str, Any]
) -> tuple[str, Callable[[dict[str, Any]], tuple[Any, ...]]]:
    """The INSERT of ``row``'s table for its fields, and what turns a row with those fields
    into the statement's parameters (each value through its field's ``db_value``, a field
    left out as its default).

    Kept per table and fields: a live step inserts a message, an observation and a usage
    record, and writing the statement again each time cost more than SQLite running it.
    """
    return _insert(table, tuple(row))


@functools.cache
def update_statement(
    table: type[BaseRow], names: tuple[str, ...]
) -> tuple[str, Callable[..., tuple[Any, ...]]]:
    """``UPDATE table SET`` the fields ``names`` ``WHERE id = ?``, written once; and what
    turns their new values (in that order) and the row's id into its parameters, each value
    through its field's ``db_value``. Only those columns are written: the rest of the row
    stays as it is, not read and written back as a peewee ``save()`` does."""
    fields = [table._meta.fields[name] for name in names]
    sets = ", ".join(f"{_quoted(f)} = ?" for f in fields)
    sql = f'UPDATE "{table._meta.table_name}" SET {sets} WHERE "id" = ?'
    to_db = [f.db_value for f in fields]

    def values(*new: Any, id: int) -> tuple[Any, ...]:  # noqa: A002 - the column's name
        return (*[convert(v) for convert, v in zip(to_db, new, strict=True)], id)

    return sql, values


class Select:
    """A SELECT from one table, written once from its metadata and run as plain SQL, whose
    rows come back as namedtuples converted by the fields' ``python_value``: what a peewee
    query of those fields gives, under the same attribute names (a foreign key as its
    ``*_id``), so the ``*_model`` converters below take them as they take peewee rows.

    For the reads every step or round makes (a session, a round, the last usage), which
    peewee takes many times longer to write than SQLite to answer. ``where`` and ``order``
    name fields in braces, each written as its column: ``"{session} = ? AND {number} = ?"``.
    """

    def __init__(
        self,
        table: type[BaseRow],
        where: str,
        *,
        fields: Sequence[str] | None = None,
        order: str | None = None,
        limit: int | None = None,
    ) -> None:
        meta = table._meta
        chosen = meta.sorted_fields if fields is None else [meta.fields[n] for n in fields]
        columns = {f.name: _quoted(f) for f in meta.sorted_fields}
        sql = (
            f'SELECT {", ".join(_quoted(f) for f in chosen)} FROM "{meta.table_name}" '
            f"WHERE {where.format(**columns)}"
        )
        if order is not None:
            sql += f" ORDER BY {order.format(**columns)}"
        if limit is not None:
            sql += f" LIMIT {limit}"
        self.sql = sql
        self._converters = [f.python_value for f in chosen]
        names = [f.object_id_name if isinstance(f, ForeignKeyField) else f.name for f in chosen]
        self._row: Any = namedtuple(f"{table.__name__}Tuple", names)  # type: ignore[misc]

    def first(self, db: Database, params: tuple[Any, ...]) -> Any | None:
        """The first row the query finds with ``params`` for its ``?`` (None: none),
        converted."""
        raw = schema.sql(db, self.sql, params).fetchone()
        return None if raw is None else self._convert(raw)

    def all(self, db: Database, params: tuple[Any, ...]) -> list[Any]:
        """Every row the query finds with ``params``, converted."""
        return [self._convert(raw) for raw in schema.sql(db, self.sql, params).fetchall()]

    def _convert(self, raw: tuple[Any, ...]) -> Any:
        return self._row._make(
            [convert(v) for convert, v in zip(self._converters, raw, strict=True)]
        )


def _quoted(field: Any) -> str:
    return f'"{field.column_name}"'


# ---------------------------------------------------------------------- model → row
def message_row(session_id: int, round_id: int, m: Message) -> dict[str, Any]:
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


def observation_row(o: Observation) -> dict[str, Any]:
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


def usage_row(r: UsageRecord) -> dict[str, Any]:
    return {
        "session": r.session_id,
        "round_index": r.round_index,
        "step": r.step,
        "input_tokens": r.usage.input_tokens,
        "output_tokens": r.usage.output_tokens,
        "cache_read_input_tokens": r.usage.cache_read_input_tokens,
        "cache_creation_input_tokens": r.usage.cache_creation_input_tokens,
        "cache_creation_1h_input_tokens": r.usage.cache_creation_1h_input_tokens,
        "local_estimate": r.local_estimate,
        "source": r.source,
        "created_at": r.created_at,
        "model": r.model,
        "copied": r.copied,
    }


def table_columns(table: type[BaseRow]) -> list[Any]:
    """Every column, foreign keys under their ``*_id`` names, for ``.namedtuples()`` queries.

    Such rows carry the same attribute names as model instances, so the converters below take
    either; building namedtuples instead of model instances makes big reads much faster.
    """
    return [
        f.alias(f.object_id_name) if isinstance(f, ForeignKeyField) else f
        for f in table._meta.sorted_fields
    ]


def row_dicts(query: Any) -> list[dict[str, Any]]:
    """The rows of a ``.dicts()`` query (peewee's stubs type them as models)."""
    return list(query)


# ---------------------------------------------------------------------- row → model
def session_model(r: SessionRow) -> Session:
    return Session(
        id=r.id,
        title=r.title,
        workspace=r.workspace,
        provider=r.provider,
        model=r.model,
        strategy=r.strategy,
        created_at=r.created_at,
        updated_at=r.updated_at,
        parent_session_id=r.parent_session_id,
        agent_id=r.agent_id,
        source=r.source,
        params=params_model(r.params, SessionRow.params),
        user=r.origin_user,
        machine=r.origin_machine,
        workspace_given=bool(r.workspace_given),
        agent=r.recorded_agent or "",
        agent_version=r.recorded_agent_version or "",
        source_gone_at=r.source_gone_at,
    )


def params_model(value: Any, column: Any) -> StrategyParams | None:
    """Stored strategy numbers (a JSON object) as the model; NULL as None."""
    if value is None:
        return None
    try:
        return StrategyParams.model_validate(value)
    except ValidationError as exc:
        why = str(exc.errors()[0]["msg"])
        raise damaged(column, json.dumps(value), f"not strategy numbers: {why}") from None


def round_model(r: RoundRow) -> Round:
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


def message_model(r: MessageRow) -> Message:
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


def summary_model(r: SummaryRow) -> Summary:
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


def compaction_model(r: CompactionRow) -> Compaction:
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


def observation_model(r: ObservationRow) -> Observation:
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


def usage_model(r: UsageRow) -> UsageRecord:
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
            cache_creation_1h_input_tokens=r.cache_creation_1h_input_tokens,
        ),
        local_estimate=r.local_estimate,
        source=r.source,
        created_at=r.created_at,
        model=r.model or "",
        copied=bool(r.copied),
    )
