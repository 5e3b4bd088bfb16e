"""Confinement: every path a tool touches resolves inside the workspace.

A path argument is taken relative to the workspace (absolute paths are accepted when they
point inside it), then resolved with symlinks followed. Anything that lands outside — ``..``,
an absolute path elsewhere, a symlink (even a dangling one) leading out — is refused with
``path_outside_workspace``. Directory walks never follow symlinks (see ``tools.walk``), and
the checked path is then opened one component at a time without following a link
(``tools.confined``), so a link swapped in after the check is refused, not followed.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from tools.base import ToolContext
from tools.common import ToolFailure


def workspace_root(ctx: ToolContext) -> Path:
    """The workspace as an absolute path with its own symlinks resolved."""
    return ctx.workspace.resolve()


def resolve_path(ctx: ToolContext, raw: str) -> Path:
    """The absolute, symlink-resolved path that ``raw`` names inside the workspace.

    Raises :class:`ToolFailure` ``path_outside_workspace`` when it escapes, ``invalid_path``
    when it is empty or holds a NUL byte.
    """
    if not raw.strip() or "\0" in raw:
        raise ToolFailure("invalid_path", f"{raw!r} is not a usable path.")
    root = workspace_root(ctx)
    candidate = Path(os.path.expanduser(raw)) if raw.startswith("~") else Path(raw)
    if not candidate.is_absolute():
        candidate = root / candidate
    resolved = _realpath(candidate, raw)
    try:
        os.lstat(resolved)
    except FileNotFoundError:
        pass  # a new file (Write) or a typo the tool reports itself
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise ToolFailure(
                "path_too_long",
                f"The path {raw[:60]!r}… is too long for the file system ({len(raw)} "
                "characters; at most 255 per name).",
            ) from None
    if not is_inside(resolved, root):
        raise ToolFailure(
            "path_outside_workspace",
            f"{raw!r} resolves to {resolved}, which is outside the workspace {root}. "
            "Tools may only use paths inside the workspace.",
            path=raw,
        )
    return resolved


RESOLVE_ATTEMPTS = 3
"""How often a path that changes while it is resolved is tried again before giving up."""


def _realpath(candidate: Path, raw: str) -> Path:
    """``os.path.realpath``, tried again when a component changes under it (a link swapped
    for a file between its ``lstat`` and ``readlink`` raises ``EINVAL``)."""
    for _ in range(RESOLVE_ATTEMPTS):
        try:
            return Path(os.path.realpath(candidate))
        except OSError:
            continue
    raise ToolFailure(
        "path_changed",
        f"{raw!r} kept changing while it was resolved (a link being swapped); try again.",
        path=raw,
    )


def is_inside(path: Path, root: Path) -> bool:
    """True when ``path`` is ``root`` or below it (both already resolved)."""
    return path == root or path.is_relative_to(root)


def display_path(ctx: ToolContext, path: Path) -> str:
    """``path`` relative to the workspace in POSIX form (``.`` for the workspace itself)."""
    rel = path.relative_to(workspace_root(ctx))
    text = rel.as_posix()
    return text if text else "."


def symlink_target_inside(path: Path, root: Path) -> bool:
    """For a symlink found while walking: does it resolve inside ``root``?"""
    return is_inside(Path(os.path.realpath(path)), root)


def refuse_control_file(ctx: ToolContext, path: Path) -> None:
    """Refuse a write to one of the workspace's control files (``ctxscope.toml``,
    ``CODE_LAW.md``, git's config and hooks…: :data:`tools.sandbox_init.CONTROL_FILES`), or
    below one: the agent may not change the settings and law it runs under, nor what the
    user's own tools run outside the sandbox. The user edits them."""
    from tools.sandbox_init import CONTROL_FILES  # ctypes and the sandbox: a write needs them

    root = workspace_root(ctx)
    for name in CONTROL_FILES:
        if is_inside(path, root / name):
            raise ToolFailure(
                "control_file",
                f"{display_path(ctx, path)} is a control file of the workspace (settings, "
                "law or what git runs); the agent may not write it. Ask the user to change it.",
                path=display_path(ctx, path),
            )
