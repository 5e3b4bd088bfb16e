"""What runs in a worker process of :mod:`engine.replay.parallel`: one strategy's replay.

The forkserver imports this module before it forks any worker, so everything a replay needs is
loaded once and shared by every worker it forks: the replay's modules, and the tokenizer's
tables (reading them takes a few hundred milliseconds, which each worker would otherwise pay
at its first count). A worker does nothing but replay, so it collects garbage less often, as
:func:`engine.replay.shared.fewer_collections` explains.
"""

from __future__ import annotations

import gc
import signal
from pathlib import Path
from typing import Any

import engine.compaction.strategies  # noqa: F401  (imported to be forked from)
import engine.session  # noqa: F401
from engine.messages.tokens import encoding
from engine.replay.runner import ReplayResult, replay
from engine.replay.shared import GC_THRESHOLDS, ReplayCancelled
from engine.settings.config import Settings
from engine.store import Store

encoding()
gc.set_threshold(*GC_THRESHOLDS)

PROGRESS_EVERY = 20
"""A worker says where it is every this many steps, and at its last (each is a message
between processes)."""


_worker: dict[str, Any] = {}
"""This worker's progress queue and stop flag (set by :func:`start`)."""


def start(queue: Any, stop: Any) -> None:
    """The pool's initializer: the queue progress goes to, the flag that stops a replay.

    Ctrl+C in a terminal signals every process of its group, the workers too: they ignore it
    and the parent, which catches it, stops them through ``stop`` (a worker interrupted on
    its own printed a 20-line traceback from wherever it was, tiktoken say)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker.update(queue=queue, stop=stop)


def replay_one(
    db: Path | str, session_id: int, name: str, settings: Settings, workspace: Path
) -> ReplayResult:
    """``name``'s replay of ``session_id`` in the database at ``db``, opened read-only."""
    queue, stop = _worker["queue"], _worker["stop"]

    def progress(step: int, total: int) -> None:
        if stop.is_set():
            raise ReplayCancelled
        if step % PROGRESS_EVERY == 0 or step == total:
            queue.put((name, step, total))

    store = Store.open(db, read_only=True)
    try:
        return replay(store, session_id, name, settings, workspace, on_step=progress)
    finally:
        store.close()
