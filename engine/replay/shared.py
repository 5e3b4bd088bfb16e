"""What :func:`engine.replay.parallel.replay_strategies` and its worker processes
(:mod:`engine.replay.worker`) share: the garbage collector's thresholds while replays run, and
the exception a cancelled replay ends with. Its own module so that neither imports the other
(the parent imports the worker only when it forks)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

GC_THRESHOLDS = (20_000, 50, 100)
"""The cyclic garbage collector's thresholds while replays run (Python's are 700, 10, 10): a
replay allocates millions of short-lived objects, almost none of them in cycles, and a
collection of the young generation every 700 allocations took about a sixth of a replay's
time — six strategies side by side on 2 000 calls: 20.8 s with Python's thresholds, 16.9 s
with these (median of 3 each; ``gc.freeze()`` alone: 18.4 s)."""


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the body with :data:`GC_THRESHOLDS`, then put the thresholds back as they were."""
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


class ReplayCancelled(Exception):
    """The replays were cancelled (the compare screen was closed)."""
