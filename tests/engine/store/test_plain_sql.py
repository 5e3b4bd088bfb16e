"""The store's per-step and per-round statements in plain SQL give what peewee's queries give,
and write what peewee wrote: each compared with the peewee query it replaced, written here,
on a store holding several sessions, rounds, usage rows (NULLs included), times and JSON."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.models import (
    Compaction,
    Message,
    MessageMeta,
    Observation,
    Outcome,
    RoundStatus,
    StrategyParams,
    Summary,
    TodoItem,
    ToolCall,
    Trigger,
    Usage,
    UsageRecord,
)
from engine.store import SessionNotFound, Store, StoreError, dialect
from engine.store.models import (
    CompactionRow,
    MessageRow,
    ObservationRow,
    RoundRow,
    SessionRow,
    UsageRow,
)
from engine.store.rows import (
    insert_statement,
    message_row,
    observation_model,
    round_model,
    session_model,
    usage_model,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def _usage(sid: int, rnd: int | None, step: int | None, tokens: tuple[int, ...], **kw: Any) -> Any:
    inp, out, read, write = tokens
    usage = Usage(
        input_tokens=inp,
        output_tokens=out,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=write,
        cache_creation_1h_input_tokens=kw.pop("hour", 0),
    )
    return UsageRecord(session_id=sid, round_index=rnd, step=step, usage=usage, **kw)


@pytest.fixture
def full(store: Store) -> Store:
    """Four sessions: one with everything (params, todos, rounds, usage, a summary
    compaction followed by a summary-less one), a subagent, a watched one with only zero
    usage, and an empty one."""
    params = StrategyParams(context_window=200_000, numbers={"keep_rounds": 3, "r": 0.5})
    main = store.create_session("/w", "main", "anthropic", "m", "layered", params=params)
    assert main.id is not None
    sub = store.create_session("/w", "sub", parent_session_id=main.id, agent_id="a1")
    watched = store.create_session("/w", "w", source="/rec.jsonl")
    store.create_session("/empty")
    store.set_todos(main.id, [TodoItem(content="x", status="in_progress")])
    for sid in (main.id, sub.id, watched.id):
        assert sid is not None
        for r in range(1, 4):
            store.open_round(sid, Message(role="user", content=f"q{r}", created_at=T0))
            store.append_message(
                sid, r, Message(role="assistant", content="a", tokens=3, meta={"step": 1})
            )
            if r < 3:
                store.finish_round(sid, r, RoundStatus.FINISHED, error="e" if r == 2 else None)
    store.add_usage(_usage(main.id, 1, 1, (10, 2, 0, 5), hour=4, local_estimate=9))
    store.add_usage(_usage(main.id, 2, 1, (20, 3, 7, 0)))
    store.add_usage(_usage(main.id, None, None, (0, 0, 0, 0), source="import"))
    assert sub.id is not None and watched.id is not None
    store.add_usage(_usage(sub.id, None, None, (0, 1, 0, 0), local_estimate=None))
    store.add_usage(_usage(watched.id, 1, 1, (0, 0, 0, 0)))
    first = [m.id for m in store.round_messages(main.id, 1) if m.id is not None]
    summary = Summary(session_id=main.id, content="s", first_round=1, last_round=1, tokens=4)
    comp = Compaction(session_id=main.id, trigger=Trigger.AUTO, strategy="layered")
    store.apply_compaction(main.id, first, summary, comp.model_copy(update={"stats": {"k": 1}}))
    store.record_compaction(comp.model_copy(update={"outcome": Outcome.SKIPPED}))
    store.bind()
    return store


def _session_ids(store: Store) -> list[int]:
    return [s.id for s in SessionRow.select(SessionRow.id).order_by(SessionRow.id)] + [999]


def test_get_session_and_todos_are_peewees(full: Store) -> None:
    for sid in _session_ids(full):
        row = SessionRow.get_or_none(SessionRow.id == sid)
        if row is None:
            with pytest.raises(SessionNotFound, match=f"no session {sid}"):
                full.get_session(sid)
            with pytest.raises(SessionNotFound):
                full.get_todos(sid)
            continue
        assert full.get_session(sid) == session_model(row)
        assert full.get_todos(sid) == [TodoItem.model_validate(t) for t in row.todos or []]
    assert full.get_session(1).params is not None
    assert full.get_todos(1) == [TodoItem(content="x", status="in_progress")]


def test_last_usage_is_peewees(full: Store) -> None:
    u = UsageRow
    measured = (
        u.input_tokens + u.output_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
    ) > 0
    found = []
    for sid in _session_ids(full):
        row = u.select().where((u.session == sid) & measured).order_by(u.id.desc()).first()
        expected = None if row is None else usage_model(row)
        assert full.last_usage(sid) == expected
        found.append(expected)
    # main's last record is all zeros and passed over; sub's has NULL round and step; the
    # watched session has only zeros, the empty one none.
    assert [r.usage.input_tokens if r else None for r in found] == [20, 0, None, None, None]
    assert found[1] is not None and found[1].round_index is None and found[1].step is None


def test_last_summary_compaction_at_is_peewees(full: Store) -> None:
    c = CompactionRow
    for sid in _session_ids(full):
        row = (
            c.select(c.created_at)
            .where((c.session == sid) & c.summary.is_null(False))
            .order_by(c.id.desc())
            .first()
        )
        assert full.last_summary_compaction_at(sid) == (None if row is None else row.created_at)
    with_summary = c.get(c.summary.is_null(False))
    assert full.last_summary_compaction_at(1) == with_summary.created_at is not None


def test_round_row_is_peewees(full: Store) -> None:
    fields = RoundRow._meta.sorted_fields
    for sid in _session_ids(full):
        for number in range(0, 5):
            row = RoundRow.get_or_none((RoundRow.session == sid) & (RoundRow.number == number))
            if row is None:
                with pytest.raises(StoreError, match=f"session {sid} has no round {number}"):
                    full._round_row(sid, number)
                with pytest.raises(StoreError, match=f"session {sid} has no round {number}"):
                    full._round_id(sid, number)
                continue
            plain = full._round_row(sid, number)
            assert [
                getattr(plain, f.object_id_name if f.name == "session" else f.name) for f in fields
            ] == [getattr(row, f.object_id_name if f.name == "session" else f.name) for f in fields]
            assert round_model(plain) == round_model(row)
            assert full._round_id(sid, number) == row.id
    assert full._round_row(1, 1).archived is True  # a BooleanField converted, not 1


def _columns(store: Store, table: str, row_id: int) -> dict[str, Any]:
    """A row as SQLite holds it, every column but the id."""
    cursor = dialect.sql(store.db, f'SELECT * FROM "{table}" WHERE id = ?', (row_id,))
    names = [d[0] for d in cursor.description]
    values = cursor.fetchone()
    assert values is not None
    return {n: v for n, v in zip(names, values, strict=True) if n != "id"}


def test_open_round_stores_and_returns_what_peewee_did(
    full: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new round's row is the one ``RoundRow.create`` wrote, column for column, and the
    Round returned is that row read back by peewee."""
    monkeypatch.setattr("engine.store.conversation.utcnow", lambda: T0)
    empty = 4
    for number in (1, 2):
        full.bind()
        made = RoundRow.create(session=empty, number=10 * number, started_at=T0)
        rnd, msg = full.open_round(empty, Message(role="user", content="u"))
        full.bind()
        assert rnd == round_model(RoundRow.get_by_id(rnd.id))
        assert (rnd.index, rnd.status, rnd.started_at) == (10 * number + 1, RoundStatus.OPEN, T0)
        assert msg.meta.round == rnd.index
        assert _columns(full, "round_row", rnd.id) == {
            **_columns(full, "round_row", made.id),
            "number": rnd.index,
        }


