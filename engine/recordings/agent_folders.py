"""Where an agent keeps its sessions on this machine and the session files there (``ctxscope
import`` without a path: :mod:`.history`); whether a file changed since the last import is
:mod:`.identity`'s.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from engine.recordings import agents
from engine.recordings.agents.protocol import Folder as Folder
from engine.recordings.identity import storable
from engine.recordings.importing import SUFFIXES
from engine.settings.config import Settings

"""How much of a file's start is hashed: other bytes there mean the file was rewritten."""


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
        elif not storable(str(file)):
            # A name that is not UTF-8 cannot be remembered, so the import could not know the
            # file again: passed over and counted (``import FILE`` still reads it).
            skipped["file name not UTF-8"] += 1
        else:
            files.append(file)
    return files, skipped
