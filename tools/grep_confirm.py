"""Grep's check of what ripgrep found, through the confined open.

ripgrep opens files and enters directories by name, so a directory swapped for a symlink
while it walks can make it read a file outside the workspace. Its findings are therefore
confirmed before they are shown: every matched line is read again from the same
workspace-relative path through the confined walk (``tools.confined``, never through a link),
and kept only when that file holds the same text on the same line; a listed file (the
``files_with_matches`` and ``count`` modes) is kept only when it opens as a regular file that
way. What was dropped is counted and reported, never silently lost.

What stays unconfirmed: the totals (ripgrep's ``--stats`` counts) and, in the two listing
modes, that the file ripgrep searched under a name is the one found under it now.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from tools.common import ToolFailure, cut_line
from tools.confined import stat_beneath
from tools.files import is_binary, read_bytes

BOM = "\ufeff"


def _lines_of(root: Path, rel: str) -> list[str] | None:
    """The lines of the workspace file ``rel`` as Grep shows them, or None when it cannot be
    opened through the confined walk (or is binary)."""
    try:
        data = read_bytes(root, root / rel, rel)
    except (ToolFailure, ValueError):
        return None
    if is_binary(data):
        return None
    return data.decode("utf-8", "replace").removeprefix(BOM).split("\n")


def confirm_lines(root: Path, found: list[dict[str, Any]], max_chars: int) -> int:
    """Drop from ``found`` (``{file, line, text}``) every line the confined read does not
    show; return how many were dropped."""
    cache: dict[str, list[str] | None] = {}
    kept: list[dict[str, Any]] = []
    for match in found:
        rel = match["file"]
        if rel not in cache:
            cache[rel] = _lines_of(root, rel)
        lines = cache[rel]
        number = match["line"]
        if lines is None or not 1 <= number <= len(lines):
            continue
        if cut_line(lines[number - 1].removesuffix("\r"), max_chars) == match["text"]:
            kept.append(match)
    dropped = len(found) - len(kept)
    found[:] = kept
    return dropped


def is_workspace_file(root: Path, rel: str) -> bool:
    """Whether ``rel`` is, through the confined walk, a regular file of the workspace."""
    try:
        return stat.S_ISREG(stat_beneath(root, root / rel).st_mode)
    except (OSError, ValueError):
        return False
