"""Benchmark: replaying stored sessions under every strategy (``engine.replay.runner``).

Synthetic sessions of about 500, 1 000 and 2 000 recorded model calls are stored with the
rounds of ``bench_engine.make_round`` (user inputs, 1-4 tool steps with full observations and
compressed history copies, final answers). Timed, median of several runs:

- one ``replay`` call per strategy and session (the whole call: the scratch database, the
  agent loop, the cache model and recall; with the garbage collector's thresholds that
  ``ctxscope replay`` sets, ``engine.replay.parallel.fewer_collections``); the median time
  per replayed step, per strategy and for the six together (target: the 2 000-step figure
  ≤ 1.5× the 500-step one: flat per step); the six-strategy total is the sum of the six
  medians;
- the six side by side as ``ctxscope replay ID`` runs them (``engine.replay.parallel``: one
  process per core, results identical), median wall time of the whole call, worker start-up
  included;
- one ``ctxscope context ID --json`` of the 2 000-step session, as a user runs it (a process:
  start-up, store, request); target: the whole six-strategy replay < 20× that. Timed with
  ctxscope's bytecode compiled, as installed (``PYTHONPYCACHEPREFIX`` in a temporary folder,
  filled by one untimed run), and from source (``PYTHONDONTWRITEBYTECODE=1``: every ctxscope
  module compiled at each start, how the earlier figures were taken; see bench_startup.py).

Run from the repository root: ``python bench/bench_replay.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_engine import make_round  # noqa: E402

from engine.compaction.strategies import STRATEGIES  # noqa: E402
from engine.context.history import HistoryManager  # noqa: E402
from engine.messages.tokens import count_text  # noqa: E402
from engine.models import Observation, RoundStatus  # noqa: E402
from engine.replay.parallel import default_jobs, fewer_collections, replay_strategies  # noqa: E402
from engine.replay.runner import replay  # noqa: E402
from engine.settings.config import Settings  # noqa: E402
from engine.store import Store  # noqa: E402

SIZES = (500, 1_000, 2_000)


def store_session(db: Path, steps: int, workspace: Path) -> int:
    """A stored session of about ``steps`` recorded model calls; returns its id."""
    store = Store.open(db)
    settings = Settings()
    session = store.create_session(str(workspace), f"{steps} steps")
    assert session.id is not None
    manager = HistoryManager(store, session.id, settings)
    rng = random.Random(steps)
    calls = 0
    n = 0
    while calls < steps:
        n += 1
        messages, scratch = make_round(rng, n)
        rnd, _ = manager.open_round(messages[0].content)
        results = {r.tool_use_id: r for s in scratch for r in s.results}
        for msg in messages[1:]:
            stored = manager.append(rnd.index, msg.model_copy(update={"id": None}))
            if msg.role == "assistant":
                calls += 1
            if msg.role == "tool" and msg.meta.tool_use_id in results:
                full = results[msg.meta.tool_use_id]
                store.add_observation(
                    Observation(
                        session_id=session.id,
                        round_index=rnd.index,
                        step=msg.meta.step or 0,
                        tool_use_id=full.tool_use_id,
                        tool_name=full.tool_name,
                        result={"status": "success", "text": full.text},
                        text=full.text,
                        tokens_full=count_text(full.text),
                        tokens_compressed=stored.tokens or 0,
                        message_id=stored.id,
                    )
                )
        manager.finish_round(rnd.index, RoundStatus.FINISHED)
    store.close()
    return session.id


def median_s(fn: object, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def timed_replays(store: Store, sid: int, name: str, settings: Settings, workspace: Path,
                  repeats: int) -> tuple[float, int]:  # fmt: skip
    """The median wall time of ``repeats`` replays (each a call of ``replay``, scratch database
    included, with the garbage collector's thresholds ``replay_strategies`` sets), and the
    steps replayed."""
    times, steps = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        with fewer_collections():
            result = replay(store, sid, name, settings, workspace)
        times.append(time.perf_counter() - t0)
        steps = len(result.steps)
    return statistics.median(times), steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    settings = Settings()
    per_step: dict[int, dict[str, float]] = {}
    totals: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        dbs = {}
        for size in SIZES:
            db = Path(tmp) / f"s{size}.db"
            dbs[size] = (db, store_session(db, size, workspace))
        for size in SIZES:
            db, sid = dbs[size]
            store = Store.open(db)
            per_step[size] = {}
            steps = 0
            for name in STRATEGIES:
                seconds, steps = timed_replays(store, sid, name, settings, workspace, args.repeats)
                per_step[size][name] = seconds / steps * 1000
            totals[size] = sum(per_step[size].values()) * steps / 1000
            store.close()
            print(f"{size} steps: six-strategy replay {totals[size]:.1f} s", flush=True)

        db, sid = dbs[2_000]
        names, jobs = list(STRATEGIES), default_jobs(len(STRATEGIES))
        side_by_side = median_s(
            lambda: replay_strategies(db, sid, names, settings, workspace, jobs=jobs),
            args.repeats,
        )
        cmd = [sys.executable, "-m", "cli.main", "context", str(sid), "--json", "--db", str(db)]
        compiled = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        compiled["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        from_source = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        from_source.pop("PYTHONPYCACHEPREFIX", None)
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT, env=compiled)  # untimed
        context_s, source_s = (
            median_s(
                lambda env=env: subprocess.run(
                    cmd, check=True, capture_output=True, cwd=ROOT, env=env
                ),
                args.repeats,
            )
            for env in (compiled, from_source)
        )

    print()
    print("| strategy | ms per step, 500 | 1 000 | 2 000 | 2 000 ÷ 500 |")
    print("|---|---:|---:|---:|---:|")
    for name in STRATEGIES:
        a, b, c = (per_step[s][name] for s in SIZES)
        print(f"| {name} | {a:.2f} | {b:.2f} | {c:.2f} | {c / a:.2f}× |")
    six = [sum(per_step[s].values()) for s in SIZES]
    print(f"| all six | {six[0]:.2f} | {six[1]:.2f} | {six[2]:.2f} | {six[2] / six[0]:.2f}× |")
    print()
    print(
        f"six-strategy replay of the 2 000-step session: {totals[2_000]:.1f} s; one `ctxscope "
        f"context --json` of it: {context_s:.2f} s compiled, ratio "
        f"{totals[2_000] / context_s:.1f}× (target < 20×); {source_s:.2f} s from source, "
        f"ratio {totals[2_000] / source_s:.1f}×"
    )
    print(
        f"side by side ({jobs} processes, as `ctxscope replay` runs them): {side_by_side:.1f} s, "
        f"ratio {side_by_side / context_s:.1f}× compiled, "
        f"{side_by_side / source_s:.1f}× from source"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
