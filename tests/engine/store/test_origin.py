"""Who and where a session comes from: stored only with ``record_origin`` on (schema 12), on
either database; an older file gains the two columns empty; ``sessions`` filters by them."""

from __future__ import annotations

import getpass
import json
import socket
import sqlite3
from pathlib import Path

import pytest

from cli.main import main
from engine.settings.config import Settings, session_origin
from engine.store import Store, dialect
from engine.store.schema import MIGRATIONS, SCHEMA_VERSION

RECORDED = Path(__file__).resolve().parents[2] / "data" / "recorded_session.jsonl"


def test_nothing_about_who_is_stored_by_default(database: Path | str) -> None:
    assert session_origin(Settings()) is None
    store = Store.open(database)
    sid = store.create_session("/w", origin=session_origin(Settings()))
    assert (sid.user, sid.machine) == (None, None)
    row = dialect.sql(store.db, "SELECT origin_user, origin_machine FROM session_row").fetchone()
    assert tuple(row) == (None, None)
    store.close()


def test_with_record_origin_the_login_and_host_are_stored(database: Path | str) -> None:
    origin = session_origin(Settings(record_origin=True))
    assert origin == (getpass.getuser(), socket.gethostname())
    store = Store.open(database)
    sid = store.create_session("/w", origin=origin).id
    assert sid is not None
    again = store.get_session(sid)
    assert (again.user, again.machine) == origin
    store.close()


def test_a_file_from_before_the_columns_gains_them_empty(tmp_path: Path) -> None:
    before = next(v for v, step in MIGRATIONS.items() if step.__name__ == "_session_origin")
    path = tmp_path / "old.db"
    store = Store.open(path)
    store.create_session("/w", "before")
    store.close()
    con = sqlite3.connect(path)  # back to the schema before: the two columns did not exist
    con.execute("ALTER TABLE session_row DROP COLUMN origin_user")
    con.execute("ALTER TABLE session_row DROP COLUMN origin_machine")
    con.execute(f"PRAGMA user_version = {before}")
    con.commit()
    con.close()
    store = Store.open(path)
    assert store.db.execute_sql("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    old = store.get_session(1)
    assert (old.title, old.user, old.machine) == ("before", None, None)
    store.close()


def test_sessions_filters_by_user_machine_and_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "team.db"
    project = tmp_path / "alpha"
    project.mkdir()
    other = tmp_path / "again.jsonl"  # other bytes: a file stored before is not stored again
    other.write_bytes(RECORDED.read_bytes() + b"\n")
    monkeypatch.setenv("CTXSCOPE_RECORD_ORIGIN", "1")
    assert main(["import", str(RECORDED), "--db", str(db), "--workspace", str(project)]) == 0
    monkeypatch.delenv("CTXSCOPE_RECORD_ORIGIN")
    assert main(["import", str(other), "--db", str(db), "--workspace", str(tmp_path)]) == 0
    capsys.readouterr()

    def listed(*flags: str) -> list[int]:
        assert main(["sessions", "--db", str(db), "--json", *flags]) == 0
        return [s["id"] for s in json.loads(capsys.readouterr().out)]

    assert sorted(listed()) == [1, 2]
    assert listed("--user", getpass.getuser()) == [1]
    assert listed("--machine", socket.gethostname()) == [1]
    assert listed("--user", "nobody-here") == []
    assert listed("--project", "alpha") == [1]
    assert listed("--project", str(tmp_path)) == [2]
