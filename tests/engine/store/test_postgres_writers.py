"""Many writers on one PostgreSQL database: four processes import the corpus at once (two
of them share a file, two others another), and one more is killed in the middle of its
import. Every session is stored once and whole, as a lone import into SQLite stores it."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg

from engine.recordings.importing import ParsedFiles, import_parsed, parse_sessions
from engine.settings.config import Settings
from engine.store import Store, dialect
from tests.engine.recordings.corpus import CORPUS
from tests.postgres_server import PostgresServer

FILES = sorted(p for p in CORPUS.iterdir() if p.suffix in {".jsonl", ".json", ".traj"})


def _import(target: str | Path, files: list[Path], start: Any = None) -> None:
    """One writer: parse ``files``, wait for the start, store them in one import."""
    parsed = ParsedFiles([(path, one) for path in files for one in parse_sessions(path)])
    store = Store.open(target)
    if start is not None:
        start.wait()
    import_parsed(store, parsed, "/w", Settings())
    store.close()


def _stored(store: Store) -> Counter[tuple[str | None, str, int, int]]:
    """Each stored session as (source, title, rounds, messages), counted."""
    found: Counter[tuple[str | None, str, int, int]] = Counter()
    for info in store.list_sessions():
        s = info.session
        found[(s.source, s.title, info.rounds, info.messages)] += 1
    return found


def test_four_writers_store_every_session_once_and_whole(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    assert len(FILES) == 17  # the corpus' session files (tests/data/corpus/README.md)
    reference = Store.open(tmp_path / "one.db")
    _import(tmp_path / "one.db", FILES)
    expected = _stored(reference)
    reference.close()
    # 17 files, 17 sessions and the Copilot CLI file's subagent
    assert sum(expected.values()) == 18 and max(expected.values()) == 1

    url = postgres_server.create_database("writers")
    Store.open(url).close()  # created once, before the race (creating is tested elsewhere)
    last = len(FILES) - 1
    shares = [FILES[0:3], FILES[2:5], FILES[5:last], [FILES[last], FILES[0]]]
    spawn = multiprocessing.get_context("spawn")
    start = spawn.Barrier(len(shares) + 1)
    writers = [spawn.Process(target=_import, args=(url, files, start)) for files in shares]
    for w in writers:
        w.start()
    start.wait(timeout=120)  # every writer has parsed and connected: they start together
    for w in writers:
        w.join(120)
        assert w.exitcode == 0
    store = Store.open(url)
    assert _stored(store) == expected  # FILES[0] and FILES[2] went in twice, stored once
    store.close()
    postgres_server.drop_database(url)


def test_a_writer_killed_mid_import_leaves_nothing_half_stored(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.create_database("killed")
    Store.open(url).close()
    spawn = multiprocessing.get_context("spawn")
    victim = spawn.Process(target=_import, args=(url, FILES))
    victim.start()
    # Kill it the moment it holds the write lock: its import is one transaction, under way.
    with psycopg.connect(url, autocommit=True) as watcher:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            held = watcher.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND objid = %s",
                (dialect.WRITE_LOCK & 0xFFFFFFFF,),
            ).fetchone()
            if held and held[0]:
                break
            time.sleep(0.002)
        else:
            raise AssertionError("the import never took the write lock")
    assert victim.pid is not None
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(30)
    assert victim.exitcode == -signal.SIGKILL

    # The server notices the dead client, rolls its transaction back and frees the lock: the
    # next writer is not kept waiting, and finds no trace of the killed import.
    store = Store.open(url)
    assert _stored(store) == Counter()
    store.close()
    started = time.monotonic()
    _import(url, FILES[5:7])
    assert time.monotonic() - started < 30
    store = Store.open(url)
    assert sum(_stored(store).values()) == 2
    store.close()
    postgres_server.drop_database(url)
