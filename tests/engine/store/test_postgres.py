"""A ctxscope database on PostgreSQL: created at the current schema, its version in the
``ctxscope_schema`` table, refusals that leave a database as it was, migrations written with
``schema.migrator`` running on it, and a password that is never shown."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from typing import Any

import psycopg
import pytest
from peewee import TextField

from engine.store import Store, StoreError, dialect, schema
from engine.store.lease import SessionBusy
from engine.store.models import SessionRow
from engine.store.postgres import VERSION_TABLE, masked
from tests.postgres_server import PostgresServer


@pytest.fixture
def url(postgres_server: PostgresServer) -> str:
    found = postgres_server.create_database("pgonly")
    yield found
    postgres_server.drop_database(found)


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as con:
        rows = con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    return {r[0] for r in rows}


def test_a_new_database_is_created_at_the_current_schema(url: str) -> None:
    Store.open(url).close()
    with psycopg.connect(url) as con:
        rows = con.execute(f"SELECT application_id, version FROM {VERSION_TABLE}").fetchall()
    assert rows == [(schema.APPLICATION_ID, schema.SCHEMA_VERSION)]
    assert {"session_row", "message_row", "archive_fts", VERSION_TABLE} <= _tables(url)


def test_a_newer_schema_is_refused_and_left_as_it_was(url: str) -> None:
    Store.open(url).close()
    with psycopg.connect(url) as con:
        con.execute(f"UPDATE {VERSION_TABLE} SET version = %s", (schema.SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="newer ctxscope"):
        Store.open(url)
    with psycopg.connect(url) as con:
        (version,) = con.execute(f"SELECT version FROM {VERSION_TABLE}").fetchone() or (0,)
    assert version == schema.SCHEMA_VERSION + 1


def test_another_programs_tables_are_not_taken_over(url: str) -> None:
    with psycopg.connect(url) as con:
        con.execute("CREATE TABLE invoices (id SERIAL PRIMARY KEY, total NUMERIC)")
    with pytest.raises(StoreError, match="another program.*invoices"):
        Store.open(url)
    assert _tables(url) == {"invoices"}


def test_an_empty_database_opened_to_read_is_left_empty(url: str) -> None:
    with pytest.raises(StoreError, match="empty"):
        Store.open(url, read_only=True)
    assert _tables(url) == set()


def test_a_migration_written_with_the_migrator_runs_on_postgresql(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older database is brought up step by step, each step in the write lock, and the
    version table follows (a step of schema.migrator: what later migrations are written with)."""
    Store.open(url).close()
    with psycopg.connect(url) as con:
        con.execute(f"UPDATE {VERSION_TABLE} SET version = %s", (schema.SCHEMA_VERSION - 1,))

    def add_notes(db: object) -> None:
        from playhouse.migrate import migrate

        migrate(schema.migrator(db).add_column("session_row", "notes", TextField(null=True)))

    monkeypatch.setitem(schema.MIGRATIONS, schema.SCHEMA_VERSION - 1, add_notes)
    store = Store.open(url)
    store.bind()
    assert "notes" in {c.name for c in store.db.get_columns(SessionRow._meta.table_name)}
    assert schema.stored_version(store.db) == schema.SCHEMA_VERSION
    store.close()


def _columns(url: str) -> set[tuple[str, str, str, str]]:
    with psycopg.connect(url) as con:
        rows = con.execute(
            "SELECT table_name, column_name, data_type, is_nullable "
            "FROM information_schema.columns WHERE table_schema = 'public'"
        ).fetchall()
    return {tuple(r) for r in rows}


def _step(name: str) -> int:
    """The version a migration step starts from, found by its name (its number may move)."""
    return next(v for v, step in schema.MIGRATIONS.items() if step.__name__ == name)


