"""The readers' CPU per byte on a generated history, against ``json.loads`` of the same lines
(issue 44, the parse side; a script).

Makes a history of N sessions from the corpus (:mod:`bench.make_history`: marot, pomodoro,
moredip with its subagent and the Codex rollout, in turn), then, in fresh processes, A,B
interleaved for ``--runs`` rounds: the CPU time (``time.process_time``, the cycle collector
off as in a worker, the minimum of ``--passes`` passes after one warm pass) of parsing each
session file as the history import's workers do (``parse_sessions``: reading, telling the
format, the reader, its companions), summed by the corpus file it copies, and of
``json.loads`` of every line of every file (the floor). With ``--before DIR`` the same from
another checkout (``git archive COMMIT | tar -x -C DIR``) with this venv. CPU time, not wall
time: the machine is shared, and the minimum of each side over the rounds is the figure.

    python bench/bench_history_parse.py --sessions 8 [--runs 5] [--passes 7] [--before DIR]
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

MEASURE = """
import gc, json, sys, time
from collections import defaultdict
from pathlib import Path
from engine.recordings.importing import parse_sessions

root, passes = Path(sys.argv[1]), int(sys.argv[2])
files = sorted(p for p in root.rglob("*.jsonl") if "subagents" not in p.parts)

def kind(path):
    if ".codex" in path.parts:
        return "codex"
    size = path.stat().st_size
    return "marot" if size > 1_000_000 else "pomodoro" if size > 100_000 else "moredip"

groups = defaultdict(list)
for path in files:
    groups[kind(path)].append(path)
gc.disable()
for path in files:
    parse_sessions(path)
out = {}
for name, paths in sorted(groups.items()):
    best = float("inf")
    for _ in range(passes):
        start = time.process_time()
        for path in paths:
            parse_sessions(path)
        best = min(best, time.process_time() - start)
    out[name] = best
lines = [l for p in sorted(root.rglob("*.jsonl")) for l in p.read_text().splitlines() if l.strip()]
best = float("inf")
for _ in range(passes):
    start = time.process_time()
    for line in lines:
        json.loads(line)
    best = min(best, time.process_time() - start)
out["json.loads"] = best
print(json.dumps(out))
"""


def measure(checkout: Path, home: Path, passes: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(home), str(passes)],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--passes", type=int, default=7)
    parser.add_argument("--before", type=Path, help="a checkout of the code before")
    args = parser.parse_args()
    sides = {"now": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    best: dict[str, dict[str, float]] = {side: {} for side in sides}
    with tempfile.TemporaryDirectory(prefix="ctxscope-parse-") as tmp:
        home = Path(tmp)
        size = make_history(home, args.sessions)
        for _ in range(args.runs):
            for side, checkout in sides.items():
                for name, seconds in measure(checkout, home, args.passes).items():
                    best[side][name] = min(best[side].get(name, seconds), seconds)
    print(f"{args.sessions} sessions, {size / 1e6:.1f} MB; CPU ms, minimum of {args.runs} runs")
    names = sorted(next(iter(best.values())))
    print("| side | " + " | ".join(names) + " | parse, all | ÷ json.loads |")
    print("|---|" + "---:|" * (len(names) + 2))
    for side, figures in best.items():
        parse = sum(v for k, v in figures.items() if k != "json.loads")
        cells = " | ".join(f"{figures[n] * 1000:.1f}" for n in names)
        ratio = parse / figures["json.loads"]
        print(f"| {side} | {cells} | {parse * 1000:.1f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
