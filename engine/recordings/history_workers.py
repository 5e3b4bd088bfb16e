"""What the history import's worker processes do (:mod:`engine.recordings.history`).

A file imported before (grown, rewritten) is parsed here and its tokens counted
(:func:`parse_one`); the one writer stores it into the sessions it became. A new file is
written whole here (:func:`stage_one`, issue 44): parsed, then stored by the import's own
writer (:func:`engine.recordings.writer.write`) into a scratch SQLite database of its own
(rows, JSON columns, token counts, each recorded compaction's archive and search index); the
one writer copies that database's rows into the user's in a few statements
(:mod:`engine.store.staged`) and does nothing else per file. The content stored is the same
either way: the same function writes it.
"""

from __future__ import annotations

import gc
import itertools
import os
import shutil
import signal
from collections.abc import Generator, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

from engine.messages.tokens import counts_of
from engine.recordings.base import ImportError_, ImportReport, Parsed
from engine.recordings.importing import (
    DATA_ERRORS,
    UnknownFormat,
    imported_source,
    parse_sessions,
    unreadable,
)
from engine.recordings.writer import texts_to_count, write
from engine.settings.config import Settings
from engine.store import Store

Parsing = tuple[list[Parsed] | None, str | None, bool, dict[str, int]]
"""A worker's answer: the sessions, or why not, whether the file is of no known format, and
the token counts of the texts the writer will count (by digest; empty in process)."""


@dataclass
class Staged:
    """A new file's sessions, written by a worker into a scratch database of their own."""

    scratch: Path
    """The scratch database (the writer deletes it once copied)."""
    reports: list[ImportReport]
    """What each session's write did, with the scratch database's ids."""
    sources: list[str | None]
    """Each session's ``source`` (the digest of the file's bytes, hashed here)."""
    fmt: str
    recorded: list[str] = field(default_factory=list)
    """Each session's own id in its recording (what a ``watch`` of the file finds it by)."""


@dataclass
class _Job:
    """A worker process' part of one import."""

    settings: Settings
    workspace: str
    scratch: Path | None
    """The folder for scratch databases (None: this import stages nothing)."""


PRELOAD = ["engine.recordings.history_preload"]
"""What the pool's forkserver imports before it forks a worker (a forkserver already started
by this process, for a replay, keeps what it imported: only the start-up is slower)."""

_job: _Job | None = None
"""The import's settings, in a worker process (what a tool result's history form depends on)."""
_made = itertools.count()


def _parsed(path: str) -> tuple[list[Parsed] | None, str | None, bool]:
    try:
        return parse_sessions(Path(path)), None, False
    except UnknownFormat as exc:
        return None, "; ".join(exc.problems), True
    except ImportError_ as exc:
        return None, str(exc), False
    except Exception as exc:  # noqa: BLE001 - one file's surprise sinks no other file
        return None, f"{path}: {unreadable(exc)}", False


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector off while one file is read and written (issue 44): parsing
    makes hundreds of thousands of containers that all live until the file is stored, and
    each collection walks them again for nothing (5-10 % of a worker's CPU on the generated
    history); what refcounting does not free is collected after the file."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def parse_one(path: str) -> Parsing:
    """Parse one file (in a worker process): its sessions, or the refusal; and, in a worker,
    the counts of what the writer will count."""
    with _no_cycle_collection():
        return _parse_one(path)


def _parse_one(path: str) -> Parsing:
    sessions, why, unknown = _parsed(path)
    counts: dict[str, int] = {}
    if sessions is not None and _job is not None:
        settings = _job.settings
        counts = counts_of(t for parsed in sessions for t in texts_to_count(parsed, settings))
    return sessions, why, unknown, counts


def stage_one(path: str) -> Parsing | Staged:
    """Parse one new file and write its sessions into a scratch database (in a worker
    process); the refusal as :func:`parse_one` gives it, or what the writer's own write
    refused (the file's content: the writer would refuse it alike)."""
    with _no_cycle_collection():
        return _stage_one(path)


def _stage_one(path: str) -> Parsing | Staged:
    job = _job
    assert job is not None and job.scratch is not None
    sessions, why, unknown = _parsed(path)
    if sessions is None:
        return sessions, why, unknown, {}
    sources = [imported_source(Path(path), n) for n in range(len(sessions))]
    scratch = job.scratch / f"{os.getpid()}-{next(_made)}.sqlite"
    shutil.copyfile(_template(job.scratch), scratch)
    store = Store.open(scratch, durable=False, made_here=True)
    try:
        with store.transaction():
            reports = [
                write(
                    store, parsed, job.workspace, job.settings, recorded_cwd=True, source=sources[n]
                )
                for n, parsed in enumerate(sessions)
            ]
    except DATA_ERRORS as exc:
        store.close()
        scratch.unlink(missing_ok=True)
        return None, f"{path}: {unreadable(exc)}", False, {}
    store.close()
    fmt = sessions[0].fmt if sessions else ""
    return Staged(scratch, reports, sources, fmt, [p.source_session for p in sessions])


def _template(folder: Path) -> Path:
    """An empty database of the current schema, made once per worker (copying it is cheaper
    than creating the tables for each file); its search index a plain table, which the
    writer's copy indexes (:meth:`Store.plain_index`)."""
    template = folder / f"{os.getpid()}-empty.sqlite"
    if not template.exists():
        store = Store.open(template, durable=False)
        store.plain_index()
        store.close()
    return template


def _worker(job: _Job) -> None:
    # Ctrl+C reaches every process of the terminal's group: the main process alone answers
    # it (it stops handing out files and keeps what was stored); workers just end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _job
    _job = job


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def in_pool(
    paths: list[Path],
    jobs: int,
    settings: Settings,
    workspace: str,
    staged: set[Path],
    scratch: Path | None,
) -> Generator[tuple[Path, Parsing | Staged]]:
    """Each file parsed, or staged when it is one of ``staged`` (and ``scratch`` is given),
    in the order they finish; at most ``2 * jobs`` waiting at once, so memory stays flat
    however many files there are. With one job, or one file, each is parsed in process."""
    if jobs <= 1 or len(paths) <= 1:
        for path in paths:
            yield path, parse_one(str(path))
        return
    context = get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    pool = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=_worker,
        initargs=(_Job(settings, workspace, scratch),),
    )
    todo = iter(paths)
    running: dict[Future[Parsing | Staged], Path] = {}
    try:
        while True:
            while len(running) < 2 * jobs:
                following = next(todo, None)
                if following is None:
                    break
                work = stage_one if scratch is not None and following in staged else parse_one
                running[pool.submit(work, str(following))] = following
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                yield running.pop(future), future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
