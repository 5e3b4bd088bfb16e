"""``ctxscope import``: recorded sessions from other agents stored as ctxscope sessions.

Formats (sniffed from the content, not the name): Claude Code session JSONL, JSON lines of
Anthropic messages, mini-swe-agent ``*.traj.json``, SWE-agent ``*.traj``, Codex CLI rollouts,
Gemini CLI chats, OpenHands event lists, aider ``.aider.chat.history.md`` (each of its
``# aider chat started at`` blocks a session); or a directory of them (each file its own
session). Every file is parsed whole before the database is opened: a refusal
(:class:`ImportError_`, naming the format it looked like and the problems by line) never
creates or touches the database. A file is refused only when it holds no conversation at all
(what it could not read is left out and named: :class:`~engine.recordings.base.NotRead`). In
a directory every file that can be imported is, and the others are listed with the reason: no
known format, no conversation, not text; a FIFO or a device is named as such, never opened,
and a symlink that leads out of the folder is skipped with a line.

The JSON-lines formats (Claude Code, Codex) are read by the one tolerant line reader
(:class:`~engine.recordings.base.JsonLines`): a BOM, CRLF, blank and ``//`` lines, damaged and
repeated lines, a cut last line, and a line longer than
:data:`~engine.recordings.base.MAX_LINE_CHARS` (skipped while reading, never held whole).
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import tempfile
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from engine.recordings import agents, entire
from engine.recordings.base import (
    ImportError_,
    ImportReport,
    Parsed,
)
from engine.recordings.files import read_session, special_mode
from engine.recordings.identity import fingerprint, storable, stored_recording
from engine.recordings.writer import Resume, write
from engine.settings.config import Settings
from engine.store import Store, StoreError
from engine.store.errors import SessionNotFound

__all__ = [
    "FORMATS",
    "ImportError_",
    "ImportReport",
    "ParsedFiles",
    "detect_format",
    "import_parsed",
    "import_session",
    "store_again",
    "drop_session",
    "parse_path",
    "parse_sessions",
]

FORMATS = tuple(agent.name for agent in agents.AGENTS)
"""The formats ``import`` reads, in sniffing order (:data:`engine.recordings.agents.AGENTS`)."""
SUFFIXES = (".jsonl", ".traj", ".traj.json", ".json", ".md")
DOCS = 'docs/importing.md, "Importing and exporting sessions"'
"""Where a refusal points: the section that lists the formats, by its title."""


@dataclass
class ParsedFiles:
    """Every importable file under a path, parsed and checked; nothing stored yet."""

    files: list[tuple[Path, Parsed]]
    skipped_files: Counter[str] = field(default_factory=Counter)
    refused: list[tuple[Path, str]] = field(default_factory=list)
    """Files of a directory that could not be imported, with the reason, left out."""
    notes: list[str] = field(default_factory=list)
    """Lines about what a directory walk left out (a symlink out of the folder, a FIFO)."""
    starts: dict[Path, list[Path]] = field(default_factory=dict)
    """Files not read because their bytes begin a file that was (a session's copies in
    several Entire checkpoints), under that file: a session that stored one of them is the
    one to store it into (one recording, one session)."""
    holding: object = None
    """What must outlive the parse until the files are stored (the temporary copy of an
    Entire branch's checkpoints, :func:`_entire_branch`); dropped with these files."""


def detect_format(raw: str) -> str | None:
    """The format ``raw`` looks like (None if none): :func:`engine.recordings.agents.detect`."""
    agent = agents.detect(None, raw)
    return None if agent is None else agent.name


class UnknownFormat(ImportError_):
    """The file is in none of the formats ``import`` reads."""


def parse_file(path: Path) -> Parsed:
    """Parse and check one file (its first session); raises :class:`ImportError_` naming it."""
    return parse_sessions(path)[0]


def parse_sessions(path: Path) -> list[Parsed]:
    """Every session of one file (an aider history may hold several), parsed and checked;
    raises :class:`ImportError_` (:class:`UnknownFormat` for no known format) naming it."""
    read = read_session(path)
    raw, long_lines, not_utf8 = read.text, read.long_lines, read.not_utf8
    head = agents.Head.of_read(read)
    agent = agents.detect_head(path, head)
    try:
        if agent is None:
            raise UnknownFormat([_unknown(raw, long_lines)])
        sessions = agent.parse(path, raw, head.known())
    except UnknownFormat as exc:
        raise UnknownFormat(exc.problems, source=str(path)) from None
    except ImportError_ as exc:
        raise ImportError_(exc.problems, exc.fmt, source=str(path)) from None
    for parsed in sessions:
        for number in long_lines:
            parsed.not_read.line("line over 32 MB", number)
        parsed.not_read.merge(read.left_out)
        if not_utf8:
            parsed.warnings.append(
                f"{not_utf8} byte sequence(s) that are not UTF-8 were read as U+FFFD"
            )
    return sessions


def _entire_branch(repo: Path) -> ParsedFiles | None:
    """A git repository with Entire's checkpoints — its ``entire/checkpoints/v1`` branch, its
    per-checkpoint refs (Entire 0.10), or both: read with git's plumbing (no checkout,
    :func:`entire.read_trees`) into a temporary folder, imported as a checked-out tree would
    be; None with neither (or no checkpoint in them): the folder is walked as any other."""
    ref = entire.branch_ref(repo)
    refs, other = entire.checkpoint_refs(repo)
    trees = [(ref, PurePosixPath())] if ref is not None else []
    if not trees and not refs:
        return None
    holder = tempfile.TemporaryDirectory(prefix="ctxscope-entire-")
    root = Path(holder.name) / f"{repo.resolve().name}@entire-checkpoints"
    if not entire.read_trees(repo, trees + refs, root) or not entire.checkpoints(root):
        holder.cleanup()
        return None
    out = ParsedFiles([], holding=holder)
    out.files = entire.parse_checkpoints(root, parse_sessions, out.starts)
    if ref is not None:
        out.notes.append(
            f"{repo}: the checkpoints of its {ref} branch, read with git (not the files)"
        )
    if refs:
        out.notes.append(
            f"{repo}: {len(refs)} checkpoint(s) on refs of their own ({entire.CHECKPOINT_REFS}"
            "<shard>/<id>), read with git (not the files)"
        )
    if other:
        out.notes.append(
            f"{repo}: {other} other ref(s) under {entire.CHECKPOINT_REFS} not read (not one "
            "checkpoint's ref)"
        )
    return out


def _unknown(raw: str, long_lines: list[int]) -> str:
    """Why a file is in no known format, saying what it looked like."""
    expected = "expected " + ", ".join(FORMATS) + f"; see {DOCS}"
    if long_lines and not raw.strip():
        return f"only lines over 32 MB ({len(long_lines)}), not read ({expected})"
    if not raw.strip():
        return f"an empty file ({expected})"
    return f"not a recognised session format ({expected})"


def parse_path(path: Path) -> ParsedFiles:
    """A file, or every importable file under a directory (sorted), parsed and checked.

    In a directory, a file that cannot be imported is listed in ``refused`` with the reason
    (a ``.md`` file that is not an aider history is simply not a session file) and the others
    go on; what is not a regular file, and a symlink leading out of the folder, is noted.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise ImportError_([f"cannot read {path}: no such file or directory"]) from None
    if not stat.S_ISDIR(mode):
        return ParsedFiles([(path, one) for one in parse_sessions(path)])
    if entire.checkpoints(path):  # Entire checkpoints: each session's transcript, its figures
        out = ParsedFiles([])
        out.files = entire.parse_checkpoints(path, parse_sessions, out.starts)
        return out
    if entire.is_repository(path):
        branch = _entire_branch(path)
        if branch is not None:
            return branch
    out = ParsedFiles([])
    root = path.resolve()
    for file in sorted(path.rglob("*")):
        if not _inside(file, root, out):
            continue
        try:
            mode = os.stat(file).st_mode
        except OSError:
            out.notes.append(f"{file}: a broken symlink; skipped")
            continue
        if stat.S_ISDIR(mode):
            continue
        special = special_mode(mode)
        if special:
            out.notes.append(f"{file}: {special}, not a session file; not opened")
            out.skipped_files["not a regular file"] += 1
        elif not file.name.endswith(SUFFIXES):
            out.skipped_files["not a session file"] += 1
        elif agents.is_companion(file.relative_to(path)):
            # Read with its session (Claude Code's ``<session>/subagents/``); counted here
            # only without one.
            if agents.orphaned(file.relative_to(path), file):
                out.skipped_files["subagent transcript without its session"] += 1
        else:
            try:
                out.files.extend((file, one) for one in parse_sessions(file))
            except UnknownFormat as exc:
                if file.suffix == ".md":
                    out.skipped_files["not a session file"] += 1
                else:
                    out.refused.append((file, "; ".join(exc.problems)))
            except ImportError_ as exc:
                why = str(exc).removeprefix(f"{file}: ")
                out.refused.append((file, why))
            except Exception as exc:  # noqa: BLE001 - one file's surprise sinks no other file
                out.refused.append((file, unreadable(exc)))
    if not out.files:
        if out.refused:
            raise ImportError_(
                [f"{path} holds no session file that can be imported"]
                + [f"{f}: {why}" for f, why in out.refused]
            )
        raise ImportError_([f"{path} holds no session files ({', '.join(SUFFIXES)})"])
    return out


DATA_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError)
"""What a file's content can make a reader or the writer raise (a string that cannot be
encoded is a ValueError); the database's own errors are not among them."""


