"""Rows ↔ models: the statements kept in plain SQL (INSERT, UPDATE of some columns, SELECT
of one table), and the converters between rows and :mod:`engine.models`, shared by every part
of the store."""

from __future__ import annotations

import functools
import json
from collections import namedtuple
from collections.abc import Callable, Sequence
from datetime import datetime
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
    TimestampField,
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
    specs: list[_Spec] = []
    for f in fields:
        make = f.default if callable(f.default) else None
        stored = None if make else f.db_value(f.default)
        specs.append((f.name, f.db_value, make, stored, _as_stored(f)))

    def each(r: dict[str, Any]) -> tuple[Any, ...]:
        out = []
        for name, to_db, make, stored, plain in specs:
            if name in r:
                value = r[name]
                out.append(value if type(value) in plain else to_db(value))
            else:
                out.append(stored if make is None else to_db(make()))
        return tuple(out)

    given = _given_values(specs, names, [type(f) is TimestampField for f in fields])

    def values(r: dict[str, Any]) -> tuple[Any, ...]:
        try:
            return given(r)
        except KeyError:  # a row without some of the fields the statement was made for
            return each(r)

    return sql, values


_Spec = tuple[str, Callable[[Any], Any], Callable[[], Any] | None, Any, frozenset[type]]
"""A column of an INSERT: its field's name, ``db_value``, the call that makes its default
(None: a value), the default as stored, the types passed on as they are (:func:`_as_stored`)."""


def _given_values(
    specs: list[_Spec], names: tuple[str, ...], times: list[bool]
) -> Callable[..., tuple[Any, ...]]:
    """What turns a row holding the fields ``names`` into an INSERT's parameters, written out
    as one expression per column (issue 44: the loop over the columns, a test and a call per
    value, was most of the Python an import spent on each of its thousands of rows). The
    same values as the loop: a field given passes as it is when its type is one the column
    stores unchanged, else through ``db_value``; one not given is its default. A time
    (``times``: the column is a :class:`TimestampField`) with its zone is written as its
    ``db_value`` writes it, ``isoformat()``, without the two calls around that."""
    space: dict[str, Any] = {"datetime": datetime}
    reads: list[str] = []
    parts: list[str] = []
    for n, (name, to_db, make, stored, plain) in enumerate(specs):
        space[f"to_db{n}"], space[f"plain{n}"] = to_db, plain
        if name in names:
            reads.append(f"    v{n} = r[{name!r}]\n")
            if times[n]:
                parts.append(
                    f"v{n}.isoformat() if type(v{n}) is datetime and v{n}.tzinfo is not None "
                    f"else to_db{n}(v{n})"
                )
            elif plain:
                parts.append(f"v{n} if type(v{n}) in plain{n} else to_db{n}(v{n})")
            else:
                parts.append(f"to_db{n}(v{n})")
        elif make is None:
            space[f"stored{n}"] = stored
            parts.append(f"stored{n}")
        else:
            space[f"make{n}"] = make
            parts.append(f"to_db{n}(make{n}())")
    code = f"def given(r):\n{''.join(reads)}    return ({', '.join(parts)},)\n"
    exec(code, space)  # noqa: S102 - made here from the table's own field names
    made: Callable[..., tuple[Any, ...]] = space["given"]
    return made


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
        "tool_calls": [{"id": c.id, "name": c.name, "input": c.input} for c in m.tool_calls],
        "meta": meta_row(m.meta),
        "tokens": m.tokens,
        "created_at": m.created_at,
    }


_META_DEFAULTS = tuple((name, field.default) for name, field in MessageMeta.model_fields.items())
"""MessageMeta's fields in order, each with its default (none is made by a call)."""


def meta_row(meta: MessageMeta) -> dict[str, Any]:
    """``meta.model_dump(exclude_defaults=True)``, the same dictionary, without pydantic's call
    (issue 44: it cost twice the rest of a message's row): the fields that are not their
    default, in order. One with an ``origin`` goes through pydantic as before: an origin
    holds whatever its maker put there, which pydantic's dump converts (a model to its
    fields); every other field is a plain value."""
    fields = meta.__dict__
    if fields["origin"] is not None:
        return meta.model_dump(exclude_defaults=True)
    return {name: value for name, default in _META_DEFAULTS if (value := fields[name]) != default}


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
