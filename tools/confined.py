"""One confined open: every workspace file is reached from the workspace directory without
following a link.

Paths are first resolved and checked (``tools.paths``); what is then opened is not the path
by name — a symlink swapped in between would send the open outside — but the resolved path's
components, one by one, each opened relative to the descriptor of the one before with
``O_NOFOLLOW``. The resolved path holds no symlink, so a component that is one *now* was
swapped in after the check: the open fails with ``ELOOP`` (or ``ENOTDIR``) and nothing
outside is read. ``openat2(RESOLVE_BENEATH)`` would do the same in one call on Linux ≥ 5.6;
the walk works everywhere and costs one ``openat`` per directory.

Read, Edit, Write, Grep, Glob, LS and the CODE_LAW loader all open through here; the
directory walks (``tools.walk``) list and enter directories by descriptor the same way.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How a directory on the way is opened: never through a symlink."""
FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How a file is opened for reading: never through a symlink, and non-blocking so a FIFO
put in its place cannot hang the open."""

SWAPPED = (errno.ELOOP, errno.ENOTDIR)
"""What an open through a component that is (or just became) a symlink fails with."""


def parts_below(root: Path, path: Path) -> tuple[str, ...]:
    """``path``'s components below ``root`` (both resolved; ``path`` inside ``root``)."""
    return path.relative_to(root).parts


def open_dir(root: Path, parts: tuple[str, ...] | list[str], *, create: bool = False) -> int:
    """A descriptor of the directory ``root/parts…``, each component opened without
    following links (``create``: missing directories are made on the way).

    Raises ``OSError`` (``ELOOP`` / ``ENOTDIR`` when a component is a symlink or not a
    directory, ``ENOENT`` when it is missing).
    """
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_parent(root: Path, path: Path, *, create: bool = False) -> int:
    """A descriptor of ``path``'s directory (see :func:`open_dir`); ``path`` is not ``root``."""
    return open_dir(root, parts_below(root, path)[:-1], create=create)


def open_beneath(root: Path, path: Path, flags: int = FILE_FLAGS) -> int:
    """A descriptor of ``path`` (resolved, inside ``root``) opened with ``flags`` plus
    ``O_NOFOLLOW``, reached by :func:`open_dir`; ``root`` itself opens as a directory."""
    parts = parts_below(root, path)
    if not parts:
        return open_dir(root, ())
    parent = open_dir(root, parts[:-1])
    try:
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    finally:
        os.close(parent)


def stat_beneath(root: Path, path: Path) -> os.stat_result:
    """``path``'s own stat (a symlink is reported as one), reached by :func:`open_dir`."""
    parts = parts_below(root, path)
    if not parts:
        return os.stat(root)
    parent = open_dir(root, parts[:-1])
    try:
        return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
    finally:
        os.close(parent)


@contextlib.contextmanager
def opened_dir(root: Path, path: Path) -> Iterator[int]:
    """The directory ``path`` (inside ``root``) open as a descriptor for the block."""
    fd = open_dir(root, parts_below(root, path))
    try:
        yield fd
    finally:
        os.close(fd)


def read_small(dir_fd: int, name: str, limit: int = 1 << 20) -> bytes | None:
    """The bytes of the regular file ``name`` in ``dir_fd`` (at most ``limit``), or None when
    it is missing, a link, not a regular file or unreadable (a ``.gitignore``, say)."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size < limit and (chunk := os.read(fd, min(1 << 16, limit - size))):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