@pytest.mark.parametrize(
    "made_at",
    ["_proxied_requests", "_given_workspaces"],
    ids=["before the proxy's tables", "a database numbered by the branch before the merge"],
)
def test_main_s_migrations_run_on_postgresql_too(
    url: str, postgres_server: PostgresServer, made_at: str
) -> None:
    """A database from before the proxy's request tables, ``workspace_given`` and the
    imported-file table comes up to the current schema with each of them, as a new database
    has them. The second case: a database made when ``record_origin`` was step 11 -> 12 has
    its columns at version 12 but none of the proxy's tables; the last step makes them."""
    Store.open(url).close()
    fresh = _columns(url)
    with psycopg.connect(url) as con:
        con.execute(
            "INSERT INTO session_row (title, workspace, provider, model, strategy, todos, "
            "created_at, updated_at) VALUES "
            "('recorded', '/r', 'import', '', 'layered', '[]', now(), now()), "
            "('own', '/o', 'anthropic', '', 'layered', '[]', now(), now())"
        )
        con.execute("DROP TABLE exchange_row, exchange_blob_row, imported_file_row")
        con.execute("ALTER TABLE session_row DROP COLUMN workspace_given")
        if made_at == "_proxied_requests":
            con.execute("ALTER TABLE session_row DROP COLUMN origin_user")
            con.execute("ALTER TABLE session_row DROP COLUMN origin_machine")
        con.execute(f"UPDATE {VERSION_TABLE} SET version = %s", (_step(made_at),))
    store = Store.open(url)
    assert schema.stored_version(store.db) == schema.SCHEMA_VERSION
    recorded, own = store.get_session(1), store.get_session(2)
    # the imported session names its folder without working in it; the other was given its own
    assert (recorded.workspace_given, own.workspace_given) == (False, True)
    assert store.proxied_sessions() == [] and store.imported_files() == {}
    store.close()
    assert _columns(url) == fresh


def test_the_password_is_never_shown(postgres_server: PostgresServer) -> None:
    secret = "s3cret-Pa55"
    url = f"postgresql://ctxscope:{secret}@127.0.0.1:{postgres_server.port}/no_such_db"
    assert masked(url) == f"postgresql://ctxscope:***@127.0.0.1:{postgres_server.port}/no_such_db"
    with pytest.raises(StoreError) as caught:
        Store.open(url)
    message = str(caught.value)
    assert secret not in message
    assert "\n" not in message  # one line
    assert "no_such_db" in message and "does not exist" in message


def test_a_server_that_is_not_there_is_one_line() -> None:
    with pytest.raises(StoreError) as caught:
        Store.open("postgresql://me:pw@127.0.0.1:1/x")
    message = str(caught.value)
    assert message.startswith("cannot connect to postgresql://me:***@127.0.0.1:1/x: ")
    assert "\n" not in message and ":pw@" not in message


def test_placeholders_are_rewritten_outside_quotes_only() -> None:
    assert dialect.for_postgres("SELECT '?', \"a?\" FROM t WHERE x = ? AND y LIKE '%a'") == (
        "SELECT '?', \"a?\" FROM t WHERE x = %s AND y LIKE '%%a'"
    )


def test_an_import_reserves_ids_the_next_insert_does_not_reuse(url: str) -> None:
    """Rounds written with their own ids (an import) move the sequence past them: the next
    round opened one by one gets a new id, not one of theirs."""
    from engine.models import Message, RoundStatus

    store = Store.open(url)
    sid = store.create_session("/w").id
    assert sid is not None
    written = store.append_rounds(
        sid,
        [
            ([Message(role="user", content="a"), Message(role="assistant", content="b")], s)
            for s in (RoundStatus.FINISHED, RoundStatus.FINISHED)
        ],
    )
    imported = {m.id for _, messages in written for m in messages}
    rnd, msg = store.open_round(sid, Message(role="user", content="c"))
    assert rnd.index == 3 and rnd.id not in {r.id for r, _ in written}
    assert msg.id not in imported
    assert len({m.id for m in store.all_messages(sid)}) == 5  # 2 + 2 imported, 1 opened
    store.close()


def _hold_lease(url: str, session_id: int, ready: Any) -> None:
    """A writer that takes the session's lease and never lets go (until it is killed)."""
    store = Store.open(url)
    store.acquire_lease(session_id, "round")
    ready.set()
    time.sleep(600)


