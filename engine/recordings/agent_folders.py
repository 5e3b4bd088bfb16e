"""Where an agent keeps its sessions on this machine, the session files there, and whether a
file changed since the last import (``ctxscope import`` without a path: :mod:`.history`).

A file is known by its size, modification time and a hash of its first bytes (a Claude Code
session also by its subagent files'): the same in all of these is unchanged; the same first
bytes and more of them is a file that grew; anything else was rewritten.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from engine.recordings import agents
from engine.recordings.agents.protocol import Folder as Folder
from engine.recordings.importing import SUFFIXES
from engine.settings.config import Settings
from engine.store.history import ImportedFile

HEAD_BYTES = 4096
"""How much of a file's start is hashed: other bytes there mean the file was rewritten."""

State = Literal["new", "grown", "rewritten", "unchanged"]


def default_folders(
    environ: Mapping[str, str] | None = None, settings: Settings | None = None
) -> list[Folder]:
    """The folders of every agent ctxscope knows that exist here (``HOME`` from the
    environment, as the agents themselves find it; :func:`.agents.home_folders`)."""
    env = os.environ if environ is None else environ
    return unique_folders(agents.home_folders(env, settings or Settings()))


def unique_folders(folders: list[Folder]) -> list[Folder]:
    """Those that exist, each once (a folder named twice, or inside another, is read once)."""
    out: list[Folder] = []
    for folder in folders:
        if not folder.path.is_dir():
            continue
        path = folder.path.resolve()
        if any(path == o.path or o.path in path.parents for o in out):
            continue
        out = [o for o in out if path not in o.path.parents]
        out.append(Folder(path, folder.agent))
    return out


def session_files(folder: Path) -> tuple[list[Path], Counter[str]]:
    """The session files under ``folder`` (sorted), and what was passed over, by reason.
    Subagent transcripts are read with their session (``<session>/subagents/``)."""
    files: list[Path] = []
    skipped: Counter[str] = Counter()
    root = folder.resolve()
    for file in sorted(folder.rglob("*")):
        # A link (or a folder link above it) leading out of the agent's folder is never
        # followed: ~/.claude/projects/x.jsonl -> /etc/shadow is not even opened.
        try:
            target = file.resolve()
        except (OSError, RuntimeError):  # a loop
            skipped["symlink loop"] += 1
            continue
        if target != root and root not in target.parents:
            skipped["symlink out of the folder"] += 1
            continue
        if not target.is_file():
            continue
        if not file.name.endswith(SUFFIXES):
            skipped["not a session file"] += 1
        elif agents.is_companion(file.relative_to(folder)):
            if agents.orphaned(file.relative_to(folder), file):
                skipped["subagent transcript without its session"] += 1
        else:
            files.append(file)
    return files, skipped


def _head_hash(path: Path, length: int) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read(length)).hexdigest()


def _companions(path: Path) -> str:
    """The files read with ``path`` (Claude Code's subagents): name, size, time each."""
    parts = []
    for file in agents.companions(path):
        st = file.stat()
        parts.append(f"{file.name}:{st.st_size}:{st.st_mtime_ns}")
    return ";".join(parts)


def fingerprint(path: Path) -> ImportedFile:
    """What ``path`` is now (no sessions yet)."""
    st = path.stat()
    return ImportedFile(
        path=str(path),
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        head=_head_hash(path, HEAD_BYTES),
        companions=_companions(path),
    )


def state_of(path: Path, now: ImportedFile, before: ImportedFile | None) -> State:
    """How ``path`` differs from what the last import saw."""
    if before is None:
        return "new"
    if (now.size, now.mtime_ns, now.head, now.companions) == (
        before.size,
        before.mtime_ns,
        before.head,
        before.companions,
    ):
        return "unchanged"
    # ``before.head`` hashed its first min(size, HEAD_BYTES) bytes: the same bytes now, and
    # more of them, is a file that grew.
    if now.size >= before.size and _head_hash(path, min(before.size, HEAD_BYTES)) == before.head:
        return "grown"
    return "rewritten"
