"""What bounds the history import on two cores (issue 44; a script, not a test).

The issue asks the history import for at least 1/3 of ``json.loads``' rate on this 2-core
machine (:mod:`bench.bench_history_cores` measures it: 0.12). This script splits the import's
work into the parts that bound it, each in CPU seconds against ``json.loads`` of the same
lines in the same process and run, over a generated history (:mod:`bench.make_history`):

- **decode**: ``json.loads`` of every line of every file (the floor's own work);
- **parse**: what a worker's reading does (``parse_sessions``: reading, telling the format, the
  reader, its companions), decoding included;
- **stage**: what a worker does for a new file (:func:`stage_one`: the parse, the token counts,
  and the rows written into a scratch database);
- **copy**: what the one writer does with them (:func:`engine.store.staged.copy_staged` of every
  scratch file into a fresh database, eight to a transaction as the import does): SQLite's own
  work of storing the rows (their pages, their indexes, the search index's tokenizing), no
  Python per row; and **unindexed**, the same copy without the archive's search index (what
  the index's tokenizing costs the writer).

Only one process can write an SQLite database, so **copy** cannot be spread over the cores,
and the rows cannot be stored without decoding the lines. With the floor's time on two
processes at best ``decode / 2``, no import that stores these rows can do better than
``(decode / 2) / max(copy, (decode + copy) / 2)`` of its rate, whatever its Python costs;
and at 1/3 the import has ``3 × decode`` of CPU on two cores, of which everything but the
decoding and the copy — reading the records into messages, counting tokens, making the
rows, handing them over — must fit in ``2 × decode − copy``. Both are printed, per record.

CPU time (``time.process_time``) in one fresh process with the cycle collector off during
each part (as in a worker), the least of ``--passes`` passes of each part.

    python bench/bench_history_bound.py --sessions 200 [--passes 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.make_history import make_history  # noqa: E402

PARTS = """
import gc, json, shutil, sys, tempfile, time
from pathlib import Path

import engine.recordings.history_workers as workers
from engine.recordings.importing import parse_sessions
from engine.settings.config import Settings
from engine.store import Store, staged

files = sorted(str(p) for p in Path(sys.argv[1]).rglob("*.jsonl"))
passes = int(sys.argv[2])
work = Path(tempfile.mkdtemp())
workers._job = workers._Job(Settings(), str(work), work)


def cpu(run):
    best = None
    for _ in range(passes):
        gc.collect()
        gc.disable()
        start = time.process_time()
        made = run()
        spent = time.process_time() - start
        gc.enable()
        best = spent if best is None else min(best, spent)
    return best, made


def decode():
    records = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    json.loads(line)
                    records += 1
    return records


def parse():
    for path in files:
        parse_sessions(Path(path))


def stage():
    return [workers.stage_one(path) for path in files]


workers.stage_one(files[0])  # what a worker keeps warm: the tokenizer, the scratch template
times = {}
times["decode"], records = cpu(decode)
times["parse"], _ = cpu(parse)
times["stage"], answers = cpu(stage)
scratches = [a.scratch for a in answers if isinstance(a, workers.Staged)]


def copy():
    store = Store.open(work / f"user-{time.monotonic_ns()}.db")
    for first in range(0, len(scratches), staged.MOST_ATTACHED):
        batch = scratches[first : first + staged.MOST_ATTACHED]
        with staged.attached(store.db, batch) as names, store.transaction():
            for name in names:
                staged.copy_staged(store.db, name)
    store.close()


times["copy"], _ = cpu(copy)
index = staged._copy_index
staged._copy_index = lambda *a: None  # the archive's search index left out: what it costs
times["unindexed"], _ = cpu(copy)
staged._copy_index = index
shutil.rmtree(work, ignore_errors=True)
size = sum(Path(p).stat().st_size for p in files)
print(json.dumps({"times": times, "records": records, "files": len(files), "bytes": size,
                  "staged": len(scratches)}))
"""


def _bound(decode: float, copy: float) -> float:
    """The best rate against the floor's of an import whose one writer's copy takes ``copy``
    and whose Python costs nothing, on two cores (the module's note)."""
    return (decode / 2) / max(copy, (decode + copy) / 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--passes", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-bound-") as tmp:
        home = Path(tmp) / "home"
        make_history(home, args.sessions)
        out = subprocess.run(
            [sys.executable, "-c", PARTS, str(home), str(args.passes)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            check=True,
        )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    t, records = got["times"], got["records"]
    decode, copy = t["decode"], t["copy"]
    bound = _bound(decode, copy)
    budget = 2 * decode - copy
    python_now = t["stage"] - decode
    load = os.getloadavg()[0]
    print(
        f"{got['files']} files ({args.sessions} sessions), {got['bytes'] / 1e6:.0f} MB, "
        f"{records:,} records; least of {args.passes} passes; load average {load:.1f}\n"
    )
    print("| part | CPU | × json.loads | µs a record |")
    print("|---|---:|---:|---:|")
    for name in ("decode", "parse", "stage", "copy", "unindexed"):
        value = t[name]
        print(f"| {name} | {value:.2f} s | {value / decode:.2f} | {value / records * 1e6:.1f} |")
    print(
        f"\nbest rate of any import storing these rows, its Python free: {bound:.2f} of "
        f"json.loads' on 2 cores ({_bound(decode, t['unindexed']):.2f} without the search "
        f"index)\nat 1/3, CPU left for all but decoding and the copy: "
        f"{budget:.2f} s ({budget / records * 1e6:.1f} µs a record); a worker's now "
        f"(stage − decode): {python_now:.2f} s ({python_now / records * 1e6:.1f} µs a "
        f"record, {python_now / budget:.1f}× that)"
    )


if __name__ == "__main__":
    main()
