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
alone, as they arrive, each file with its record in one transaction: an interrupted import
(Ctrl+C, a crash) leaves every file stored so far whole, and the next run goes on with the
rest. A new file is written whole by its worker into a scratch database
(:mod:`engine.recordings.history_workers`), whose rows this process copies in
(:mod:`engine.store.staged`: issue 44, the writer's time per file went from its parse's size
to a few statements), up to eight files a transaction
(:mod:`engine.recordings.history_staged`); a file stored before is parsed there, its tokens
counted, and stored here into the same sessions.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping
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
from engine.recordings.history_staged import (
    StagedFile,
    store_staged,
    store_staged_batch,
    stored_before,
)
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
from engine.store.staged import MOST_ATTACHED


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
    storing = _Storing(store, wanted, known, workspace, settings, claimed, result)

    def stored(paths: list[Path]) -> None:
        for path in paths:
            tally.files_done += 1
            tally.bytes_done += wanted[path][0].size
            if progress is not None:
                progress(tally)

    try:
        for path, answer in answers:
            stored(storing.add(path, answer))
        stored(storing.flush())
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        answers.close()  # the pool ends here, whatever ended the loop
        if scratch is not None:
            scratch.cleanup()
    result.bytes_read = tally.bytes_done
    result.seconds = time.monotonic() - started
    return result


class _Storing:
    """What the workers made of each file, stored as it arrives; the new files' scratch
    databases wait, up to :data:`~engine.store.staged.MOST_ATTACHED`, to be copied in one
    transaction (:mod:`engine.recordings.history_staged`). Anything else is stored on its
    own, after the waiting files, so that each file is stored with what came before it in
    the database, as one at a time would."""

    def __init__(
        self,
        store: Store,
        wanted: Mapping[Path, tuple[ImportedFile, str]],
        known: dict[str, ImportedFile],
        workspace: str,
        settings: Settings,
        claimed: set[int],
        result: HistoryResult,
    ) -> None:
        self.store, self.wanted, self.known = store, wanted, known
        self.workspace, self.settings, self.claimed, self.result = (
            workspace,
            settings,
            claimed,
            result,
        )
        self.waiting: list[StagedFile] = []

    def add(self, path: Path, answer: Parsing | Staged) -> list[Path]:
        """Take one file's answer; the files stored by it, in order (none while it waits)."""
        if isinstance(answer, Staged) and not _watched(self.store, path, answer, self.claimed):
            self.waiting.append(StagedFile(path, self.wanted[path][0], answer))
            return self.flush() if len(self.waiting) >= BATCH else []
        done = self.flush()
        self.one(path, answer)
        return [*done, path]

    def flush(self) -> list[Path]:
        """Store the files waiting, in one transaction; those files."""
        waiting, self.waiting = self.waiting, []
        if not waiting:
            return []
        try:
            batch = store_staged_batch(self.store, waiting, self.claimed)
        except DATA_ERRORS:
            # One file's copy failed and rolled them all back: each on its own, as ever.
            for file in waiting:
                self.one(file.path, file.staged)
            return [file.path for file in waiting]
        for file, reports in zip(waiting, batch, strict=True):
            self._stored(file.path, reports)
        return [file.path for file in waiting]

    def one(self, path: Path, answer: Parsing | Staged) -> None:
        now, state = self.wanted[path]
        _take(
            self.store,
            path,
            answer,
            now,
            state,
            self.known.get(str(path)),
            self.workspace,
            self.settings,
            self.claimed,
            self.result,
        )

    def _stored(self, path: Path, reports: list[ImportReport]) -> None:
        self.claimed.update(r.session.id for r in reports if r.session.id is not None)
        self.result.reports += reports
        self.result.states[self.wanted[path][1]] += 1


BATCH = MOST_ATTACHED
"""New files copied in one transaction, at most (:class:`_Storing`)."""


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
        reports = [] if old else stored_before(store, keys, kinds, claimed)
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
