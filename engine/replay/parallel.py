"""Several strategies replayed side by side: one process per strategy, up to ``jobs`` at once.

Each strategy's replay (:func:`engine.replay.runner.replay`) is independent of the others —
its own scratch database, its own agent, the same recorded session read — and runs on one
core, so comparing six strategies on a machine with several cores need not take six times
one: ``ctxscope replay --strategy all`` and the workbench's compare screen hand the
strategies to a pool of processes, each opening the database read-only, and take the results
back in the order asked for. The results are the ones a replay in this process gives (the
tests compare them figure by figure).

Processes, not threads: a replay is pure-Python work and the interpreter runs one thread at a
time. They start from a *forkserver* that imports the replay's modules once — a fresh
interpreter, so it is safe from the workbench's threads, and each worker forks from it ready
to work instead of importing everything again (about a second each from source).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

from engine.compaction.strategies import replay_order
from engine.replay.runner import ReplayResult, replay
from engine.replay.shared import GC_THRESHOLDS as GC_THRESHOLDS
from engine.replay.shared import ReplayCancelled as ReplayCancelled
from engine.replay.shared import fewer_collections as fewer_collections
from engine.settings.config import Settings
from engine.store import Store

Progress = Callable[[str, int, int], None]
"""``(strategy, step, total)``, as each request of a replay is sent."""

PRELOAD = ["engine.replay.worker"]
"""What the forkserver imports before it forks a worker: the replay and the tokenizer."""


def default_jobs(strategies: int) -> int:
    """One process per core this process may use, no more than there are strategies."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, strategies))


def replay_strategies(
    db: Path | str,
    session_id: int,
    names: Sequence[str],
    settings: Settings,
    workspace: Path,
    *,
    jobs: int = 1,
    on_step: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> list[ReplayResult]:
    """Replay ``session_id`` of the database at ``db`` (read only) under each of ``names``,
    ``jobs`` at a time; the results in the order of ``names``.

    ``on_step`` is called in this process, from one thread at a time; ``cancelled`` is asked
    at every step (in the workers, through a shared flag) and stops every replay with
    :class:`ReplayCancelled`.
    """
    if isinstance(db, Path):
        db = db.resolve()  # the workers' folder is not this process' one; a URL is a URL
    if jobs <= 1 or len(names) <= 1:
        return _in_this_process(db, session_id, names, settings, workspace, on_step, cancelled)
    from engine.replay import worker  # what the workers run (it loads the tokenizer)

    _start_resource_tracker()
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    queue: Any = context.Queue()
    stop = context.Event()
    muted = threading.Event()
    drain = threading.Thread(target=_forward, args=(queue, on_step, muted), daemon=True)
    drain.start()
    previous: Any = None
    try:
        with ProcessPoolExecutor(
            max_workers=min(jobs, len(names)),
            mp_context=context,
            initializer=worker.start,
            initargs=(queue, stop),
        ) as pool:
            futures: list[Future[ReplayResult]] = []
            try:
                # The slowest to replay first, so the others fill in around them (started in
                # the order asked, the last to start was one of them and a worker sat idle).
                first = replay_order(names)
                submitted = {
                    name: pool.submit(worker.replay_one, db, session_id, name, settings, workspace)
                    for name in first
                }
                futures = [submitted[name] for name in names]
                _wait(futures, stop, cancelled)
            except KeyboardInterrupt:
                # Ctrl+C: the workers ignore it (worker.start); stop them, report no more of
                # their progress, and let the pool end them before the interrupt goes on.
                previous = _ignore_interrupts()  # a second Ctrl+C would leave them running
                muted.set()
                stop.set()
                for future in futures:
                    future.cancel()
                raise
        errors = [f.exception() for f in futures if f.done() and not f.cancelled()]
        for error in errors:
            if error is not None and not isinstance(error, ReplayCancelled):
                raise error
        return [f.result() for f in futures]
    finally:
        queue.put(None)
        drain.join()
        queue.close()
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker with the process' own stderr.

    The tracker (which the queue's locks and the forkserver need) hands ``sys.stderr``'s file
    descriptor to the process it starts; in the workbench ``sys.stderr`` is Textual's print
    capture, whose ``fileno()`` is -1, and starting a process with it fails ("bad value(s) in
    fds_to_keep"). It starts once per process; the swap lasts that long."""
    if sys.stderr is sys.__stderr__ or sys.__stderr__ is None:
        resource_tracker.ensure_running()
        return
    with contextlib.redirect_stderr(sys.__stderr__):
        resource_tracker.ensure_running()


def _in_this_process(
    db: Path | str,
    session_id: int,
    names: Sequence[str],
    settings: Settings,
    workspace: Path,
    on_step: Progress | None,
    cancelled: Callable[[], bool] | None,
) -> list[ReplayResult]:
    store = Store.open(db, read_only=True)
    try:
        with fewer_collections():
            results = []
            for name in names:

                def progress(step: int, total: int, name: str = name) -> None:
                    if cancelled is not None and cancelled():
                        raise ReplayCancelled
                    if on_step is not None:
                        on_step(name, step, total)

                result = replay(store, session_id, name, settings, workspace, on_step=progress)
                results.append(result)
            return results
    finally:
        store.close()


def _wait(
    futures: list[Future[ReplayResult]], stop: Any, cancelled: Callable[[], bool] | None
) -> None:
    """Wait for every replay. When one fails or ``cancelled`` says so, the workers are told to
    stop (a replay checks at each step) and the replays not started are dropped: the failure,
    or :class:`ReplayCancelled`, is raised without waiting for the others to finish."""
    pending: set[Future[ReplayResult]] = set(futures)
    while pending:
        # asked before each wait: a cancel already there stops the workers at their first step
        stopping = cancelled is not None and cancelled()
        failed = False
        if not stopping:
            done, pending = wait(pending, timeout=0.1, return_when=FIRST_EXCEPTION)
            failed = any(f.exception() is not None for f in done)
        if failed or stopping:
            stop.set()
            for future in pending:
                future.cancel()
            if stopping and not failed:
                raise ReplayCancelled
            return


def _forward(queue: Any, on_step: Progress | None, muted: threading.Event) -> None:
    """The workers' progress, handed to ``on_step`` in this process, until ``None`` (and
    dropped once ``muted``: an interrupted run says nothing after its last line)."""
    while (item := queue.get()) is not None:
        if on_step is not None and not muted.is_set():
            on_step(*item)


def _ignore_interrupts() -> Any:
    """Ignore SIGINT while the workers are stopped; the handler it replaced (None from another
    thread than the main one, where no KeyboardInterrupt arrives)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, signal.SIG_IGN)