def unreadable(exc: BaseException) -> str:
    """Why a file could not be read, when its reader failed in a way it did not foresee: the
    error in one line (the other files of a folder or a history import go on)."""
    words = " ".join(str(exc).split())[:200]
    return f"cannot be read ({type(exc).__name__}: {words}); left out"


def _inside(file: Path, root: Path, out: ParsedFiles) -> bool:
    """Whether ``file`` (or the symlink it is, or is under) stays inside the imported
    folder; one that leads out is skipped with a line."""
    try:
        target = file.resolve()
    except (OSError, RuntimeError):
        out.notes.append(f"{file}: a symlink loop; skipped")
        return False
    if target == root or root in target.parents:
        return True
    out.notes.append(f"{file}: a symlink leading out of the folder (to {target}); skipped")
    out.skipped_files["symlink out of the folder"] += 1
    return False


def import_parsed(
    store: Store,
    parsed: ParsedFiles,
    workspace: str,
    settings: Settings,
    recorded_cwd: bool = False,
) -> list[ImportReport]:
    """Store every parsed file as its own session (its subagents linked to it), all in one
    transaction; with ``recorded_cwd`` each keeps the working directory it recorded.

    ``BEGIN IMMEDIATE``: the write lock is taken first, so no other writer can come between
    the reads an import makes (the next ids) and its writes.

    A file stored before — the same bytes, from this machine or another sharing the database
    — is not stored again: its report names the session that holds it (the check and the
    write are in the one transaction, so two importers of one file store it once).
    """
    reports = []
    nth: Counter[Path] = Counter()
    with store.transaction():  # a held lock or a full disk: one line, nothing stored
        for path, one in parsed.files:
            index = nth[path]
            key = imported_source(path, index)
            nth[path] += 1
            found = store.session_for_source(key) if key else None
            held = None
            if found is None:
                # copies whose bytes begin this file (an Entire session's earlier checkpoints)
                starts = parsed.starts.get(path, [])
                earlier = [k for p in starts if (k := imported_source(p, index))]
                held = stored_recording(
                    store, path, index, one.source_session, earlier_keys=earlier
                )
            if found is not None:
                report = ImportReport(session=found, fmt=one.fmt, records=one.records)
                report.stored_before = True
                report.warnings.append(
                    f"already stored as session {found.id} (the same file); not stored again"
                )
            elif held is not None:  # the file grew or changed since it was stored, or watched
                report = store_again(store, held.id, one, workspace, settings, key, recorded_cwd)
                report.warnings.append(
                    f"stored again into session {held.id}, which held this recording before "
                    "it changed (one recording, one session)"
                )
            elif len(parsed.files) == 1:
                report = write(store, one, workspace, settings, recorded_cwd, source=key)
            else:
                # Of several files, one that cannot be stored is left out, its statements
                # undone (a savepoint), and the others stored.
                try:
                    with store.db.atomic():
                        report = write(store, one, workspace, settings, recorded_cwd, source=key)
                except StoreError:
                    raise  # a lock or a full disk: the whole import, one line
                except DATA_ERRORS as exc:
                    parsed.refused.append((path, unreadable(exc)))
                    continue
            report.path = str(path)
            add_not_read(report, one)
            reports.append(report)
        _remember(store, reports)
    return reports


