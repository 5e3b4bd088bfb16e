"""A full disk and a lock held too long: one line, nothing half-written, a consistent database.

The full disk is SQLite's own SQLITE_FULL, made with ``PRAGMA max_page_count`` (the page
limit a connection may grow the file to; SQLite's docs: a write past it fails with
"database or disk is full"), set at the file's current size so any growth fails. The held
lock is a second process in ``BEGIN IMMEDIATE`` (a raw SQLite writer, no lease), or a live
lease holder; either must be named in the one line.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli.main import main
from engine.store import Store, StoreError, access

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "data" / "recorded_session.jsonl"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("CTXSCOPE_MODEL", "offline")
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "d.db"
    assert main(["import", str(RECORDED), "--db", str(path), "--workspace", str(tmp_path)]) == 0
    return path


def counts(path: Path) -> tuple[str, int, int, int]:
    """integrity_check, and the sessions, messages and rounds stored (plain sqlite3)."""
    con = sqlite3.connect(path)
    try:
        ok = con.execute("PRAGMA integrity_check").fetchone()[0]
        found = [
            con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
            for t in ("session_row", "message_row", "round_row")
        ]
    finally:
        con.close()
    return ok, found[0], found[1], found[2]


def page_count(path: Path) -> int:
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = int(con.execute("PRAGMA page_count").fetchone()[0])
    con.close()
    return pages


def test_import_onto_a_full_disk_is_one_line_and_stores_nothing(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = counts(db)
    assert before[0] == "ok" and before[1] == 1
    monkeypatch.setitem(access.PRAGMAS, "max_page_count", page_count(db))
    capsys.readouterr()
    # Not the same bytes as the file stored already (that one would not be stored again).
    other = db.with_name("again.jsonl")
    other.write_bytes(RECORDED.read_bytes() + b"\n")
    code = main(["import", str(other), "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "the disk is full" in err and "rolled back" in err
    assert counts(db) == before  # integrity ok, the same rows: nothing half-written


def test_a_strategy_switch_on_a_full_disk_rolls_back(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session's own row must grow for the switch to fail: fill its last page first.
    monkeypatch.setitem(access.PRAGMAS, "max_page_count", page_count(db))
    store = Store.open(db)
    with pytest.raises(StoreError, match="the disk is full"):
        for n in range(200):  # each switch adds a row; the file cannot grow past its pages
            store.switch_strategy(1, "masking" if n % 2 == 0 else "layered")
    switched = len(store.strategy_switches(1))
    strategy = store.get_session(1).strategy
    store.close()
    # The failed switch left no trace: the switches stored and the session agree.
    assert strategy == ("masking" if switched % 2 else "layered")
    assert counts(db)[0] == "ok"


HOLD_LOCK = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
con.execute("ROLLBACK")
"""


def test_import_past_the_busy_timeout_names_the_raw_writer(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(db), "20"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setenv("CTXSCOPE_DB_BUSY_TIMEOUT", "0.3")
        capsys.readouterr()
        started = time.monotonic()
        code = main(["import", str(RECORDED), "--db", str(db)])
        took = time.monotonic() - started
        err = capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()
    assert code == 1 and took < 10
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"stayed locked for 0.3 s by another writer (pid {holder.pid} (" in err
    assert "nothing was written" in err
    assert counts(db)[:2] == ("ok", 1)


def test_a_write_past_the_busy_timeout_names_the_lease_holder(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live lease of this very process (another thread's round): the lock message lists it
    with the lease's purpose; the raw lock is another process's."""
    store = Store.open(db)
    lease = store.acquire_lease(1, "round")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(db), "20"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setattr(access, "LOCKED_RETRIES", 0)
        slow = Store.open(db, busy_timeout=0.2)
        with pytest.raises(StoreError) as info:
            slow.update_session(1, title="x")
        slow.close()
    finally:
        holder.kill()
        holder.wait()
        lease.release()
        store.close()
    message = str(info.value)
    assert "\n" not in message
    assert f"session 1 by pid {os.getpid()}, round since" in message
    assert f"pid {holder.pid} (" in message
