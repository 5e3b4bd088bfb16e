"""The database's integrity is checked where damage can come from (issue 44), not at every
open: after a crash (a write-ahead log left by a process that did not close the file), before
a migration, and on request (``ctxscope check``).

The damage is made by hand: a table of 2,000 rows of 300 bytes (some 150 pages) beside
ctxscope's, its b-tree's root page overwritten with 0xff bytes, which SQLite cannot read as any
kind of page; ``PRAGMA quick_check`` then reports it (its lines are SQLite's, so the tests ask
only that some line names the table's root page). Opening reads only the file's header and
the tables it needs, so without a check the damage goes unseen until that table is read.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from engine.store import Store, StoreError, schema

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.sqlite_only


def _made(path: Path) -> int:
    """A ctxscope database at ``path`` holding one session and a 2,000-row table beside it,
    closed cleanly; the table's root page number."""
    store = Store.open(path)
    store.create_session("/w", "before the damage")
    store.close()
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE filler (n INTEGER PRIMARY KEY, text TEXT)")
    con.executemany("INSERT INTO filler VALUES (?, ?)", ((n, "x" * 300) for n in range(2000)))
    con.commit()
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'filler'").fetchone()
    con.close()
    assert not path.with_name(path.name + "-wal").exists()  # closed cleanly: no log left
    return int(root)


def _damage(path: Path, page: int) -> None:
    with sqlite3.connect(path) as con:
        (size,) = con.execute("PRAGMA page_size").fetchone()
    con.close()
    with path.open("r+b") as f:
        f.seek((page - 1) * size)
        f.write(b"\xff" * size)


def _crash_after_a_write(path: Path) -> None:
    """Another process opens the database, stores a session and is killed (SIGKILL): its
    write-ahead log stays behind, as after a crash."""
    script = (
        "import os, signal, sys\n"
        "from engine.store import Store\n"
        "store = Store.open(sys.argv[1])\n"
        "store.create_session('/w', 'written, then killed')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert path.with_name(path.name + "-wal").stat().st_size > 0


def test_a_clean_close_is_no_crash_and_a_killed_writer_is(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    _made(path)
    assert not schema.crashed(path)
    store = Store.open(path)
    store.create_session("/w", "open now")
    assert path.with_name(path.name + "-wal").stat().st_size > 0
    assert not schema.crashed(path)  # a log, but this process has the file open
    store.close()
    assert not schema.crashed(path)
    _crash_after_a_write(path)
    assert schema.crashed(path)
    reopened = Store.open(path)  # recovered by SQLite; whole, so it opens
    assert {i.session.title for i in reopened.list_sessions()} >= {"written, then killed"}
    reopened.close()
    assert not schema.crashed(path)


def test_damage_is_found_after_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    _damage(path, _made(path))
    _crash_after_a_write(path)
    with pytest.raises(StoreError, match=r"is damaged \(integrity check: .*`ctxscope check`"):
        Store.open(path)


def test_damage_is_found_before_a_migration(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    _damage(path, _made(path))
    with sqlite3.connect(path) as con:
        con.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION - 1}")
    con.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="is damaged"):
        Store.open(path)
    assert path.read_bytes() == before  # not migrated, not modified


def test_an_open_after_a_clean_close_reads_no_page_and_check_finds_the_damage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Opening a cleanly closed file does not check it (that is the point: no work that grows
    with the whole database at every command); `ctxscope check` does, exit 1, naming the
    page, and leaves the file as it was."""
    path = tmp_path / "c.db"
    root = _made(path)
    _damage(path, root)
    store = Store.open(path)
    assert [i.session.title for i in store.list_sessions()] == ["before the damage"]
    store.close()
    before = path.read_bytes()
    assert main(["check", "--db", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{path} is damaged:")
    assert main(["check", "--db", str(path), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["schema"] == schema.SCHEMA_VERSION
    assert any(str(root) in line for line in data["problems"]), data["problems"]
    assert path.read_bytes() == before


def test_check_says_ok_for_a_whole_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.db"
    _made(path)
    assert main(["check", "--db", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == {
        "database": str(path),
        "schema": schema.SCHEMA_VERSION,
        "ok": True,
        "problems": [],
    }


def test_check_refuses_a_file_that_is_not_ours(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"this is not sqlite at all\n" * 100)
    assert main(["check", "--db", str(path)]) == 1
    assert "not a ctxscope database" in capsys.readouterr().err
