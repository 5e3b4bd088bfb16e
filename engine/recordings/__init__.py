"""``ctxscope import``: recorded sessions from other agents stored as ctxscope sessions.

Formats (sniffed from the content, not the name): Claude Code session JSONL, JSON lines of
Anthropic messages, mini-swe-agent ``*.traj.json``, SWE-agent ``*.traj``; or a directory of
them (each file its own session). Every file is parsed whole before the database is opened:
a refusal (:class:`ImportError_`, naming the format it looked like and the problems by line)
never creates or touches the database. A directory is refused whole if any file is.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config import Settings
from engine.recordings import anthropic_jsonl, claude_code, trajectories
from engine.recordings.base import ImportError_, ImportReport, Parsed
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
]

FORMATS = (claude_code.FORMAT, anthropic_jsonl.FORMAT, trajectories.MINI, trajectories.SWE)
SUFFIXES = (".jsonl", ".traj", ".traj.json")


@dataclass
class ParsedFiles:
    """Every importable file under a path, parsed and checked; nothing stored yet."""

    files: list[tuple[Path, Parsed]]
    skipped_files: Counter[str] = field(default_factory=Counter)


def detect_format(raw: str) -> tuple[str | None, Any]:
    """The format ``raw`` looks like (None if none) and, for whole-JSON formats, the object."""
    stripped = raw.lstrip()
    if stripped.startswith("{"):
        try:
            whole = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            whole = None
        if trajectories.looks_like_swe(whole):
            return trajectories.SWE, whole
        if trajectories.looks_like_mini(whole):
            return trajectories.MINI, whole
    for line in raw.splitlines()[:50]:
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if claude_code.looks_like(obj):
            return claude_code.FORMAT, None
        if isinstance(obj, dict) and "role" in obj:
            return anthropic_jsonl.FORMAT, None
    return None, None


def parse_file(path: Path) -> Parsed:
    """Parse and check one file; raises :class:`ImportError_` naming it."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportError_([f"cannot read it: {exc}"], source=str(path)) from None
    fmt, whole = detect_format(raw)
    try:
        if fmt == trajectories.SWE:
            parsed = trajectories.parse_swe(whole, path.name)
        elif fmt == trajectories.MINI:
            parsed = trajectories.parse_mini(whole, path.name)
        elif fmt == claude_code.FORMAT:
            parsed = claude_code.parse(raw, path.name)
        elif fmt == anthropic_jsonl.FORMAT:
            parsed = anthropic_jsonl.parse(raw, path.name)
        else:
            raise ImportError_(
                [
                    "not a recognised session format (expected "
                    + ", ".join(FORMATS)
                    + "; see README, Importing a recorded session)"
                ]
            )
        problems = check(parsed)
        if problems:
            raise ImportError_(problems, parsed.fmt)
    except ImportError_ as exc:
        raise ImportError_(exc.problems, exc.fmt, source=str(path)) from None
    return parsed


def _is_subagent(path: Path) -> bool:
    return "subagents" in path.parts or path.name.startswith("agent-")


def parse_path(path: Path) -> ParsedFiles:
    """A file, or every importable file under a directory (sorted), parsed and checked."""
    if path.is_file():
        return ParsedFiles([(path, parse_file(path))])
    if not path.is_dir():
        raise ImportError_([f"cannot read {path}: no such file or directory"])
    out = ParsedFiles([])
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        if not file.name.endswith(SUFFIXES):
            out.skipped_files["not a session file"] += 1
        elif _is_subagent(file.relative_to(path)):
            out.skipped_files["subagent transcript"] += 1
        else:
            out.files.append((file, parse_file(file)))
    if not out.files:
        raise ImportError_([f"{path} holds no session files ({', '.join(SUFFIXES)})"])
    return out


def import_parsed(
    store: Store, parsed: ParsedFiles, workspace: str, settings: Settings
) -> list[ImportReport]:
    """Store every parsed file as its own session, all in one transaction.

    ``BEGIN IMMEDIATE``: the write lock is taken first, so no other writer can come between
    the reads an import makes (the next ids) and its writes.
    """
    reports = []
    with store.db.atomic("IMMEDIATE"):
        for path, one in parsed.files:
            report = write(store, one, workspace, settings)
            report.path = str(path)
            reports.append(report)
    return reports


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
    return import_parsed(store, ParsedFiles([(path, parse_file(path))]), workspace, settings)[0]
