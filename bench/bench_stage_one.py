"""A history import's worker, file by file: CPU of ``stage_one`` and of its write alone
(issue 44; a script).

Over a fixed set (a generated history, :mod:`bench.make_history`: marot with its compaction,
pomodoro, moredip with its subagent, the Codex rollout, twice), each checkout in a fresh
process, A,B interleaved ``--rounds`` times; in each, after a first pass that warms what a
worker keeps warm (the tokenizer, the scratch template), ``--passes`` passes of:

- ``stage``: :func:`~engine.recordings.history_workers.stage_one` of every file (parse and
  write into a scratch database, as a worker does);
- ``write``: the write alone, :func:`~engine.recordings.writer.write` of every file's
  sessions parsed beforehand (unpickled each pass: fresh objects, as a worker has them) into
  a scratch database, opened and committed as ``stage_one`` does.

CPU time (``time.process_time``), the minimum of the passes: on a shared machine the least
disturbed pass is the best estimate of the work.

With ``--instructions`` the same work is counted in instructions instead (callgrind, the hash
seed fixed: the same count at any load), once per checkout: for each of ``stage``, ``write``
and ``parse`` (the worker's ``_parsed`` of every file, reading and telling the format
included), the count of a process making 3 passes less that of one making 1 pass, halved
(both after the warm pass): one pass' instructions, start-up and warming left out. ``write``
is counted with the unpickling of its input taken away (counted alone the same way).

    python bench/bench_stage_one.py --before DIR [--sessions 8] [--rounds 3] [--passes 8]
    python bench/bench_stage_one.py --before DIR --instructions
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

from bench.bench_startup import instructions as counted  # noqa: E402
from bench.make_history import make_history  # noqa: E402

WORK = """
import gc, json, pickle, shutil, sys, tempfile, time
from pathlib import Path

def works(home, with_parsed):
    '''The worker's steps over the history in ``home`` by name, the scratch folder and the
    number of files; ``with_parsed``: every file parsed beforehand (for ``write``).'''
    from engine.recordings import history_workers as hw
    from engine.recordings.history import default_folders, session_files
    from engine.recordings.writer import write
    from engine.settings.config import Settings
    from engine.store import Store

    files = [str(p) for f in default_folders({"HOME": home}) for p in session_files(f.path)[0]]
    scratch = Path(tempfile.mkdtemp(prefix="bench-stage-"))
    settings = Settings()
    hw._worker(hw._Job(settings, "/ws", scratch))
    parsed = {p: pickle.dumps(hw._parsed(p)[0]) for p in files} if with_parsed else {}

    def stage():
        for path in files:
            done = hw.stage_one(path)
            assert isinstance(done, hw.Staged), done
            done.scratch.unlink()

    def parse():
        with hw._no_cycle_collection():
            for path in files:
                assert hw._parsed(path)[0] is not None

    def unpickle():
        for path in files:
            pickle.loads(parsed[path])

    def write_only():
        for path in files:
            sessions = pickle.loads(parsed[path])
            db = scratch / "write.sqlite"
            shutil.copyfile(hw._template(scratch), db)
            store = Store.open(db, durable=False, made_here=True)
            with hw._no_cycle_collection(), store.transaction():
                for n, one in enumerate(sessions):
                    write(store, one, "/ws", settings, recorded_cwd=True, source=str(n))
            store.close()
            db.unlink()

    named = {"stage": stage, "parse": parse, "write": write_only, "unpickle": unpickle}
    return named, scratch, len(files)
"""
"""What both child programs run: the steps of a worker, set up as a worker has them."""

COUNT = (
    WORK
    + """
def main():
    home, mode, passes = sys.argv[1], sys.argv[2], int(sys.argv[3])
    named, scratch, _ = works(home, mode in ("write", "unpickle"))
    work = named[mode]
    work()  # warm: the tokenizer's cache, the template, the caches
    for _ in range(passes):
        gc.collect()
        work()
    shutil.rmtree(scratch, ignore_errors=True)

if __name__ == "__main__":
    main()
"""
)

MEASURE = (
    WORK
    + """
def main():
    home, passes = sys.argv[1], int(sys.argv[2])
    named, scratch, files = works(home, True)

    def cpu(work):
        gc.collect()
        start = time.process_time()
        work()
        return time.process_time() - start

    named["stage"](), named["write"]()  # warm: the tokenizer, the template, the caches
    out = {"stage": min(cpu(named["stage"]) for _ in range(passes)),
           "write": min(cpu(named["write"]) for _ in range(passes)), "files": files}
    shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(out))

if __name__ == "__main__":
    main()
"""
)


def measure(code: Path, home: Path, passes: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(home), str(passes)],
        cwd=code,
        env={**os.environ, "PYTHONPATH": str(code)},
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.splitlines()[-1]))


def instructions(code: Path, home: Path, mode: str, passes: int) -> int:
    """The instructions of a process doing ``passes`` passes of ``mode`` (callgrind)."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    args = [sys.executable, "-c", COUNT, str(home), mode, str(passes)]
    return counted(args, env, code, None)


def one_pass(code: Path, home: Path, mode: str) -> float:
    """One pass' instructions: (3 passes - 1 pass) / 2."""
    return (instructions(code, home, mode, 3) - instructions(code, home, mode, 1)) / 2


def counts(code: Path, home: Path, name: str) -> dict[str, float]:
    """One pass' instructions of each measure, for one checkout (printed as they come)."""
    got = {mode: one_pass(code, home, mode) for mode in ("stage", "parse", "write", "unpickle")}
    got["write"] -= got.pop("unpickle")
    print(f"{name}: " + json.dumps({k: round(v / 1e6, 1) for k, v in got.items()}), flush=True)
    return got


def count(before: Path, home: Path) -> None:
    """The instruction table of ``--instructions``."""
    figures = {
        name: counts(code, home, name)
        for name, code in (("before", before.resolve()), ("now", ROOT))
    }
    print("| instructions a pass | before | now | change |")
    print("|---|---:|---:|---:|")
    for key in ("stage", "parse", "write"):
        old, new = figures["before"][key], figures["now"][key]
        print(f"| {key} | {old / 1e6:,.1f} M | {new / 1e6:,.1f} M | {new / old - 1:+.1%} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout to compare")
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=8)
    parser.add_argument("--instructions", action="store_true", help="count with callgrind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        make_history(home, args.sessions)
        if args.instructions:
            count(args.before, home)
            return 0
        runs: dict[str, list[dict[str, float]]] = {"before": [], "now": []}
        for n in range(args.rounds):
            for name, code in (("before", args.before.resolve()), ("now", ROOT)):
                runs[name].append(measure(code, home, args.passes))
            print(f"round {n + 1}: " + json.dumps({k: v[-1] for k, v in runs.items()}))
    print("| CPU, min of all passes | before | now | change |")
    print("|---|---:|---:|---:|")
    for key in ("stage", "write"):
        before = min(r[key] for r in runs["before"])
        now = min(r[key] for r in runs["now"])
        print(f"| {key} | {before * 1000:.0f} ms | {now * 1000:.0f} ms | {now / before - 1:+.0%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
