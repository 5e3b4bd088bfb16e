"""``sessions`` and ``report`` over many sessions, now and before (issue 44; a script).

Writes N sessions (the corpus's two small recordings stored again and again,
:func:`bench.bench_history.many_sessions`) into one database, then times ``ctxscope sessions
--json`` and ``report --json`` on it, each a fresh process, A,B interleaved with the baseline
``python -c "import peewee, sqlite3"`` and, with ``--before DIR``, the same commands from
another checkout (``git archive COMMIT | tar -x -C DIR``) with this venv; medians. Before
issue 44 every open read the whole file (``PRAGMA quick_check``) and ``sessions`` built a
price per session.

    python bench/bench_listing.py --sessions 1000 [--runs 5] [--before DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_history import many_sessions  # noqa: E402

BASELINE = "import peewee, sqlite3"


def timed(args: list[str], code: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=code, env={**env, "PYTHONPATH": str(code)}, check=True,
                   capture_output=True)  # fmt: skip
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", type=Path)
    args = parser.parse_args()
    codes = [("now", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    py = sys.executable
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        db = tmp / "many.sqlite"
        stored = many_sessions(db, args.sessions)
        size = db.stat().st_size / 1e6
        pristine = tmp / "pristine.sqlite"  # as written: no figures kept yet
        shutil.copyfile(db, pristine)
        dbs = {"now": db}
        for label, code in codes[1:]:  # another checkout writes its own (its own schema)
            dbs[label] = tmp / f"many-{label}.sqlite"
            write = (
                "import sys; from pathlib import Path; from bench.bench_history import "
                "many_sessions; many_sessions(Path(sys.argv[1]), int(sys.argv[2]))"
            )
            made = [sys.executable, "-c", write, str(dbs[label]), str(args.sessions)]
            subprocess.run(made, cwd=code, env={**os.environ, "PYTHONPATH": str(code)}, check=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        env["HOME"] = str(tmp)
        commands = [
            (f"`{' '.join(c)}`, {label}", [py, "-m", "cli.main", *c, "--db", str(dbs[label])], code)
            for c in (["sessions", "--json"], ["report", "--json"])
            for label, code in codes
        ]
        base = [py, "-c", BASELINE]
        for _, command, code in commands:  # untimed: bytecode, the file in the page cache, and
            timed(command, code, env)  # the figures a listing keeps (made once after a write)
        timed(base, ROOT, env)
        times: dict[str, list[float]] = {label: [] for label, _, _ in commands}
        floor: list[float] = []
        loads = [os.getloadavg()[0]]
        for _ in range(args.runs):
            floor.append(timed(base, ROOT, env))
            for label, command, code in commands:
                times[label].append(timed(command, code, env))
        # the first listing after the sessions were written: it makes and keeps their figures
        first: list[float] = []
        for n in range(min(args.runs, 3)):
            fresh = tmp / f"first-{n}.sqlite"
            shutil.copyfile(pristine, fresh)
            first.append(timed([py, "-m", "cli.main", "sessions", "--json", "--db", str(fresh)],
                               ROOT, env))  # fmt: skip
            fresh.unlink()
        loads.append(os.getloadavg()[0])
    b = statistics.median(floor)
    print(
        f"{stored:,} sessions, a {size:.0f} MB database; medians of {args.runs} interleaved "
        f"runs; load average (1 min) {min(loads):.1f}–{max(loads):.1f}\n"
    )
    print(f'| command | time | × `python -c "{BASELINE}"` ({b * 1000:.0f} ms) |')
    print("|---|---:|---:|")
    for label, runs in times.items():
        t = statistics.median(runs)
        print(f"| {label} | {t * 1000:.0f} ms | {t / b:.2f}× |")
    t = statistics.median(first)
    print(f"| `sessions --json`, now, the first listing after the write | {t * 1000:.0f} ms "
          f"| {t / b:.2f}× |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