def _remember(store: Store, reports: list[ImportReport]) -> None:
    """Each file as it is now and the sessions it became, so that the file is known again
    however it is next read (grown: ``import``, ``watch``, the whole-history import)."""
    sessions: dict[str, list[int]] = {}
    fmts: dict[str, str] = {}
    claimed: set[int] | None = None
    for report in reports:
        if report.stored_before:
            # Bytes stored before: remembered under this path unless another path holds them
            # (a copy stays its own recording once it grows).
            if claimed is None:
                claimed = {sid for f in store.imported_files().values() for sid in f.sessions}
            if report.session.id in claimed:
                continue
        if report.path and report.session.id is not None:
            sessions.setdefault(report.path, []).append(report.session.id)
            fmts[report.path] = report.fmt
    for name, ids in sessions.items():
        if not storable(name):  # a name that is not UTF-8: not kept by name
            continue
        try:
            now = fingerprint(Path(name).absolute())
        except OSError:  # gone since it was read: nothing to know it by
            continue
        store.remember_file(replace(now, fmt=fmts[name], sessions=tuple(ids)))


def store_again(
    store: Store,
    sid: int | None,
    parsed: Parsed,
    workspace: str,
    settings: Settings,
    source: str | None = None,
    recorded_cwd: bool = True,
) -> ImportReport:
    """``parsed`` stored into session ``sid``, its content and subagents replaced (a file that
    grew or was rewritten since it was stored); a new session when ``sid`` is None or gone."""
    if sid is not None:
        try:
            session = store.get_session(sid)
        except SessionNotFound:  # deleted since: a new one
            sid = None
    if sid is None:
        return write(store, parsed, workspace, settings, recorded_cwd, source=source)
    for child in store.child_sessions(sid):
        drop_session(store, child)
    store.clear_session(sid)
    report = write(
        store, parsed, workspace, settings, recorded_cwd, resume=Resume(session, 0, [], [])
    )
    model = parsed.model or next((i.model for i in parsed.items if i.model), "")
    report.session = store.update_session(
        sid,
        title=f"import: {parsed.title[:60]}",
        model=model,
        workspace=(parsed.cwd if recorded_cwd else "") or workspace,
        source=source,
    )
    return report


