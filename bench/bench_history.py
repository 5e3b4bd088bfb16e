"""Benchmark of importing a whole history and reporting on it (a script, not a test).

Makes a history from the corpus (bench/make_history.py: copies with fresh ids and shifted
times, under a temporary HOME), then measures, in one run, as ratios against a baseline
measured in the same run:

- **import rate against json.loads**: ``ctxscope import`` (no path: every folder, files parsed
  on every core, one writer) against ``json.loads`` over the same lines, on one core and on
  every core (the same pool of processes, each loading whole files);
- **a second import of the unchanged history** against the first (target ≤ 2 %);
- **``report --json`` against one ``sessions --json``** over the same database (each a fresh
  process, start-up included in both).

    python bench/bench_history.py [--sessions N] [--write]

``--write`` puts the figures into docs/benchmarks.md (between the history-bench markers).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.make_history import make_history  # noqa: E402
from engine.recordings.history import default_folders, default_jobs, import_history  # noqa: E402
from engine.settings.config import Settings  # noqa: E402
from engine.store import Store  # noqa: E402

DOCS = ROOT / "docs" / "benchmarks.md"
SMALL_CLAUDE = "yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl"
SMALL_CODEX = "yoavf__ai-sessions__codex-pomodor-timer.jsonl"
START, END = "<!-- history-bench:start -->", "<!-- history-bench:end -->"


def load_file(path: str) -> int:
    """``json.loads`` of every line of one file; the records read."""
    n = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                json.loads(line)
                n += 1
    return n


def files_under(home: Path) -> list[str]:
    return sorted(str(p) for p in home.rglob("*.jsonl"))


def json_rate(files: list[str], jobs: int) -> float:
    """Seconds to json.loads every line, on ``jobs`` processes (1: here)."""
    start = time.perf_counter()
    if jobs == 1:
        for f in files:
            load_file(f)
    else:
        with ProcessPoolExecutor(jobs, mp_context=get_context("forkserver")) as pool:
            list(pool.map(load_file, files, chunksize=1))
    return time.perf_counter() - start


def ctxscope(home: Path, db: Path, *argv: str) -> tuple[float, str]:
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    env.pop("CODEX_HOME", None)
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "cli.main", *argv, "--db", str(db)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=home,
    )
    return time.perf_counter() - start, run.stdout


def bare_start() -> float:
    """The per-command budget's baseline (issue 44): ``python -c "import peewee, sqlite3"``,
    the median of three."""
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import peewee, sqlite3"], check=True)
        times.append(time.perf_counter() - start)
    return sorted(times)[1]


def imports(home: Path, db: Path, tmp: str) -> tuple[float, float, float]:
    """The first and second import in this process (no start-up: the ratio the issue asks
    for), and a second one as a command (start-up included)."""
    folders = default_folders({"HOME": str(home)})
    store = Store.open(db)
    settings = Settings()
    start = time.perf_counter()
    done = import_history(store, folders, tmp, settings)
    first = time.perf_counter() - start
    start = time.perf_counter()
    again = import_history(store, folders, tmp, settings)
    second = time.perf_counter() - start
    store.close()
    assert again.states["unchanged"] == sum(done.states.values()), again.states
    cli_second, _ = ctxscope(home, db, "import", "--json")
    return first, second, cli_second


def many_sessions(db: Path, count: int) -> int:
    """``count`` sessions written from the corpus's small recordings (parsed once, stored
    again and again, each with its usage, rounds and observations): the report's scale."""
    from engine.recordings.importing import parse_sessions
    from engine.recordings.writer import write

    sources = [ROOT / "tests" / "data" / "corpus" / name for name in (SMALL_CLAUDE, SMALL_CODEX)]
    parsed = [parse_sessions(p)[0] for p in sources]
    store = Store.open(db)
    settings = Settings()
    with store.transaction():
        for n in range(count):
            write(store, parsed[n % len(parsed)], "/bench", settings)
    sessions = len(store.list_sessions())
    store.close()
    return sessions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=24)
    parser.add_argument(
        "--report-sessions", type=int, default=1000, help="sessions for the report's ratio"
    )
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    jobs = default_jobs()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        size = make_history(home, args.sessions)
        files = files_under(home)
        db = Path(tmp) / "db.sqlite"
        one_core = json_rate(files, 1)
        all_cores = json_rate(files, jobs)
        first, second, cli_second = imports(home, db, tmp)
        bare = bare_start()
        sessions_t, out = ctxscope(home, db, "sessions", "--json")
        stored = len(json.loads(out))
        report_t, _ = ctxscope(home, db, "report", "--json")
        bare = (bare + bare_start()) / 2
        many = Path(tmp) / "many.sqlite"
        stored_many = many_sessions(many, args.report_sessions)
        many_sessions_t, _ = ctxscope(home, many, "sessions", "--json")
        many_report_t, _ = ctxscope(home, many, "report", "--json")
        many_by_day_t, _ = ctxscope(home, many, "report", "--by", "day")
    mb = size / 1e6
    rows = [
        f"{args.sessions} session files ({stored} sessions with subagents), {mb:.1f} MB, "
        f"{jobs} cores; {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}; {time.strftime('%Y-%m-%d')}",
        "",
        "| measure | seconds | MB/s | ratio |",
        "|---|---|---|---|",
        f"| json.loads, one core | {one_core:.2f} | {mb / one_core:.1f} | |",
        f"| json.loads, {jobs} processes (pool start-up included) | {all_cores:.2f} | "
        f"{mb / all_cores:.1f} | |",
        f"| first import (no path; in process) | {first:.2f} | {mb / first:.1f} | "
        f"{all_cores / first:.3f} of json.loads on {jobs} processes, "
        f"{one_core / first:.3f} of one core |",
        f"| second import, unchanged (in process) | {second:.3f} | | {100 * second / first:.2f} "
        "% of the first (target ≤ 2 %) |",
        f"| second `ctxscope import`, unchanged (a process) | {cli_second:.2f} | | start-up "
        "included |",
        f'| `python -c "import peewee, sqlite3"` (the commands\' baseline) | {bare:.2f} | | |',
        f"| `sessions --json` | {sessions_t:.2f} | | {sessions_t / bare:.1f}× the baseline |",
        f"| `report --json` | {report_t:.2f} | | {report_t / sessions_t:.2f}× `sessions --json`, "
        f"{report_t / bare:.1f}× the baseline |",
    ]
    rows += [
        f"| `sessions --json`, {stored_many:,} sessions | {many_sessions_t:.2f} | | |",
        f"| `report --json`, {stored_many:,} sessions | {many_report_t:.2f} | | "
        f"{many_report_t / many_sessions_t:.2f}× `sessions --json` |",
        f"| `report --by day`, {stored_many:,} sessions | {many_by_day_t:.2f} | | "
        f"{many_by_day_t / many_sessions_t:.2f}× `sessions --json` |",
    ]
    text = "\n".join(rows)
    print(text)
    if args.write:
        doc = DOCS.read_text(encoding="utf-8")
        head, rest = doc.split(START, 1)
        _, tail = rest.split(END, 1)
        DOCS.write_text(f"{head}{START}\n{text}\n{END}{tail}", encoding="utf-8")


if __name__ == "__main__":
    main()
