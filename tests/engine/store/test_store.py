"""The store: WAL, foreign keys, schema version, safe refusal of foreign or corrupt files."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from peewee import SqliteDatabase

from engine.models import Message, RoundStatus, TodoItem, Usage, UsageRecord
from engine.store import SessionNotFound, Store, StoreError
from engine.store.schema import APPLICATION_ID, SCHEMA_VERSION


@pytest.mark.sqlite_only
def test_new_database_is_wal_with_foreign_keys_and_versioned(store: Store) -> None:
    assert store.db.execute_sql("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute_sql("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.db.execute_sql("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert store.db.execute_sql("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


@pytest.mark.sqlite_only
def test_opening_waits_for_a_writer_of_a_file_not_yet_in_wal(tmp_path: Path) -> None:
    """A process that has just created the database holds its write lock while the file is
    still in its rollback journal; SQLite then answers another process' switch to WAL with
    "database is locked" at once, without waiting (two `watch` processes started together
    saw it). Opening waits for the lock like any other statement and switches the file."""
    path = tmp_path / "w.db"
    Store.open(path).close()
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("PRAGMA journal_mode = delete")
    other.execute("BEGIN IMMEDIATE")
    released = threading.Timer(0.3, other.execute, ("COMMIT",))
    released.start()
    try:
        store = Store.open(path)
    finally:
        released.join()
        other.close()
    assert store.db.execute_sql("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()


def test_reopening_keeps_sessions(database: Path | str) -> None:
    path = database
    s = Store.open(path)
    sid = s.create_session("/w", "first").id
    s.close()
    again = Store.open(path)
    assert again.get_session(sid).title == "first"
    again.close()


def test_garbage_file_is_refused_and_not_modified(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"this is not sqlite at all\n" * 100)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a ctxscope database"):
        Store.open(path)
    assert path.read_bytes() == before
    assert not Path(str(path) + "-wal").exists()


def test_foreign_sqlite_database_is_refused_and_not_modified(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="another program"):
        Store.open(path)
    assert path.read_bytes() == before


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    Store.open(path).close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="newer ctxscope"):
        Store.open(path)


def test_unknown_session_raises(store: Store) -> None:
    with pytest.raises(SessionNotFound, match="no session 42"):
        store.get_session(42)


def test_rounds_messages_usage_and_todos_round_trip(store: Store, session_id: int) -> None:
    rnd, user = store.open_round(session_id, Message(role="user", content="hi", tokens=2))
    assert rnd.index == 1 and user.meta.round == 1 and user.id is not None
    store.append_message(session_id, 1, Message(role="assistant", content="hello", tokens=3))
    store.finish_round(session_id, 1, RoundStatus.FINISHED)
    store.add_usage(
        UsageRecord(
            session_id=session_id,
            round_index=1,
            step=1,
            usage=Usage(
                input_tokens=10,
                cache_read_input_tokens=5,
                cache_creation_input_tokens=2,
                output_tokens=4,
            ),
        )
    )
    store.set_todos(session_id, [TodoItem(content="a", status="in_progress")])

    history = store.history(session_id)
    assert [m.content for m in history.messages] == ["hi", "hello"]
    assert store.rounds(session_id)[0].status is RoundStatus.FINISHED
    last = store.last_usage(session_id)
    assert last is not None and last.usage.input_side == 17
    assert store.get_todos(session_id) == [TodoItem(content="a", status="in_progress")]
    info = store.list_sessions()[0]
    assert (info.rounds, info.messages, info.current_tokens) == (1, 2, 5)


def test_second_round_gets_next_index(store: Store, session_id: int) -> None:
    store.open_round(session_id, Message(role="user", content="one"))
    rnd, _ = store.open_round(session_id, Message(role="user", content="two"))
    assert rnd.index == 2
    assert [r.index for r in store.open_rounds(session_id)] == [1, 2]


def test_an_older_schema_is_migrated_step_by_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.store import schema

    path = tmp_path / "old.db"
    s = Store.open(path)
    sid = s.create_session("/w", "kept").id
    s.close()
    applied: list[int] = []

    def add_notes(db: SqliteDatabase) -> None:
        applied.append(1)
        db.execute_sql("ALTER TABLE session_row ADD COLUMN notes TEXT")

    monkeypatch.setattr(schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(schema.MIGRATIONS, SCHEMA_VERSION, add_notes)
    again = Store.open(path)
    assert applied == [1]
    assert again.db.execute_sql("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    columns = [row[1] for row in again.db.execute_sql("PRAGMA table_info(session_row)")]
    assert "notes" in columns
    assert again.get_session(sid).title == "kept"
    again.close()


def _indexes(path: Path) -> set[tuple[str, str]]:
    con = sqlite3.connect(path)
    try:
        return set(con.execute("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'"))
    finally:
        con.close()


def test_schema_24_s_rows_by_session_are_indexed_by_session_and_round(tmp_path: Path) -> None:
    """24 -> 25: a database whose observations and usage records were indexed by session
    alone (what peewee makes for a foreign key) comes up with them indexed by session and
    round instead, as a new database has them, and a watched session's last round is deleted
    through that index (SQLite's own plan, not a scan of the session's rows); its rows kept."""
    from engine.store.schema import MIGRATIONS

    fresh = tmp_path / "fresh.db"
    Store.open(fresh).close()
    path = tmp_path / "old.db"
    store = Store.open(path)
    sid = store.create_session("/w", "kept").id
    store.close()
    con = sqlite3.connect(path)
    for table in ("observation_row", "usage_row"):
        con.execute(f'DROP INDEX "{table}_session_id_round_index"')
        con.execute(f'CREATE INDEX "{table}_session_id" ON "{table}" ("session_id")')
    before = next(v for v, step in MIGRATIONS.items() if step.__name__ == "_rows_by_round")
    con.execute(f"PRAGMA user_version = {before}")
    con.commit()
    con.close()
    again = Store.open(path)
    assert again.db.execute_sql("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 25
    assert again.get_session(sid).title == "kept"
    plan = again.db.execute_sql(
        "EXPLAIN QUERY PLAN DELETE FROM observation_row WHERE session_id = 1 AND round_index >= 3"
    ).fetchall()
    (step,) = [row[3] for row in plan]  # "USING INDEX" or "USING COVERING INDEX"
    assert step.startswith("SEARCH observation_row USING ")
    assert step.endswith(
        "INDEX observation_row_session_id_round_index (session_id=? AND round_index>?)"
    )
    again.close()
    assert _indexes(path) == _indexes(fresh)
    assert ("usage_row_session_id", "usage_row") not in _indexes(path)


def test_rounds_are_grouped_by_their_round_not_by_user_messages() -> None:
    from engine.models import History, MessageMeta

    def m(role: str, rnd: int) -> Message:
        return Message(role=role, meta=MessageMeta(round=rnd))  # type: ignore[arg-type]

    # round 2 lost its user message to a cut inside it; round 3 keeps a pinned user message
    history = History(
        messages=[m("assistant", 2), m("tool", 2), m("assistant", 2), m("user", 3), m("user", 4)]
    )
    assert [[x.meta.round for x in g] for g in history.rounds()] == [[2, 2, 2], [3], [4]]


def test_delete_session_removes_everything_stored_for_it(
    tmp_path: Path, database: Path | str
) -> None:
    from engine.llm.offline import OfflineProvider
    from engine.session import Agent
    from engine.settings.config import Settings
    from engine.store.models import (
        CompactionRow,
        MessageRow,
        ObservationRow,
        RoundRow,
        SegmentRow,
        SessionRow,
        SummaryRow,
        UsageRow,
    )

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("hello\n", encoding="utf-8")
    store = Store.open(database)
    settings = Settings(model="offline", keep_rounds=1)
    ids = []
    for _ in range(2):
        session = store.create_session(str(workspace))
        agent = Agent(store, session, settings, OfflineProvider(settings), workspace)
        agent.run("read README.md")
        agent.run("ls .")
        assert agent.compact().summary is not None
        ids.append(session.id)
    doomed, kept = ids

    store.delete_session(doomed)

    for table in (RoundRow, MessageRow, SummaryRow, CompactionRow, ObservationRow, UsageRow):
        assert not table.select().where(table.session == doomed).exists(), table
        assert table.select().where(table.session == kept).exists(), table
    assert SegmentRow.select().count() == 1
    assert [s.id for s in SessionRow.select()] == [kept]
    with pytest.raises(SessionNotFound):
        store.get_session(doomed)
    with pytest.raises(SessionNotFound):
        store.delete_session(doomed)
    assert len(store.history(kept).messages) > 0
    store.close()


def schema_5_database(path: Path) -> int:
    """A database as ctxscope schema 5 left it (no lease table), with one session; its id."""
    s = Store.open(path)
    sid = s.create_session("/w", "old").id
    s.close()
    con = sqlite3.connect(path)
    con.execute("DROP TABLE lease_row")
    con.execute("PRAGMA user_version = 5")
    con.commit()
    con.close()
    assert sid is not None
    return sid


def test_naive_timestamps_of_old_rows_are_migrated_to_utc(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    sid = schema_5_database(path)
    con = sqlite3.connect(path)
    con.execute(
        "UPDATE session_row SET created_at = '2026-11-01T09:00:00', "
        "updated_at = '2026-11-01T09:30:00.250000' WHERE id = ?",
        (sid,),
    )
    con.commit()
    con.close()

    store = Store.open(path)
    assert store.db.execute_sql("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    raw = store.db.execute_sql("SELECT created_at, updated_at FROM session_row").fetchone()
    assert raw == ("2026-11-01T09:00:00+00:00", "2026-11-01T09:30:00.250000+00:00")
    session = store.get_session(sid)
    assert session.created_at < session.updated_at  # comparable: both aware
    assert store.lease_holder(sid) is None  # the lease table exists now
    store.close()


def test_a_naive_time_written_later_is_stored_as_utc(store: Store, session_id: int) -> None:
    from datetime import datetime

    store.open_round(
        session_id, Message(role="user", content="hi", created_at=datetime(2026, 1, 2, 3, 4, 5))
    )
    raw = store.db.execute_sql("SELECT created_at FROM message_row").fetchone()[0]
    assert raw == "2026-01-02T03:04:05+00:00"


def test_an_old_schema_without_a_migration_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "ancient.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE session_row (id INTEGER PRIMARY KEY)")
    con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    con.execute("PRAGMA user_version = 0")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="schema 0, which this ctxscope cannot upgrade"):
        Store.open(path)
    assert path.read_bytes() == before  # not even switched to WAL
    assert not Path(f"{path}-wal").exists()


def test_another_programs_empty_sqlite_file_is_not_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    con = sqlite3.connect(path)
    con.execute("PRAGMA user_version = 7")  # an SQLite file with a header and no tables
    con.commit()
    con.close()
    before = path.read_bytes()
    assert len(before) > 0
    with pytest.raises(StoreError, match="another program"):
        Store.open(path)
    assert path.read_bytes() == before


def test_a_zero_byte_file_becomes_a_new_database(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    path.touch()
    s = Store.open(path)
    assert s.db.execute_sql("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    s.close()


def test_a_read_only_store_refuses_writes(
    store: Store, session_id: int, database: Path | str
) -> None:
    reader = Store.open(database, read_only=True)
    with pytest.raises(Exception, match="readonly|read-only"):
        reader.create_session("/x")
    with pytest.raises(StoreError, match="read-only"):
        reader.acquire_lease(session_id, "round")
    reader.close()


def test_two_stores_on_one_thread_each_read_their_own_file(tmp_path: Path) -> None:
    first = Store.open(tmp_path / "first.db")
    one = first.create_session("/ws/one", "first's")
    first.open_round(one.id, Message(role="user", content="only in first"))
    second = Store.open(tmp_path / "second.db")  # opened last: it must not take over `first`
    assert second.list_sessions() == []

    assert [s.session.title for s in first.list_sessions()] == ["first's"]
    assert [m.content for m in first.history(one.id).messages] == ["only in first"]
    two = second.create_session("/ws/two", "second's")
    assert two.id == 1  # a fresh file numbers from 1: nothing went into `first`
    assert [s.session.title for s in first.list_sessions()] == ["first's"]
    assert [s.session.title for s in second.list_sessions()] == ["second's"]


def test_two_stores_on_two_threads_never_cross(tmp_path: Path) -> None:
    import threading

    stores = [Store.open(tmp_path / f"{name}.db") for name in ("a", "b")]
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def work(store: Store, name: str) -> None:
        try:
            start.wait()
            session = store.create_session(f"/ws/{name}", name)
            for i in range(60):
                store.open_round(session.id, Message(role="user", content=f"{name}{i}"))
                store.append_message(session.id, i + 1, Message(role="assistant", content=name))
                store.finish_round(session.id, i + 1, RoundStatus.FINISHED)
                # a read between the other thread's writes must still see this file only
                assert [s.session.title for s in store.list_sessions()] == [name]
        except BaseException as exc:  # reported below, with the thread's name
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(s, n)) for s, n in zip(stores, ("a", "b"), strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    for store, name in zip(stores, ("a", "b"), strict=True):
        (session,) = store.list_sessions()
        contents = [m.content for m in store.history(session.session.id).messages]
        assert contents[:2] == [f"{name}0", name] and len(contents) == 120
        assert {c[0] for c in contents} == {name}


def test_a_thread_no_store_has_bound_cannot_reach_any_file(store: Store) -> None:
    import threading

    from engine.store.models import SessionRow

    store.create_session("/ws", "bound on the test's thread only")
    seen: list[BaseException] = []

    def query() -> None:
        try:
            SessionRow.select().count()
        except BaseException as exc:
            seen.append(exc)

    thread = threading.Thread(target=query)
    thread.start()
    thread.join()
    assert len(seen) == 1 and "uninitialized Proxy" in str(seen[0])


def test_a_scratch_store_skips_flushing_but_keeps_transactions(tmp_path: Path) -> None:
    # durable=False (a replay's throw-away database): synchronous off, rollback journal in
    # memory (no WAL files beside it); foreign keys still on, and a failed write still rolls
    # back whole
    scratch = Store.open(tmp_path / "scratch.db", durable=False)
    sql = scratch.db.execute_sql
    assert sql("PRAGMA journal_mode").fetchone()[0] == "memory"
    assert sql("PRAGMA synchronous").fetchone()[0] == 0  # OFF
    assert sql("PRAGMA foreign_keys").fetchone()[0] == 1
    sid = scratch.create_session("/w", "scratch").id
    assert sid is not None
    rnd, _ = scratch.open_round(sid, Message(role="user", content="q"))
    with pytest.raises(StoreError, match="has no round 9"):
        scratch.append_message(sid, 9, Message(role="assistant", content="lost"))
    scratch.append_message(sid, rnd.index, Message(role="assistant", content="kept"))
    assert [m.content for m in scratch.history(sid).messages] == ["q", "kept"]
    scratch.close()
    assert not (tmp_path / "scratch.db-wal").exists()
    # the default stays durable: WAL, synchronous NORMAL
    durable = Store.open(tmp_path / "kept.db")
    assert durable.db.execute_sql("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert durable.db.execute_sql("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    durable.close()
