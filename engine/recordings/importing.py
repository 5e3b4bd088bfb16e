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
import json
import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config import Settings
from engine.recordings import (
    aider,
    anthropic_jsonl,
    claude_code,
    codex,
    gemini,
    openhands,
    trajectories,
)
from engine.recordings.base import (
    ImportError_,
    ImportReport,
    Parsed,
)
from engine.recordings.files import read_session_text, special_mode
from engine.recordings.writer import check, write
from engine.store import Store

__all__ = [
    "FORMATS",
    "ImportError_",
    "ImportReport",
    "ParsedFiles",
    "detect_format",
    "import_parsed",
    "import_session",
    "parse_path",
    "parse_sessions",
]

FORMATS = (
    claude_code.FORMAT,
    anthropic_jsonl.FORMAT,
    trajectories.MINI,
    trajectories.SWE,
    codex.FORMAT,
    gemini.FORMAT,
    openhands.FORMAT,
    aider.FORMAT,
)
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


def detect_format(raw: str) -> tuple[str | None, Any]:
    """The format ``raw`` looks like (None if none) and, for whole-JSON formats, the object."""
    stripped = raw.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            whole = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            whole = None
        if trajectories.looks_like_swe(whole):
            return trajectories.SWE, whole
        if trajectories.looks_like_mini(whole):
            return trajectories.MINI, whole
        if gemini.looks_like(whole):
            return gemini.FORMAT, whole
        if openhands.looks_like(whole):
            return openhands.FORMAT, whole
        if isinstance(whole, list) and whole and gemini.looks_like_contents(whole[0]):
            return gemini.CONTENTS, None
    elif aider.looks_like(raw):
        return aider.FORMAT, None
    for line in raw.splitlines()[:50]:
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if codex.looks_like(obj):
            return codex.FORMAT, None
        if claude_code.looks_like(obj):
            return claude_code.FORMAT, None
        if gemini.looks_like_contents(obj):
            return gemini.CONTENTS, None
        if isinstance(obj, dict) and "role" in obj:
            return anthropic_jsonl.FORMAT, None
    return None, None


class UnknownFormat(ImportError_):
    """The file is in none of the formats ``import`` reads."""


def parse_file(path: Path) -> Parsed:
    """Parse and check one file (its first session); raises :class:`ImportError_` naming it."""
    return parse_sessions(path)[0]


def parse_sessions(path: Path) -> list[Parsed]:
    """Every session of one file (an aider history may hold several), parsed and checked;
    raises :class:`ImportError_` (:class:`UnknownFormat` for no known format) naming it."""
    raw, long_lines, not_utf8 = read_session_text(path)
    fmt, whole = detect_format(raw.removeprefix("\ufeff"))
    try:
        if fmt == trajectories.SWE:
            sessions = [trajectories.parse_swe(whole, path.name)]
        elif fmt == trajectories.MINI:
            sessions = [trajectories.parse_mini(whole, path.name)]
        elif fmt == claude_code.FORMAT:
            sessions = [claude_code.parse(raw, path.name)]
        elif fmt == anthropic_jsonl.FORMAT:
            sessions = [anthropic_jsonl.parse(raw, path.name)]
        elif fmt == codex.FORMAT:
            sessions = [codex.parse(raw, path.name)]
        elif fmt == gemini.FORMAT:
            sessions = [gemini.parse(whole, path.name)]
        elif fmt == gemini.CONTENTS:
            raise gemini.refuse_contents()
        elif fmt == openhands.FORMAT:
            sessions = [openhands.parse(whole, path.name)]
        elif fmt == aider.FORMAT:
            sessions = aider.parse_all(raw, path.name)
        else:
            raise UnknownFormat([_unknown(raw, long_lines)])
        for parsed in sessions:
            problems = check(parsed)
            if problems:
                raise ImportError_(problems, parsed.fmt)
    except UnknownFormat as exc:
        raise UnknownFormat(exc.problems, source=str(path)) from None
    except ImportError_ as exc:
        raise ImportError_(exc.problems, exc.fmt, source=str(path)) from None
    for parsed in sessions:
        for number in long_lines:
            parsed.not_read.line("line over 32 MB", number)
        if not_utf8:
            parsed.warnings.append(
                f"{not_utf8} byte sequence(s) that are not UTF-8 were read as U+FFFD"
            )
        if parsed.fmt == claude_code.FORMAT:
            _add_subagents(path, parsed)
    return sessions


