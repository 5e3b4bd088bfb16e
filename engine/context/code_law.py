"""Reading a workspace file for the context (L2 ``CODE_LAW.md``) under the tools' confinement.

The same rules as Read: the path, symlinks resolved, must stay inside the workspace, and only a
regular file is read (a FIFO would block the build forever). The resolved path is then opened
through the tools' confined walk (``tools.confined``: from the workspace directory, never
through a link), so a symlink swapped in after the check makes the read fail instead of
reading outside. A file that breaks the rules is not read; the caller reports why and leaves
its layer empty.
"""

from __future__ import annotations

from pathlib import Path

from tools.common import ToolFailure
from tools.files import read_bytes
from tools.paths import is_inside


class NotReadable(Exception):
    """The file may not (or cannot) be read into the context; the message says why."""


def read_workspace_text(path: Path, workspace: Path) -> str:
    """The text of ``path`` if it resolves to a regular file inside ``workspace``."""
    try:
        root = workspace.resolve()
        real = path.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, a vanished directory
        raise NotReadable(f"{path.name} cannot be resolved ({exc})") from None
    if not is_inside(real, root):
        raise NotReadable(f"{path.name} points to {real}, outside the workspace {root}")
    try:
        data = read_bytes(root, real, path.name)
    except ToolFailure as failure:
        raise NotReadable(failure.message) from None
    return data.decode("utf-8", errors="replace")
