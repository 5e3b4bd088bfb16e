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

Parallel: files are read in a pool of processes (one per core) and stored by this process
alone, one transaction per file, as each arrives: an interrupted import (Ctrl+C) leaves every
file stored so far whole, and the next run goes on with the rest. A new file is written whole
by its worker into a scratch database (:mod:`engine.recordings.history_workers`), whose rows
this process copies in (:mod:`engine.store.staged`: issue 44, the writer's time per file went
from its parse's size to a few statements); a file stored before is parsed there, its tokens
counted, and stored here into the same sessions.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from engine.messages.tokens import given_counts
from engine.recordings.agent_folders import (
    Folder,
    default_folders,
    session_files,
    unique_folders,
)
from engine.recordings.base import ImportError_, ImportReport, Parsed
from engine.recordings.history_workers import (
    Parsing,
    Staged,
    default_jobs,
    in_pool,
    parse_one,
)
from engine.recordings.identity import State, fingerprint, state_of, stored_recording
from engine.recordings.importing import (
    DATA_ERRORS,
    drop_session,
    imported_source,
    store_again,
    unreadable,
)
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
    jobs = jobs or default_jobs()
    # New files are written whole by the workers into scratch databases, which this process
    # copies in (SQLite; on PostgreSQL, and on one core, every file is written here).
    staging = jobs > 1 and len(todo) > 1 and store.url is None
    scratch = tempfile.TemporaryDirectory(prefix="ctxscope-import-") if staging else None
    new = {path for path, _, state in todo if state == "new"}
    where = Path(scratch.name) if scratch is not None else None
    answers = in_pool([p for p, _, _ in todo], jobs, settings, workspace, new, where)
    try:
        for path, answer in answers:
            now, state = wanted[path]
            _take(
                store,
                path,
                answer,
                now,
                state,
                known.get(str(path)),
                workspace,
                settings,
                claimed,
                result,
            )
            tally.files_done += 1
            tally.bytes_done += now.size
            if progress is not None:
                progress(tally)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        answers.close()  # the pool ends here, whatever ended the loop
        if scratch is not None:
            scratch.cleanup()
    result.bytes_read = tally.bytes_done
    result.seconds = time.monotonic() - started
    return result


def _take(
    store: Store,
    path: Path,
    answer: Parsing | Staged,
    now: ImportedFile,
    state: str,
    before: ImportedFile | None,
    workspace: str,
    settings: Settings,
    claimed: set[int],
    result: HistoryResult,
) -> None:
    """Store what a worker made of one file (or remember why it could not be imported)."""
    reason: str | None = None
    stored: list[ImportReport] = []
    try:
        if isinstance(answer, Staged) and _watched(store, path, answer, claimed):
            # A recording a watch stored already: stored again into that session, here.
            answer.scratch.unlink(missing_ok=True)
            answer = parse_one(str(path))
        if isinstance(answer, Staged):
            stored = store_staged(store, now, answer, claimed)
        else:
            sessions, why, unknown, counts = answer
            if sessions is None and unknown and path.suffix == ".md":
                result.skipped_files["not a session file"] += 1
                reason = why or "cannot be imported"
            elif sessions is None:
                reason = why or "cannot be imported"
                result.refused.append((str(path), reason))
            else:
                with given_counts(counts):
                    stored = store_file(store, now, before, sessions, workspace, settings, claimed)
    except DATA_ERRORS as exc:  # its transaction rolled back; the others go on
        reason = f"{path}: {unreadable(exc)}"
        result.refused.append((str(path), reason))
    if reason is not None:
        kept = before.sessions if before else ()
        store.remember_file(replace(now, sessions=kept, refused=reason))
        return
    claimed.update(r.session.id for r in stored if r.session.id is not None)
    result.reports += stored
    result.states[state] += 1


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
        kinds = [(parsed.fmt, parsed.records) for parsed in sessions]
        reports = [] if old else _stored_before(store, keys, kinds, claimed)
        if not reports:
            for n, parsed in enumerate(sessions):
                sid = (
                    old[n]
                    if n < len(old)
                    else _held(store, Path(now.path), n, parsed.source_session, claimed)
                )
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
    store: Store, path: Path, index: int, recorded: str, claimed: set[int] | frozenset[int]
) -> int | None:
    """The session a ``watch`` of this file stored its recording in (not another file's);
    ``recorded``: the session's own id in the recording."""
    held = stored_recording(store, path, index, recorded)
    return held.id if held is not None and held.id not in claimed else None


def _watched(store: Store, path: Path, staged: Staged, claimed: set[int]) -> bool:
    """Whether a ``watch`` of ``path`` stored one of its sessions already."""
    return any(
        _held(store, path, n, recorded, claimed) is not None
        for n, recorded in enumerate(staged.recorded)
    )


def store_staged(
    store: Store, now: ImportedFile, staged: Staged, claimed: set[int] | frozenset[int]
) -> list[ImportReport]:
    """Store a new file whose sessions a worker wrote into a scratch database: its rows
    copied in, in one transaction with the file's record (:meth:`Store.copy_staged`); the
    reports with the ids they have here. A file whose every session ``import FILE`` stored
    already is taken as those sessions, as :func:`store_file` does."""
    kinds = [(r.fmt, r.records) for r in staged.reports]
    try:
        with store.staged_file(staged.scratch), store.transaction():
            reports = _stored_before(store, staged.sources, kinds, claimed)
            if not reports:
                shift = store.copy_staged()["session_row"]
                reports = [_shifted(r, shift) for r in staged.reports]
            for report in reports:
                report.path = now.path
            store.remember_file(
                replace(
                    now,
                    fmt=staged.fmt,
                    sessions=tuple(r.session.id for r in reports if r.session.id is not None),
                    refused=None,
                )
            )
    finally:
        staged.scratch.unlink(missing_ok=True)
    return reports


def _shifted(report: ImportReport, shift: int) -> ImportReport:
    """``report`` (and its subagents') with the session ids they were copied under."""
    session = report.session
    parent = session.parent_session_id
    report.session = session.model_copy(
        update={
            "id": None if session.id is None else session.id + shift,
            "parent_session_id": None if parent is None else parent + shift,
        }
    )
    report.children = [_shifted(child, shift) for child in report.children]
    return report


def _stored_before(
    store: Store,
    keys: list[str | None],
    kinds: list[tuple[str, int]],
    claimed: set[int] | frozenset[int],
) -> list[ImportReport]:
    """The reports of a file whose every session ``import FILE`` stored already (the same
    bytes); none when any is missing or kept for another file."""
    found = [store.session_for_source(key) if key else None for key in keys]
    if not kinds or any(f is None or f.id in claimed for f in found):
        return []
    reports = []
    for session, (fmt, records) in zip(found, kinds, strict=True):
        assert session is not None
        report = ImportReport(session=session, fmt=fmt, records=records)
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
    "default_jobs",
    "fingerprint",
    "import_history",
    "session_files",
    "state_of",
    "store_file",
    "store_staged",
    "unique_folders",
]