def _unknown(raw: str, long_lines: list[int]) -> str:
    """Why a file is in no known format, saying what it looked like."""
    expected = "expected " + ", ".join(FORMATS) + f"; see {DOCS}"
    if long_lines and not raw.strip():
        return f"only lines over 32 MB ({len(long_lines)}), not read ({expected})"
    if not raw.strip():
        return f"an empty file ({expected})"
    return f"not a recognised session format ({expected})"


def _is_subagent(path: Path) -> bool:
    return "subagents" in path.parts or path.name.startswith("agent-")


def _add_subagents(path: Path, parsed: Parsed) -> None:
    """Claude Code's ``<session>/subagents/agent-*.jsonl`` beside ``<session>.jsonl``: each a
    child session; an ``agent-acompact-*`` file is the call that wrote a compaction's summary
    and goes to that compaction. A subagent file that cannot be read is a warning, not a
    refusal of its parent."""
    folder = path.with_suffix("") / "subagents"
    if not folder.is_dir():
        return
    for file in sorted(folder.glob("agent-*.jsonl")):
        try:
            child = claude_code.parse(read_session_text(file)[0], file.name)
            if file.name.startswith("agent-acompact"):
                _attach_compaction_call(parsed, child, file.name)
                continue
            problems = check(child)
            if problems:
                raise ImportError_(problems, child.fmt)
        except (ImportError_, OSError, UnicodeDecodeError) as exc:
            parsed.warnings.append(f"subagent {file.name}: not imported: {exc}")
            parsed.skipped["subagent"] += 1
            continue
        child.agent_id = child.agent_id or file.stem.removeprefix("agent-")
        parsed.children.append(child)


def _attach_compaction_call(parsed: Parsed, call: Parsed, name: str) -> None:
    """The compaction whose summary ``call`` wrote: the first one at or after its last record
    (the summary is written when the call ends), else the last one. Its cost is its usage."""
    summaries = [i for i in parsed.items if i.kind == "summary"]
    if not summaries:
        parsed.warnings.append(f"subagent {name}: a compaction call, but no compaction recorded")
        parsed.skipped["subagent"] += 1
        return
    ended = max((i.created_at for i in call.items), default=None)
    target = next((s for s in summaries if ended is None or s.created_at >= ended), summaries[-1])
    steps = [i for i in call.items if i.kind == "assistant"]
    usage: dict[str, int] = {}
    for step in steps:
        for key, value in (step.usage.model_dump() if step.usage else {}).items():
            usage[key] = usage.get(key, 0) + int(value)
    target.recorded_call = {
        "agent_id": call.agent_id or name.removeprefix("agent-").removesuffix(".jsonl"),
        "model": next((s.model for s in steps if s.model), ""),
        "usage": usage,
    }


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
        elif _is_subagent(file.relative_to(path)):
            # Read with its session (``<session>/subagents/``); counted here only without one.
            if not (
                file.parent.name == "subagents"
                and file.parent.parent.with_suffix(".jsonl").is_file()
            ):
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
    if not out.files:
        if out.refused:
            raise ImportError_(
                [f"{path} holds no session file that can be imported"]
                + [f"{f}: {why}" for f, why in out.refused]
            )
        raise ImportError_([f"{path} holds no session files ({', '.join(SUFFIXES)})"])
    return out


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
            key = imported_source(path, nth[path])
            nth[path] += 1
            found = store.session_for_source(key) if key else None
            if found is not None:
                report = ImportReport(session=found, fmt=one.fmt, records=one.records)
                report.warnings.append(
                    f"already stored as session {found.id} (the same file); not stored again"
                )
            else:
                report = write(store, one, workspace, settings, recorded_cwd, source=key)
            report.path = str(path)
            add_not_read(report, one)
            reports.append(report)
    return reports


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