def test_a_lease_is_one_writer_and_a_dead_holder_is_known_at_once(url: str) -> None:
    """On PostgreSQL the lease's holder also holds an advisory lock on its own connection: a
    second writer is refused while it lives, and takes over as soon as it dies — no waiting for
    its heartbeat to grow old (60 s), even though the holder's row is still there."""
    store = Store.open(url)
    sid = store.create_session("/w").id
    assert sid is not None
    spawn = multiprocessing.get_context("spawn")
    ready = spawn.Event()
    holder = spawn.Process(target=_hold_lease, args=(url, sid, ready))
    holder.start()
    assert ready.wait(60)
    with psycopg.connect(url) as con:  # as if on another machine: its pid tells nothing here
        con.execute("UPDATE lease_row SET host = 'another-machine'")
    with pytest.raises(SessionBusy, match=f"pid {holder.pid} on another-machine"):
        store.acquire_lease(sid, "round")
    assert store.writer_alive(sid)
    assert holder.pid is not None
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(30)
    started = time.monotonic()
    lease = store.acquire_lease(sid, "compaction", wait=20)
    assert time.monotonic() - started < 20
    assert lease.took_over is not None and lease.took_over.pid == holder.pid
    other = Store.open(url)
    with pytest.raises(SessionBusy):
        other.acquire_lease(sid, "round")
    lease.release()
    other.acquire_lease(sid, "round").release()
    assert not store.writer_alive(sid)
    other.close()
    store.close()


def test_a_released_lease_is_free_at_once(url: str) -> None:
    """Released, a lease's lock is free for the next writer straight away (PostgreSQL frees
    an advisory lock on a closed connection only once that backend has exited: released by
    closing alone, an immediate ``acquire_lease(wait=0)`` was refused now and then at load 8).
    A hundred hand-overs between two stores, none waiting, the lock gone after each release."""
    first, second = Store.open(url), Store.open(url)
    sid = first.create_session("/w").id
    assert sid is not None
    for turn in range(100):
        store = (first, second)[turn % 2]
        store.acquire_lease(sid, "round", wait=0).release()
        assert not first.writer_alive(sid)
    first.close()
    second.close()


def test_a_nul_character_is_stored_as_the_replacement_character(url: str) -> None:
    """PostgreSQL's text holds no NUL (its documentation: "The character with the code zero
    cannot be in a string constant"); a tool result with one is stored, the NUL as U+FFFD,
    by the statements peewee writes, the plain ones and an import's ``executemany``."""
    from engine.models import Message, RoundStatus

    store = Store.open(url)
    sid = store.create_session("/w", "a\x00title").id
    assert sid is not None
    store.open_round(sid, Message(role="user", content="live\x00step"))
    store.finish_round(sid, 1, RoundStatus.FINISHED)
    store.append_rounds(sid, [([Message(role="user", content="im\x00port")], RoundStatus.FINISHED)])
    assert store.get_session(sid).title == "a\ufffdtitle"
    assert [m.content for m in store.all_messages(sid)] == ["live\ufffdstep", "im\ufffdport"]
    store.close()


def test_a_write_lock_held_too_long_is_one_line_and_nothing_is_written(url: str) -> None:
    """Another client holding the database's write lock (here a bare connection) past the busy
    timeout: the import-sized transaction gives up with one line, having written nothing."""
    Store.open(url).close()
    store = Store.open(url, busy_timeout=0.5)
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", (dialect.WRITE_LOCK,))
        started = time.monotonic()
        with pytest.raises(StoreError) as caught, store.transaction():
            store.create_session("/w", "never")
        assert time.monotonic() - started < 10
    message = str(caught.value)
    assert "stayed locked for 0.5 s" in message and "nothing was written" in message
    assert "\n" not in message
    assert store.list_sessions() == []
    store.close()


def test_postgres_opens_when_peewee_was_imported_without_the_driver(url: str) -> None:
    """engine.store imports peewee with the server drivers reported absent (SQLite commands
    do not pay for psycopg: tests/cli/test_startup.py), so peewee's own psycopg adapter finds
    no driver; engine.store.postgres brings its own. In a fresh interpreter where nothing
    imported psycopg first: peewee loads without it, then a PostgreSQL database is created,
    a session stored and read back through psycopg."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import json, sys\n"
        "import engine.store as store\n"
        "import peewee\n"
        "without = peewee.psycopg is None and 'psycopg' not in sys.modules\n"
        "s = store.Store.open(sys.argv[1])\n"
        "made = s.create_session(title='through psycopg', workspace='/tmp/ws')\n"
        "title = s.get_session(made.id).title\n"
        "s.close()\n"
        "print(json.dumps({'without': without, 'title': title,\n"
        "                  'driver': 'psycopg' in sys.modules}))\n"
    )
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", script, url],
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == {
        "without": True,
        "title": "through psycopg",
        "driver": True,
    }