def drop_session(store: Store, sid: int) -> None:
    """Session ``sid`` and its subagents deleted (already gone: nothing to do)."""
    try:
        for child in store.child_sessions(sid):
            drop_session(store, child)
        store.delete_session(sid)
    except SessionNotFound:
        pass


def imported_source(path: Path, index: int) -> str | None:
    """What an imported session's ``source`` holds: the digest of its file's bytes and its
    place among the file's sessions (None: the file cannot be read again)."""
    try:
        stat = path.stat()
        digest = _file_digest(str(path), stat.st_size, stat.st_mtime_ns)
    except OSError:
        return None
    return f"import:sha256:{digest}#{index}"


@functools.lru_cache(maxsize=64)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    """SHA-256 of a file's bytes, read in pieces (never the whole file in memory: issue 44);
    once per file as it is (its size and time), however many sessions it holds."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def add_not_read(report: ImportReport, parsed: Parsed) -> None:
    """What the parser did not read, into the report (its subagents' too, by agent id)."""
    report.not_read = parsed.not_read
    report.agent_version = parsed.agent_version
    report.not_read_sentences = parsed.not_read_sentences()
    children = {c.agent_id: c for c in parsed.children}
    for child in report.children:
        if child.session.agent_id in children:
            add_not_read(child, children[child.session.agent_id])


def import_session(
    store: Store,
    path: Path,
    workspace: str,
    limit: int | None = None,
    settings: Settings | None = None,
) -> ImportReport:
    """Parse one file whole, then store it as a new session in one transaction.

    ``limit`` overrides ``generic_max_chars`` (what history keeps of an unknown tool's result).
    """
    settings = settings or Settings()
    if limit is not None:
        settings = settings.model_copy(update={"generic_max_chars": limit})
    files = ParsedFiles([(path, one) for one in parse_sessions(path)])
    return import_parsed(store, files, workspace, settings)[0]