@pytest.mark.parametrize(
    ("table", "left_out"),
    [
        (MessageRow, ()),
        (MessageRow, ("tool_calls", "meta", "tokens")),
        (UsageRow, ()),
        (UsageRow, ("not plain",)),
    ],
)
def test_inserted_rows_are_what_peewee_inserts(
    full: Store, table: type[Any], left_out: tuple[str, ...]
) -> None:
    """One row through the kept INSERT, the same through peewee's ``insert``: equal columns,
    defaults (a value or made by a call) included."""
    full.bind()
    if table is MessageRow:
        m = Message(
            role="assistant",
            content="é ✓",
            tool_calls=[{"id": "t1", "name": "read", "input": {"path": "ä"}}],
            meta={"step": 2, "tool_name": "read"},
            created_at=T0 + timedelta(microseconds=7),
        )
        row = message_row(1, full._round_id(1, 2), m)
    else:
        row = {"session": 2, "round_index": None, "step": 3, "input_tokens": 5}
        row["created_at"] = T0
        if left_out == ("not plain",):
            # values their column converts (an int, a bool as peewee stores them): the
            # INSERT passes on only an int to an integer column, a str to a text one...
            row.update(step=3.0, input_tokens=True, model=Path("m"), copied=1)
    row = {k: v for k, v in row.items() if k not in left_out}
    for _ in range(2):  # the second time through the kept statement
        ours = full._insert_row(table, row)
        theirs = table.insert(**row).execute()
        name = table._meta.table_name
        assert _columns(full, name, ours) == _columns(full, name, theirs)


