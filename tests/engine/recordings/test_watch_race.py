"""Two ``ctxscope watch`` processes on one file and one database (issue 29).

One of them crashed with an ``AssertionError`` in ``writer.write_ended`` about one run in
three: each watcher keeps the round where its next save starts, and a watcher that had read
less of the file rewrote the session under the other, whose next rounds were then numbered
from a round that was gone. Now the stale watcher is refused in one line that says another
process writes the session, its transaction rolls back, and the other goes on.

Rounds of the corpus file marot (``claude_code.parse`` of each prefix of its lines, counting
the ``user`` items): 1 round up to line 494, 3 rounds from line 496 to 1846.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.recordings import claude_code
from engine.recordings.follow import Follower
from engine.recordings.writer import WrittenElsewhere, check, write
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.corpus import MAROT

ROOT = Path(__file__).resolve().parents[3]


def marot_lines() -> list[bytes]:
    return MAROT.read_bytes().split(b"\n")[:-1]


def stored(store: Store, session_id: int) -> list[tuple[str, str, int | None]]:
    return [(m.role, m.content, m.meta.round) for m in store.all_messages(session_id)]


def imported(tmp_path: Path, lines: list[bytes], name: str) -> list[tuple[str, str, int | None]]:
    """The messages of the same lines imported whole (what a watcher must end up with)."""
    ref = Store.open(tmp_path / f"ref-{len(lines)}.db")
    parsed = claude_code.parse(b"\n".join(lines).decode() + "\n", name)
    assert not check(parsed)
    report = write(ref, parsed, "/x", Settings())
    assert report.session.id is not None
    want = stored(ref, report.session.id)
    ref.close()
    return want


def wait_for(ready: Callable[[], bool], what: str, seconds: float = 120) -> None:
    """Wait for a state (never a fixed time): ``ready()`` true, looked at every 50 ms."""
    deadline = time.monotonic() + seconds
    while not ready():
        assert time.monotonic() < deadline, f"{what}: not in {seconds:.0f} s"
        time.sleep(0.05)


def _sessions(db: Path) -> int:
    try:
        store = Store.open(db, read_only=True)
    except Exception:  # the first process is still creating the database
        return 0
    try:
        return len(store.list_sessions())
    finally:
        store.close()


def _stored_now(db: Path) -> list[tuple[str, str, int | None]] | None:
    """The watched session's messages as stored now (None while there is no one session)."""
    store = Store.open(db, read_only=True)
    try:
        infos = store.list_sessions()
        if len(infos) != 1 or infos[0].session.id is None:
            return None
        return stored(store, infos[0].session.id)
    finally:
        store.close()


def test_a_watcher_whose_session_was_rewritten_under_it_is_refused(tmp_path: Path) -> None:
    """The race, step by step, with two stores on one file (two connections, as two
    processes have): B reads up to line 400 but stores it only after A stored up to line
    1000; A's next save would go on after round 4, and the session ends at round 1."""
    lines = marot_lines()
    f = tmp_path / "258c7280.jsonl"
    db = tmp_path / "w.db"
    f.write_bytes(b"\n".join(lines[:300]) + b"\n")
    a = Follower(f, Settings(), Store.open(db))
    b = Follower(f, Settings(), Store.open(db))
    assert a.poll() is not None and b.poll() is not None
    assert a.session is not None and b.session is not None and a.session.id == b.session.id
    sid = a.session.id
    assert sid is not None

    def grow(to: int, start: int) -> None:
        with open(f, "ab") as out:
            out.write(b"\n".join(lines[start:to]) + b"\n")

    grow(400, 300)
    assert b.look() is not None  # read, not stored yet
    grow(1000, 400)
    assert a.poll() is not None  # stores rounds 1-5
    # rounds 1-5: the two inputs typed while the agent worked (lines 497, 603) open rounds 2, 4
    assert a.store is not None and len(a.store.rounds(sid)) == 5
    b.save_pending()  # stores what it read: round 1 again, rounds 2-5 dropped
    assert len(a.store.rounds(sid)) == 1
    grow(1200, 1000)
    with pytest.raises(WrittenElsewhere, match="changed by another process") as refused:
        a.poll()
    assert "holds 1 rounds, this one stored 4" in str(refused.value)
    assert "second `ctxscope watch`" in str(refused.value)
    # Nothing of the refused save was kept: the session is B's, whole.
    assert stored(a.store, sid) == imported(tmp_path, lines[:400], f.name)
    # B goes on and ends with the file as an import would store it.
    assert b.poll() is not None
    assert b.store is not None
    assert stored(b.store, sid) == imported(tmp_path, lines[:1200], f.name)
    a.store.close()
    b.store.close()


def test_two_watch_processes_on_one_file_never_crash(tmp_path: Path) -> None:
    """Two real ``ctxscope watch --jsonl`` processes while the file grows 40 lines every
    0.3 s (the pace that crashed one of them before): neither prints a traceback; each ends
    cleanly, or with the one line that says another process writes the session; and the
    database ends with the file as an import stores it."""
    lines = marot_lines()[:1300]
    f = tmp_path / "s.jsonl"
    db = tmp_path / "w.db"
    f.write_bytes(b"\n".join(lines[:50]) + b"\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXSCOPE_WATCH_POLL_INTERVAL": "0.05"}
    env.pop("ANTHROPIC_API_KEY", None)
    argv = [sys.executable, "-m", "cli.main", "watch", str(f), "--jsonl", "--db", str(db)]
    procs = [
        subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tmp_path
        )
        for _ in range(2)
    ]
    whole = imported(tmp_path, lines, f.name)
    try:
        # both have read the first 50 lines and stored them (the session is there)
        wait_for(lambda: db.exists() and _sessions(db) == 1, "a watcher's first store")
        with open(f, "ab") as out:
            for start in range(50, 1300, 40):
                out.write(b"\n".join(lines[start : start + 40]) + b"\n")
                out.flush()
                time.sleep(0.3)  # the pace that crashed one of them (the race is the point)
        # one of them has stored the whole file (the other may be refused meanwhile)
        wait_for(lambda: _stored_now(db) == whole, "the whole file stored")
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        errors = []
        for proc in procs:
            assert proc.stderr is not None
            errors.append((proc.wait(timeout=30), proc.stderr.read().decode()))
    finally:
        for proc in procs:
            proc.kill()
    for code, err in errors:
        assert "Traceback" not in err and "AssertionError" not in err, err
        assert code == 0 or (
            code == 1 and err.count("\n") == 1 and "changed by another process" in err
        ), err
    assert any(code == 0 for code, _ in errors)
    store = Store.open(db)
    [info] = store.list_sessions()
    assert info.session.id is not None
    assert stored(store, info.session.id) == whole
    store.close()
