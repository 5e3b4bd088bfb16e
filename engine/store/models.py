"""peewee tables. These rows never leave ``engine.store``: the repository converts them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from peewee import (
    BigIntegerField,
    BooleanField,
    DatabaseProxy,
    Field,
    FloatField,
    ForeignKeyField,
    IntegerField,
    Model,
    TextField,
)
from playhouse.shortcuts import ThreadSafeDatabaseMetadata

from engine.store import json_text
from engine.store.errors import StoreError

UNBOUND = DatabaseProxy()
"""The tables' database until a store binds them. Each ``Store`` binds the tables to its own
connection, per thread (peewee's ``ThreadSafeDatabaseMetadata``), on entry to every method, so
two stores in one process — on one thread or on two — never read or write each other's file.
A query on a thread no store has bound fails loudly instead of reaching some other file."""


def aware(value: datetime) -> datetime:
    """``value`` with a time zone: a naive time (an old row, an import) is taken as UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class TimestampField(TextField):
    """A timezone-aware datetime stored as ISO 8601 text (sorts lexically, keeps the offset).

    Naive times are never stored or returned: they are taken as UTC both ways (a migration
    also rewrote the naive rows older versions let in), so comparing two stored times never
    raises.
    """

    def db_value(self, value: datetime | None) -> str | None:
        return None if value is None else aware(value).isoformat()

    def python_value(self, value: str | None) -> datetime | None:
        if value is None:
            return None
        try:
            return aware(datetime.fromisoformat(value))
        except ValueError:
            raise damaged(self, value, "not an ISO 8601 time") from None


_to_json = json_text.encoder(ensure_ascii=False)
"""``json.dumps(value, ensure_ascii=False)``, its encoder made once (issue 44: an import
writes a few JSON columns a message)."""


_EMPTY: dict[type, str] = {list: "[]", dict: "{}"}
"""What ``_to_json`` makes of an empty list or object, without the encoder's call."""


class JSONField(TextField):
    """Any JSON-serialisable value."""

    def db_value(self, value: Any) -> str | None:
        if value is None:
            return None
        if not value and type(value) in _EMPTY:  # most messages' calls, many metas
            return _EMPTY[type(value)]
        return _to_json(value)

    def python_value(self, value: str | None) -> Any:
        if value is None:
            return None
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise damaged(self, value, f"{exc.msg} at character {exc.pos}") from None
        except RecursionError:
            raise damaged(self, value, "JSON nested too deeply") from None


class ResultField(JSONField):
    """A tool result's envelope (``ObservationRow.result``): stored as :class:`JSONField`
    stores it, byte for byte, with the tool's output escaped once where the envelope holds it
    twice (its ``text``, and again as a value of its ``data``: Read's ``content``, Bash's
    ``stdout``, another tool's ``output``): a third of the characters of a history import's
    result column, each escaped by the JSON encoder (issue 44)."""

    def db_value(self, value: Any) -> str | None:
        text = value.get("text") if type(value) is dict else None
        if type(text) is not str or len(text) < _REPEAT_WORTH:
            return super().db_value(value)
        holed, holes = _with_holes(value, text)
        out = _to_json(holed)
        if out.count(_HOLE_JSON) != holes:  # the result holds the hole's own text: as it is
            return super().db_value(value)
        return out.replace(_HOLE_JSON, _to_json(text))


_REPEAT_WORTH = 256
"""Characters from which an output is worth escaping once (a short one as it comes)."""
_HOLE = "\x00ctxscope: the output\x00"
_HOLE_JSON = _to_json(_HOLE)
"""What stands for the output in the envelope until it is written in, once encoded. Its JSON
can only occur in the envelope's as a string equal to it (a ``"`` followed by ``\\u0000``
begins a string, and an unescaped ``"`` ends it), which the count finds."""


def _with_holes(value: dict[str, Any], text: str) -> tuple[dict[str, Any], int]:
    """``value`` with every string equal to ``text`` in it, or in an object it holds,
    replaced by :data:`_HOLE` (copies; ``value`` is not changed), and how many were."""
    holes = 0
    out: dict[str, Any] = {}
    for key, item in value.items():
        if item is text or (type(item) is str and item == text):
            out[key], holes = _HOLE, holes + 1
        elif type(item) is dict:
            out[key], inner = _with_holes(item, text)
            holes += inner
        else:
            out[key] = item
    return out, holes


def damaged(field: Field, value: str, why: str) -> StoreError:
    """A stored value ctxscope cannot read, named by table and column."""
    where = f"{field.model._meta.table_name}.{field.column_name}"
    shown = value if len(value) <= 40 else value[:37] + "..."
    return StoreError(
        f"the database holds a damaged value in {where} ({why}): {shown!r}; was it edited by hand?"
    )


class BaseRow(Model):
    # Declared for the type checker; peewee adds the auto-increment key itself.
    id: Any  # an int on rows, a field expression on the class

    class Meta:
        database = UNBOUND
        model_metadata_class = ThreadSafeDatabaseMetadata
        legacy_table_names = False


class SessionRow(BaseRow):
    title = TextField(default="")
    workspace = TextField(default="")
    provider = TextField(default="")
    model = TextField(default="")
    strategy = TextField(default="layered")
    todos = JSONField(default=list)
    created_at = TimestampField()
    updated_at = TimestampField(index=True)
    parent_session_id = IntegerField(null=True)
    agent_id = TextField(null=True)
    source = TextField(null=True, index=True)
    params = JSONField(null=True)
    """The numbers its strategy plans with (``StrategyParams``); NULL: none stored."""
    origin_user = TextField(null=True)
    origin_machine = TextField(null=True)
    """Who made it, and on which machine (the ``record_origin`` setting); NULL: not stored."""
    recorded_agent = TextField(null=True)
    """The agent a recorded session comes from (its format: ``claude-code``, ``codex``…);
    NULL: ctxscope's own session, or a recording whose agent is not known."""
    recorded_agent_version = TextField(null=True)
    """That agent's version, as its recording says (``2.1.39``); NULL: not recorded."""
    workspace_given = BooleanField(default=True, null=True)
    """False while ``workspace`` is only the folder a recording names (``Session``). Nullable
    so that adding it is one ALTER TABLE: a NOT NULL column makes SQLite's migrator rebuild
    the table, and dropping the old one cascades to every row that refers to it."""
    source_gone_at = TimestampField(null=True)
    """When an import found the file this session was imported from gone (the agent deleted
    it); NULL while it is there, or for a session not imported from a file."""
    recorded_id = TextField(null=True, index=True)
    """The recording agent's own id of the session (Claude Code's ``sessionId``, Codex's
    ``id``), stored at import: ``ctxscope show 8463c716-…`` finds it; NULL: none recorded,
    ctxscope's own session, or imported before schema 21."""


class RoundRow(BaseRow):
    session = ForeignKeyField(SessionRow, backref="rounds", on_delete="CASCADE")
    session_id: int
    number = IntegerField()
    """The round's 1-based ordinal within its session (``Round.index``)."""
    status = TextField(default="open")
    archived = BooleanField(default=False)
    started_at = TimestampField()
    finished_at = TimestampField(null=True)
    error = TextField(null=True)

    class Meta:
        indexes = ((("session", "number"), True),)


class SummaryRow(BaseRow):
    session = ForeignKeyField(SessionRow, backref="summaries", on_delete="CASCADE")
    session_id: int
    content = TextField()
    start_time = TimestampField(null=True)
    cutoff_time = TimestampField(null=True)
    first_round = IntegerField()
    last_round = IntegerField()
    fallback = BooleanField(default=False)
    tokens = IntegerField(null=True)
    placement = TextField(default="system_block")
    strategy = TextField(default="layered")
    active = BooleanField(default=True)
    created_at = TimestampField()


class CompactionRow(BaseRow):
    session = ForeignKeyField(SessionRow, backref="compactions", on_delete="CASCADE")
    session_id: int
    trigger = TextField()
    strategy = TextField()
    focus = TextField(null=True)
    tokens_before = IntegerField(default=0)
    tokens_after = IntegerField(default=0)
    messages_compacted = IntegerField(default=0)
    messages_retained = IntegerField(default=0)
    rounds_compacted = IntegerField(default=0)
    duration_ms = FloatField(default=0.0)
    outcome = TextField()
    error = TextField(null=True)
    summary = ForeignKeyField(SummaryRow, null=True, on_delete="RESTRICT")
    placement = TextField(null=True)
    stats = JSONField(default=dict)
    undone_at = TimestampField(null=True)
    fidelity = JSONField(null=True)
    copied = BooleanField(default=False)
    """A fork's copy of its original's row: counted with the original, never again (report)."""
    summary_id: int | None
    created_at = TimestampField()


class SegmentRow(BaseRow):
    """An archived raw segment: the messages pointing at it are the ones a compaction removed."""

    compaction = ForeignKeyField(CompactionRow, backref="segments", on_delete="CASCADE")
    compaction_id: int
    summary = ForeignKeyField(SummaryRow, null=True, on_delete="RESTRICT")
    summary_id: int | None
    first_round = IntegerField()
    last_round = IntegerField()
    tokens = IntegerField(default=0)


class MessageRow(BaseRow):
    session = ForeignKeyField(SessionRow, backref="messages", on_delete="CASCADE")
    round = ForeignKeyField(RoundRow, backref="messages", on_delete="CASCADE")
    round_id: int
    role = TextField()
    content = TextField(default="")
    tool_calls = JSONField(default=list)
    meta = JSONField(default=dict)
    tokens = IntegerField(null=True)
    pinned = BooleanField(default=False)
    created_at = TimestampField()
    # NULL while the message is in history; set when a compaction archived it.
    segment = ForeignKeyField(SegmentRow, null=True, backref="messages", on_delete="RESTRICT")


class ObservationRow(BaseRow):
    session = ForeignKeyField(
        SessionRow, backref="observations", on_delete="CASCADE", index=False
    )  # indexed with its round (Meta): a watched session's last round is deleted by both
    session_id: int
    message = ForeignKeyField(MessageRow, null=True, on_delete="SET NULL")
    message_id: int | None
    round_index = IntegerField()
    step = IntegerField()
    tool_use_id = TextField(index=True)
    tool_name = TextField()
    result = ResultField()
    text = TextField()
    tokens_full = IntegerField(default=0)
    tokens_compressed = IntegerField(default=0)
    copied = BooleanField(default=False)
    """A fork's copy of its original's row: counted with the original, never again (report)."""

    class Meta:
        indexes = ((("session", "round_index"), False),)


class UsageRow(BaseRow):
    session = ForeignKeyField(
        SessionRow, backref="usages", on_delete="CASCADE", index=False
    )  # indexed with its round (Meta), as an observation's
    session_id: int
    round_index = IntegerField(null=True)
    step = IntegerField(null=True)
    input_tokens = IntegerField(default=0)
    output_tokens = IntegerField(default=0)
    cache_read_input_tokens = IntegerField(default=0)
    cache_creation_input_tokens = IntegerField(default=0)
    cache_creation_1h_input_tokens = IntegerField(default=0)
    local_estimate = IntegerField(null=True)
    source = TextField(default="api")
    created_at = TimestampField()
    model = TextField(default="")
    """The model that answered the request ("" before schema 16, or when unknown: the
    session's)."""
    copied = BooleanField(default=False)
    """A fork's copy of its original's row: counted with the original, never again (report)."""

    class Meta:
        indexes = ((("session", "round_index"), False),)


class StrategySwitchRow(BaseRow):
    """A session's strategy changed (``ctxscope strategy ID NAME``): from what, to what, when."""

    session = ForeignKeyField(SessionRow, backref="strategy_switches", on_delete="CASCADE")
    session_id: int
    previous = TextField()
    strategy = TextField()
    created_at = TimestampField()
    previous_params = JSONField(null=True)
    params = JSONField(null=True)
    """The numbers planned with before and after the switch (NULL before schema 11)."""


class LeaseRow(BaseRow):
    """Who writes a session now (one writer at a time; see ``engine.store.lease``)."""

    session = ForeignKeyField(SessionRow, unique=True, on_delete="CASCADE")
    session_id: int
    owner = TextField()
    """A token unique to the holder (host, pid, random)."""
    host = TextField()
    pid = IntegerField()
    started = TextField()
    """The holder process' start time as the kernel reports it (tells pid reuse)."""
    purpose = TextField()
    acquired_at = TimestampField()
    heartbeat_at = TimestampField()


class TokenCountRow(BaseRow):
    """Token counts of the texts every request repeats (L1, tool definitions, CODE_LAW,
    summaries), by digest: a later run finds them here and need not load the tokenizer."""

    digest = TextField(unique=True)
    tokens = IntegerField()


class ExchangeBlobRow(BaseRow):
    """A piece of a proxied request (a system block, a tool, a message) stored once by the
    digest of its JSON: every request repeats its prefix, and each piece is kept one time."""

    digest = TextField(unique=True)
    content = TextField()


class ExchangeRow(BaseRow):
    """One request through ``ctxscope proxy`` and its answer (``engine.exchanges.Exchange``).

    ``shape`` is the request body with its system, tools and new messages replaced by blob
    digests; its messages start with the first ``prefix_len`` messages of request
    ``prefix_id`` (the one before it in its thread), so a request stores what is new in it."""

    session = ForeignKeyField(SessionRow, backref="exchanges", on_delete="CASCADE")
    session_id: int
    kind = TextField()
    thread = TextField()
    method = TextField()
    path = TextField()
    status = IntegerField()
    outcome = TextField()
    stream = BooleanField()
    model = TextField()
    shape = JSONField()
    prefix_id = IntegerField(null=True)
    prefix_len = IntegerField(default=0)
    response = JSONField(null=True)
    usage = JSONField(null=True)
    headers = JSONField(default=dict)
    duration_ms = FloatField(default=0.0)
    created_at = TimestampField()
    steering = JSONField(null=True)
    """With ``--steer``: the rules, the frozen floor and each rewrite (where, which rule, the
    content sent instead, tokens before and after), or why a rule failed; None: sent as it
    came."""


class FiguresRow(BaseRow):
    """A session's figures as a listing prints them (requests, tokens by kind, cost, context
    at its last call, window, agent, dates: :class:`engine.figures.SessionFigures` without the
    figures :meth:`list_sessions` sums), stored so that ``sessions`` and ``show`` need neither
    the usage rows nor the price data. ``generation`` goes up, and ``figures`` is cleared, in
    the transaction of every write that changes what they are made of (a usage row, a
    compaction, the session); figures made from an older generation are not kept."""

    session = ForeignKeyField(SessionRow, unique=True, on_delete="CASCADE")
    session_id: int
    generation = IntegerField(default=0)
    priced_with = TextField(default="")
    """What the figures were made with: genai-prices' version, the ``[prices]`` digest and
    the agents' rules' inputs (:func:`engine.recordings.figures.figures_key`)."""
    figures = JSONField(null=True)
    """None: not made since the last change."""


class LossesRow(BaseRow):
    """What a session's compactions lost (:func:`engine.compaction.losses.session_losses`,
    each compaction's ledger against its archived part), stored once worked out: what a
    compaction archived does not change, so the ledger holds while the session's compactions
    are the ones it was made for (``compactions``, their ids); ``report`` over a whole history
    no longer reads every archive again (issue 44)."""

    session = ForeignKeyField(SessionRow, unique=True, on_delete="CASCADE")
    session_id: int
    compactions = TextField(default="")
    """The ids of the session's compactions the ledger was made for, comma-separated."""
    losses = JSONField(null=True)


class ImportedFileRow(BaseRow):
    """A file ``ctxscope import`` (without a path) read: what it was then, and the sessions it
    became, so that a later run skips it while it is unchanged."""

    path = TextField(unique=True)
    size = BigIntegerField()
    mtime_ns = BigIntegerField()
    head = TextField()
    """A hash of the file's first bytes: other bytes there mean the file was rewritten."""
    companions = TextField(default="")
    """The names, sizes and times of the files read with it (Claude Code's subagents)."""
    fmt = TextField(default="")
    sessions = JSONField(default=list)
    """The ids of the sessions it became (an aider history may hold several)."""
    refused = TextField(null=True)
    """Why it could not be imported, when it could not (it is not read again until it
    changes)."""
    imported_at = TimestampField()


TABLES: list[type[BaseRow]] = [
    SessionRow,
    RoundRow,
    SummaryRow,
    CompactionRow,
    SegmentRow,
    MessageRow,
    ObservationRow,
    UsageRow,
    StrategySwitchRow,
    LeaseRow,
    TokenCountRow,
    ExchangeBlobRow,
    ExchangeRow,
    ImportedFileRow,
    FiguresRow,
    LossesRow,
]
