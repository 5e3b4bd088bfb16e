"""Benchmark: what each strategy adds to one request, next to building that request.

A synthetic session of 2 000 rounds (``bench_engine.make_round``: user inputs, 1-4 tool steps
with compressed results, final answers) is held in memory with every token count cached, as the
agent holds it. For each strategy, three things are timed per request, after one warm-up request
(the strategies keep their projected copies between requests, as in a live session):

- **projection**: ``strategy.project(history, [], None)``, how older history is sent;
- **check**: ``strategy.plan(view).compacts`` when the measure does not fire (what almost
  every request pays: the cut is worked out only when it fires);
- **cut**: ``strategy.plan(view).cut`` with the measure firing (paid at a compaction, and by
  the workbench's ✂ marker when it redraws);
- **build**: ``ContextBuilder.build`` of the projected history (what every step pays anyway).

Figures are the median of several runs (``time.perf_counter``); the overhead is
(projection + check) / build, within the same run. Run from the repository root:

    python bench/bench_strategies.py
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_engine import make_round  # noqa: E402

from engine.compaction.policy import PolicyView  # noqa: E402
from engine.compaction.strategies import STRATEGIES, get_strategy  # noqa: E402
from engine.context.builder import ContextBuilder  # noqa: E402
from engine.messages.tokens import ensure_counted  # noqa: E402
from engine.models import History  # noqa: E402
from engine.settings.config import Settings  # noqa: E402
from tools.registry import default_registry  # noqa: E402

ROUNDS = 2_000
REPEATS = 9


def median_ms(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def session(rounds: int) -> History:
    rng = random.Random(7)
    messages = []
    for n in range(1, rounds + 1):
        messages += make_round(rng, n)[0]
    for i, msg in enumerate(messages, 1):
        msg.id = i
        ensure_counted(msg)
    return History(messages=messages)


def main() -> int:
    history = session(ROUNDS)
    # A window so large that no measure fires: the check every request pays in steady state.
    big = 10**9
    settings = Settings(
        context_window=big,
        strategies={
            "reset-hint": {"context_limit": big},
            "mock-user": {"context_window": big, "trigger_tokens": big},
            "message-window": {"max_messages": big},
        },
    )
    builder = ContextBuilder(ROOT, settings, default_registry().schemas())
    print(f"{ROUNDS} rounds, {len(history.messages):,} messages in history")
    print(
        f"{'strategy':<18} {'projection':>11} {'check':>9} {'cut':>9} {'build':>9} {'overhead':>9}"
    )
    rows = []
    for name in STRATEGIES:
        strategy = get_strategy(name, settings)

        def project(strategy=strategy):  # type: ignore[no-untyped-def]
            return strategy.project(history.messages, [], None)[0]

        projected = History(messages=project())
        built = builder.build(projected, [], "")  # warm-up: counts of projected copies

        def check(strategy=strategy, total=built.total):  # type: ignore[no-untyped-def]
            return strategy.plan(PolicyView(history=history, request_tokens=total)).compacts

        def cut(strategy=strategy):  # type: ignore[no-untyped-def]
            view = PolicyView(history=history, request_tokens=10**9, last_usage=10**9)
            return strategy.plan(view).cut

        p_ms = median_ms(project)
        c_ms = median_ms(check)
        x_ms = median_ms(cut)
        b_ms = median_ms(lambda projected=projected: builder.build(projected, [], ""))
        ratio = (p_ms + c_ms) / b_ms
        rows.append((name, p_ms, c_ms, x_ms, b_ms, ratio))
        print(
            f"{name:<18} {p_ms:>9.2f}ms {c_ms:>7.2f}ms {x_ms:>7.2f}ms {b_ms:>7.2f}ms {ratio:>8.1%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
