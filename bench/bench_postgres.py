"""Benchmark of the store on PostgreSQL against SQLite (a script, not a test).

Stores the corpus (tests/data/corpus: eight sessions, 4.3 MB) 20 times into a fresh database
of each kind — an SQLite file, and a database on a PostgreSQL server this script starts on
127.0.0.1 (Debian's binaries, as the tests do) — and reports the median of ``--repeats`` runs
of each and their ratio. Only the store's work is timed: each file is parsed again before each
copy (a stored import changes its parsed rounds) with the clock stopped; each copy is one
transaction, as ``ctxscope import`` writes it (the "stored before" check is left out, so that
all 20 copies are stored). Run from the repository root:

    python bench/bench_postgres.py [--repeats N] [--copies N] [--write]

``--write`` puts the figures into docs/benchmarks.md between its ``postgres-bench`` markers.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.recordings.importing import parse_path  # noqa: E402
from engine.recordings.writer import write  # noqa: E402
from engine.settings.config import Settings  # noqa: E402
from engine.store import Store  # noqa: E402
from tests.postgres_server import PostgresServer, binaries  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "corpus"
DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- postgres-bench:start -->", "<!-- postgres-bench:end -->"


QUERIES = ("beads epic", "commit", "timer", "error", "test", "git push", "file", "retry")
"""Recall's queries, each asked of every session with an archive."""


def recall_all(store: Store) -> float:
    """Seconds for every query of :data:`QUERIES` in every session (Recall's 5 best each)."""
    sessions = [i.session.id for i in store.list_sessions() if i.compactions]
    started = time.perf_counter()
    for sid in sessions:
        assert sid is not None
        for query in QUERIES:
            store.search_archive(sid, query)
    return time.perf_counter() - started


def store_copies(target: Path | str, copies: int) -> tuple[float, int, float]:
    """Seconds spent storing ``copies`` copies of the corpus into ``target``; sessions stored;
    seconds of :func:`recall_all` on them."""
    settings = Settings()
    store = Store.open(target)
    spent = 0.0
    for _ in range(copies):
        parsed = parse_path(CORPUS)
        started = time.perf_counter()
        with store.transaction():
            for _path, one in parsed.files:
                write(store, one, "/w", settings)
        spent += time.perf_counter() - started
    stored = len(store.list_sessions())
    recall = recall_all(store)
    store.close()
    return spent, stored, recall


def median_of(runs: int, run: Callable[[], tuple[float, int, float]]) -> tuple[float, int, float]:
    results = [run() for _ in range(runs)]
    return (
        statistics.median(r[0] for r in results),
        results[-1][1],
        statistics.median(r[2] for r in results),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    found = binaries()
    if found is None:
        print("bench_postgres: no PostgreSQL server binaries; skipped", file=sys.stderr)
        return 0
    server = PostgresServer(found)
    server.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            counter = iter(range(1_000))
            lite, sessions, lite_recall = median_of(
                args.repeats,
                lambda: store_copies(Path(tmp) / f"b{next(counter)}.db", args.copies),
            )
            pg, pg_sessions, pg_recall = median_of(
                args.repeats, lambda: store_copies(server.create_database("bench"), args.copies)
            )
    finally:
        server.stop()
    assert sessions == pg_sessions
    table = "\n".join(
        [
            f"| median of {args.repeats} | store the corpus {args.copies}× ({sessions} "
            f"sessions), s | Recall: {len(QUERIES)} queries in each session with an "
            "archive, ms |",
            "|---|---:|---:|",
            f"| SQLite (a file, WAL) | {lite:.2f} | {lite_recall * 1000:.0f} |",
            f"| PostgreSQL 15 (127.0.0.1, same machine) | {pg:.2f} | {pg_recall * 1000:.0f} |",
            f"| ratio PostgreSQL / SQLite | **{pg / lite:.1f}×** | "
            f"**{pg_recall / lite_recall:.1f}×** |",
        ]
    )
    print(table)
    print(f"({platform.python_implementation()} {platform.python_version()}, {platform.machine()})")
    if args.write:
        text = DOC.read_text()
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        DOC.write_text(f"{head}{START}\n{table}\n{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