@pytest.mark.parametrize(
    "when",
    [
        T0 + timedelta(microseconds=7),
        datetime(2025, 3, 1, 12, 0),  # naive: taken as UTC
        datetime(2025, 3, 1, 12, 0, tzinfo=timezone(timedelta(hours=-5))),
    ],
)
def test_times_and_rows_without_some_fields_are_inserted_as_peewee_inserts(
    full: Store, when: datetime
) -> None:
    """The INSERT's parameters are written out per statement (issue 44), a zoned time as
    its ``isoformat()``: a time with a zone (UTC or another) or without, and a later row
    that lacks a field the statement was made for (its default then, as peewee gives it),
    go in as peewee's ``insert`` puts them."""
    full.bind()
    row = {"session": 2, "round_index": 1, "step": 3, "input_tokens": 5, "created_at": when}
    for one in (row, {k: v for k, v in row.items() if k != "step"}):
        sql, values = insert_statement(UsageRow, row)  # the statement made for ``row``'s fields
        ours = dialect.insert_returning_id(full.db, sql, values(one))
        theirs = UsageRow.insert(**one).execute()
        assert _columns(full, "usage_row", ours) == _columns(full, "usage_row", theirs)


@pytest.mark.sqlite_only  # reads the statements through SQLite's trace callback
def test_finish_round_writes_only_its_three_columns(
    full: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Status, end time and error change; every other column keeps its stored text, even
    one a whole-row ``save()`` would have written back differently."""
    ended = T0 + timedelta(hours=1)
    monkeypatch.setattr("engine.store.conversation.utcnow", lambda: ended)
    full.bind()
    odd_time = "2025-03-01T12:00:00Z"  # read as T0, written back by peewee as "+00:00"
    dialect.sql(
        full.db,
        "UPDATE round_row SET started_at = ? WHERE session_id = 2 AND number = 3",
        (odd_time,),
    )
    round_id = full._round_id(2, 3)
    others = {
        r: _columns(full, "round_row", r)
        for (r,) in dialect.sql(full.db, "SELECT id FROM round_row WHERE id != ?", (round_id,))
    }
    before = _columns(full, "round_row", round_id)
    statements: list[str] = []
    full.db.connection().set_trace_callback(statements.append)
    rnd = full.finish_round(2, 3, RoundStatus.ERROR, error="boom")
    full.db.connection().set_trace_callback(None)
    after = _columns(full, "round_row", round_id)
    assert {k for k in after if after[k] != before[k]} == {"status", "finished_at", "error"}
    assert (after["status"], after["finished_at"], after["error"]) == (
        "error",
        ended.isoformat(),
        "boom",
    )
    assert after["started_at"] == odd_time
    assert {r: _columns(full, "round_row", r) for r in others} == others
    updates = [s for s in statements if s.startswith('UPDATE "round_row"')]
    assert len(updates) == 1 and "started_at" not in updates[0] and "archived" not in updates[0]
    full.bind()
    assert rnd == round_model(RoundRow.get_by_id(round_id))
    assert rnd.finished_at == ended and rnd.started_at == T0


def test_observations_are_peewees(full: Store) -> None:
    """As namedtuples, the observations are what peewee's model rows gave, in order."""
    for sid in (1, 2):
        for rnd in range(1, 3):
            full.add_observation(
                Observation(
                    session_id=sid,
                    round_index=rnd,
                    step=1,
                    tool_use_id=f"t{sid}{rnd}",
                    tool_name="Read",
                    result={"ok": True, "lines": [1, 2]},
                    text="é",
                    tokens_full=9,
                    message_id=None if rnd == 1 else full.round_messages(sid, rnd)[0].id,
                )
            )
    full.bind()
    o = ObservationRow
    for sid in _session_ids(full):
        assert full.observations(sid) == [
            observation_model(r) for r in o.select().where(o.session == sid).order_by(o.id)
        ]
        for rnd in (1, 2, 3):
            expected = o.select().where((o.session == sid) & (o.round_index == rnd))
            assert full.observations(sid, rnd) == [
                observation_model(r) for r in expected.order_by(o.id)
            ]
    assert [x.message_id is None for x in full.observations(1)] == [True, False]


def test_token_counts_asked_by_digest_past_a_batch(full: Store) -> None:
    """1,203 counts remembered, asked for 1,001 of them and two never stored (more than two
    batches of 500 digests): exactly the stored ones asked for come back."""
    counts = {f"d{n:04}": n for n in range(1203)}
    full.remember_token_counts(counts)
    asked = [f"d{n:04}" for n in range(100, 1101)] + ["x1", "x2"]
    assert full.token_counts(asked) == {f"d{n:04}": n for n in range(100, 1101)}


@given(
    meta=st.builds(
        MessageMeta,
        round=st.none() | st.integers(-1, 3),
        step=st.none() | st.integers(-1, 3),
        tool_name=st.none() | st.text(max_size=3),
        tool_use_id=st.none() | st.text(max_size=3),
        is_error=st.booleans(),
        interrupted=st.booleans(),
        final=st.booleans(),
        origin=st.none() | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    ),
    calls=st.lists(
        st.builds(
            ToolCall,
            id=st.text(max_size=3),
            name=st.text(max_size=3),
            input=st.dictionaries(st.text(max_size=3), st.integers() | st.text(), max_size=2),
        ),
        max_size=2,
    ),
)
def test_a_message_row_holds_pydantics_dump_of_its_meta_and_calls(
    meta: MessageMeta, calls: list[ToolCall]
) -> None:
    """A message's ``meta`` and ``tool_calls`` columns are made without pydantic's dumps
    (issue 44): the same dictionaries, key for key and in order, as
    ``model_dump(exclude_defaults=True)`` and ``model_dump()`` give (0 and ``False`` a
    default or not as pydantic compares them)."""
    row = message_row(1, 2, Message(role="assistant", meta=meta, tool_calls=calls))
    expected = meta.model_dump(exclude_defaults=True)
    assert row["meta"] == expected
    assert list(row["meta"]) == list(expected)
    assert row["tool_calls"] == [c.model_dump() for c in calls]
    assert [list(c) for c in row["tool_calls"]] == [["id", "name", "input"]] * len(calls)
