"""``ctxscope import`` without a path: every session every known agent wrote on this machine,
imported once and kept current.

The folders: Claude Code's projects (``~/.claude/projects``, ``$CLAUDE_CONFIG_DIR/projects``),
Codex's sessions (``$CODEX_HOME/sessions``, else ``~/.codex/sessions``), Gemini CLI's saved
chats (``~/.gemini/tmp/*/chats``), those that exist, and any folders given (aider keeps its
history in each project's folder: name those).

Incremental: each file read is remembered (its size, modification time and a hash of its first
bytes, and for Claude Code the same of its subagents' files) with the sessions it became. A
file that is the same as last time is skipped without being read further; one that grew or was
rewritten is parsed again whole and stored again *into the same sessions*, so the result is
what a first import of the file as it is now stores (a faithful import needs the whole file:
a compaction archives what came before it, a late tool result closes an early round).

Parallel: files are parsed in a pool of processes (one per core) and stored by this process
alone, one transaction per file, as each arrives: an interrupted import (Ctrl+C) leaves every
file stored so far whole, and the next run goes on with the rest. The workers also count the
tokens of every text the writer will store (:func:`engine.recordings.writer.texts_to_count`)
and send the counts back by digest, so the writer neither loads the tokenizer nor tokenises
(issue 44: token counting was a third of the writer's time, the tokenizer's load 0.3–1.5 s).
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Generator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path

from engine.messages.tokens import counts_of, given_counts
from engine.recordings.agent_folders import (
    Folder,
    default_folders,
    session_files,
    unique_folders,
)
from engine.recordings.base import ImportError_, ImportReport, Parsed
from engine.recordings.identity import State, fingerprint, state_of, stored_recording
from engine.recordings.importing import (
    DATA_ERRORS,
    UnknownFormat,
    drop_session,
    imported_source,
    parse_sessions,
    store_again,
    unreadable,
)
from engine.recordings.writer import texts_to_count
from engine.settings.config import Settings
from engine.store import Store
from engine.store.history import ImportedFile


# ---------------------------------------------------------------------- the run
@dataclass
class Progress:
    """How far an import is (sent to the progress callback as files finish)."""

    files_done: int
    files_total: int
    bytes_done: int
    bytes_total: int
    started: float
    """``time.monotonic()`` at the start."""

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def rate(self) -> float:
        """Bytes a second so far."""
        return self.bytes_done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def left(self) -> float | None:
        """Seconds left at the rate so far (None before anything was read)."""
        if not self.bytes_done:
            return None
        return (self.bytes_total - self.bytes_done) / self.rate if self.rate else None


@dataclass
class HistoryResult:
    """What one import of the whole history did."""

    folders: list[Folder]
    states: Counter[str] = field(default_factory=Counter)
    """Files by what they were: ``new``, ``grown``, ``rewritten``, ``unchanged``."""
    reports: list[ImportReport] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    """Files that could not be imported now, and why."""
    refused_before: int = 0
    """Files refused at an earlier run and unchanged since (not read again)."""
    gone: list[tuple[str, list[int]]] = field(default_factory=list)
    """Files imported before and gone from disk since (their agent deleted them), with the
    sessions they became: kept stored, marked ``source_gone_at`` at this run."""
    warnings: list[str] = field(default_factory=list)
    """What the user should know (Claude Code deleting its sessions after 30 days)."""
    back: list[int] = field(default_factory=list)
    """Sessions marked gone before whose file is there again (the mark is taken off)."""
    skipped_files: Counter[str] = field(default_factory=Counter)
    interrupted: bool = False
    bytes_read: int = 0
    seconds: float = 0.0

    def as_json(self) -> dict[str, object]:
        return {
            "folders": [{"path": str(f.path), "agent": f.agent} for f in self.folders],
            "files": {k: self.states.get(k, 0) for k in ("new", "grown", "rewritten", "unchanged")},
            "sessions": [r.as_json() for r in self.reports],
            "files_refused": [{"path": p, "reason": why} for p, why in self.refused],
            "files_refused_before": self.refused_before,
            "files_gone": [{"path": p, "sessions": ids} for p, ids in self.gone],
            "sessions_back": self.back,
            "warnings": self.warnings,
            "files_skipped": dict(self.skipped_files),
            "bytes_read": self.bytes_read,
            "seconds": round(self.seconds, 3),
            "interrupted": self.interrupted,
        }


Parsing = tuple[list[Parsed] | None, str | None, bool, dict[str, int]]
"""A worker's answer: the sessions, or why not, whether the file is of no known format, and
the token counts of the texts the writer will count (by digest; empty in process)."""

_worker_settings: Settings | None = None
"""The import's settings, in a worker process (what a tool result's history form depends on)."""


def parse_one(path: str) -> Parsing:
    """Parse one file (in a worker process): its sessions, or the refusal; and, in a worker,
    the counts of what the writer will count."""
    try:
        sessions = parse_sessions(Path(path))
    except UnknownFormat as exc:
        return None, "; ".join(exc.problems), True, {}
    except ImportError_ as exc:
        return None, str(exc), False, {}
    except Exception as exc:  # noqa: BLE001 - one file's surprise sinks no other file
        return None, f"{path}: {unreadable(exc)}", False, {}
    counts: dict[str, int] = {}
    if _worker_settings is not None:
        settings = _worker_settings
        counts = counts_of(t for parsed in sessions for t in texts_to_count(parsed, settings))
    return sessions, None, False, counts


def _worker(settings: Settings) -> None:
    # Ctrl+C reaches every process of the terminal's group: the main process alone answers
    # it (it stops handing out files and keeps what was stored); workers just end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _worker_settings
    _worker_settings = settings


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _parsed_in_pool(
    paths: list[Path], jobs: int, settings: Settings
) -> Generator[tuple[Path, Parsing]]:
    """Each file parsed (and its texts counted), in the order they finish; at most
    ``2 * jobs`` waiting at once, so memory stays flat however many files there are."""
    if jobs <= 1 or len(paths) <= 1:
        for path in paths:
            yield path, parse_one(str(path))
        return
    pool = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=get_context("forkserver"),
        initializer=_worker,
        initargs=(settings,),
    )
    todo = iter(paths)
    running: dict[Future[Parsing], Path] = {}
    try:
        while True:
            while len(running) < 2 * jobs:
                following = next(todo, None)
                if following is None:
                    break
                running[pool.submit(parse_one, str(following))] = following
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                yield running.pop(future), future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def import_history(
    store: Store,
    folders: list[Folder],
    workspace: str,
    settings: Settings,
    jobs: int | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> HistoryResult:
    """Import every session file under ``folders`` that is new or changed since the last
    run; files are parsed on ``jobs`` processes (default: every core) and stored here, one
    transaction each. Ctrl+C stops it between files: ``interrupted`` is set, and what was
    stored stays."""
    started = time.monotonic()
    result = HistoryResult(folders)
    known = store.imported_files()
    # sessions this import keeps for a file: never taken for another file's bytes
    claimed = {sid for file in known.values() for sid in file.sessions}
    todo: list[tuple[Path, ImportedFile, State]] = []
    seen: set[str] = set()
    for folder in folders:
        files, skipped = session_files(folder.path)
        result.skipped_files.update(skipped)
        for path in files:
            if str(path) in seen:
                continue
            seen.add(str(path))
            try:
                now = fingerprint(path)
            except OSError as exc:
                result.refused.append((str(path), f"cannot read it: {exc}"))
                continue
            before = known.get(str(path))
            state = state_of(path, now, before)
            if state == "unchanged":
                assert before is not None
                result.states["unchanged"] += 1
                if before.refused is not None:
                    result.refused_before += 1
                continue
            todo.append((path, now, state))
    _mark_gone(store, folders, known, seen, result)
    # The biggest first: the pool ends together instead of waiting on one late giant.
    todo.sort(key=lambda t: -t[1].size)
    wanted = {path: (now, state) for path, now, state in todo}
    total = sum(now.size for _, now, _ in todo)
    tally = Progress(0, len(todo), 0, total, started)
    parsed = _parsed_in_pool([p for p, _, _ in todo], jobs or default_jobs(), settings)
    try:
        for path, (sessions, why, unknown, counts) in parsed:
            now, state = wanted[path]
            before = known.get(str(path))
            if sessions is None:
                reason = why or "cannot be imported"
                if unknown and path.suffix == ".md":
                    result.skipped_files["not a session file"] += 1
                else:
                    result.refused.append((str(path), reason))
                kept = before.sessions if before else ()
                store.remember_file(replace(now, sessions=kept, refused=reason))
            else:
                try:
                    with given_counts(counts):
                        stored = store_file(
                            store, now, before, sessions, workspace, settings, claimed
                        )
                except DATA_ERRORS as exc:  # its transaction rolled back; the others go on
                    reason = f"{path}: {unreadable(exc)}"
                    result.refused.append((str(path), reason))
                    kept = before.sessions if before else ()
                    store.remember_file(replace(now, sessions=kept, refused=reason))
                else:
                    claimed.update(r.session.id for r in stored if r.session.id is not None)
                    result.reports += stored
                    result.states[state] += 1
            tally.files_done += 1
            tally.bytes_done += now.size
            if progress is not None:
                progress(tally)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        parsed.close()  # the pool ends here, whatever ended the loop
    result.bytes_read = tally.bytes_done
    result.seconds = time.monotonic() - started
    return result


def import_one_file(
    store: Store, path: Path, workspace: str, settings: Settings
) -> tuple[list[ImportReport], str]:
    """One session file imported as ``import`` without a path would (``import --hook``): into
    the sessions it became last time, remembered so that the next whole-history run skips it
    while unchanged. The reports, and what was done (``new``, ``grown``, ``rewritten``,
    ``unchanged``); :class:`ImportError_` when it cannot be imported."""
    try:
        now = fingerprint(path)
    except OSError as exc:
        raise ImportError_([f"cannot read {path}: {exc.strerror or exc}"]) from None
    before = store.imported_files().get(str(path))
    state = state_of(path, now, before)
    if state == "unchanged":
        return [], state
    sessions, why, _, _counts = parse_one(str(path))
    if sessions is None:
        raise ImportError_([why or f"{path} cannot be imported"])
    claimed = {sid for f in store.imported_files().values() for sid in f.sessions}
    return store_file(store, now, before, sessions, workspace, settings, claimed), state


def _mark_gone(
    store: Store,
    folders: list[Folder],
    known: dict[str, ImportedFile],
    seen: set[str],
    result: HistoryResult,
) -> None:
    """Files imported before under ``folders`` and not there now: their sessions stay stored
    and are marked (``Session.source_gone_at``); a file there again takes its mark off."""
    roots = [f.path for f in folders]
    marked = store.sessions_source_gone()  # one query: most runs find nothing to change

    def with_children(sessions: tuple[int, ...]) -> list[int]:
        ids = list(sessions)
        for sid in sessions:  # its subagents came from it too
            ids += store.child_sessions(sid)
        return ids

    for path, file in known.items():
        if not file.sessions:
            continue
        if path in seen:
            if marked.intersection(file.sessions):
                result.back += store.mark_source_gone(with_children(file.sessions), gone=False)
        elif any(Path(path).is_relative_to(root) for root in roots) and not Path(path).exists():
            if not marked.issuperset(file.sessions):
                gone = store.mark_source_gone(with_children(file.sessions))
                if gone:
                    result.gone.append((path, gone))


def store_file(
    store: Store,
    now: ImportedFile,
    before: ImportedFile | None,
    sessions: list[Parsed],
    workspace: str,
    settings: Settings,
    claimed: set[int] | frozenset[int] = frozenset(),
) -> list[ImportReport]:
    """Store one file's sessions in one transaction: into the sessions it became last time
    (their content replaced, their subagents made again), else as new sessions; and remember
    the file as it is now.

    Each session keeps the digest of the file's bytes in its ``source``, as ``import FILE``
    stores it: a file this import has not read before whose bytes ``import FILE`` stored
    already is taken as those sessions (not stored twice; unless this import keeps them for
    another file, ``claimed``), and ``import FILE`` of a file this import stored says "already
    stored" (until it grows)."""
    old = list(before.sessions) if before else []
    keys = [imported_source(Path(now.path), n) for n in range(len(sessions))]  # hashed once
    with store.transaction():
        reports = [] if old else _stored_before(store, keys, sessions, claimed)
        if not reports:
            for n, parsed in enumerate(sessions):
                sid = old[n] if n < len(old) else _held(store, Path(now.path), n, parsed, claimed)
                reports.append(store_again(store, sid, parsed, workspace, settings, keys[n]))
        for sid in old[len(sessions) :]:
            drop_session(store, sid)
        for report in reports:
            report.path = now.path
        store.remember_file(
            replace(
                now,
                fmt=sessions[0].fmt if sessions else "",
                sessions=tuple(r.session.id for r in reports if r.session.id is not None),
                refused=None,
            )
        )
    return reports


def _held(
    store: Store, path: Path, index: int, parsed: Parsed, claimed: set[int] | frozenset[int]
) -> int | None:
    """The session a ``watch`` of this file stored its recording in (not another file's)."""
    held = stored_recording(store, path, index, parsed.source_session)
    return held.id if held is not None and held.id not in claimed else None


def _stored_before(
    store: Store,
    keys: list[str | None],
    sessions: list[Parsed],
    claimed: set[int] | frozenset[int],
) -> list[ImportReport]:
    """The reports of a file whose every session ``import FILE`` stored already (the same
    bytes); none when any is missing or kept for another file."""
    found = [store.session_for_source(key) if key else None for key in keys]
    if not sessions or any(f is None or f.id in claimed for f in found):
        return []
    reports = []
    for session, parsed in zip(found, sessions, strict=True):
        assert session is not None
        report = ImportReport(session=session, fmt=parsed.fmt, records=parsed.records)
        report.warnings.append(
            f"already stored as session {session.id} (the same file); not stored again"
        )
        reports.append(report)
    return reports


__all__ = [
    "Folder",
    "HistoryResult",
    "Progress",
    "default_folders",
    "fingerprint",
    "import_history",
    "session_files",
    "state_of",
    "store_file",
    "unique_folders",
]
