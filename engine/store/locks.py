"""Naming who holds a database: the processes with a write lock on its file (``/proc/locks``),
and the SQLite errors a user can meet at the disk (locked past the busy timeout, full) as one
line each.

SQLite locks with POSIX advisory locks: in WAL mode the writer's lock is a byte of the
``-shm`` file, in rollback mode a range of the database file itself. ``/proc/locks`` lists
each lock with its process id and the file's device and inode, so the writer can be named
even when it is not a ctxscope holding a session lease (an ``sqlite3`` shell, a backup).
"""

from __future__ import annotations

import os
from pathlib import Path


def lock_holders(path: Path) -> list[int]:
    """Process ids (other than this one) holding a write lock on ``path`` or its ``-shm``;
    empty where ``/proc/locks`` cannot be read."""
    inodes = _inodes(path)
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    pids: list[int] = []
    for line in lines:
        # "1: POSIX  ADVISORY  WRITE 4242 08:01:1234 120 120" (blocked waiters start "->")
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->" or fields[3] != "WRITE":
            continue
        try:
            pid = int(fields[4])
            major, minor, inode = fields[5].split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
        except ValueError:
            continue
        if key in inodes and pid != os.getpid() and pid not in pids:
            pids.append(pid)
    return pids


def held_by_anyone(path: Path) -> bool | None:
    """Does any process (this one included) hold a lock, read or write, on ``path`` or its
    ``-shm``? In WAL mode every open SQLite connection keeps a read lock on a byte of the
    ``-shm`` file for as long as it is open, so False means nobody has the database open;
    None where ``/proc/locks`` cannot be read (not Linux)."""
    inodes = _inodes(path)
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->":
            continue
        try:
            major, minor, inode = fields[5].split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
        except ValueError:
            continue
        if key in inodes:
            return True
    return False


def _inodes(path: Path) -> set[tuple[int, int, int]]:
    """(major, minor, inode) of ``path`` and its ``-shm``, as ``/proc/locks`` names files."""
    inodes = set()
    for candidate in (path, path.with_name(path.name + "-shm")):
        try:
            st = candidate.stat()
        except OSError:
            continue
        inodes.add((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
    return inodes


def describe_process(pid: int) -> str:
    """``pid 4242 (sqlite3 sessions/ctxscope.db)``: the id and, where readable, its command."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"pid {pid}"
    command = " ".join(raw.decode(errors="replace").replace("\0", " ").split())
    if len(command) > 60:
        command = command[:57] + "..."
    return f"pid {pid} ({command})" if command else f"pid {pid}"


def is_locked(exc: Exception) -> bool:
    """SQLite's "database is locked" / "busy", or PostgreSQL's lock timeout or deadlock."""
    text = str(exc)
    return any(word in text for word in ("locked", "busy", "lock timeout", "deadlock detected"))


def is_full(exc: BaseException) -> bool:
    """SQLITE_FULL ("database or disk is full"), or the OS saying the disk has no room.

    SQLite may roll a transaction back itself on SQLITE_FULL; peewee's own ROLLBACK then fails
    with "no transaction is active", and the full disk is that error's context: the chain is
    searched."""
    seen: BaseException | None = exc
    while seen is not None:
        text = str(seen)
        if "is full" in text or "No space left" in text:
            return True
        seen = seen.__context__
    return False


def full_message(path: Path) -> str:
    return (
        f"{path}: the disk is full (SQLite: database or disk is full); the change was rolled "
        "back and nothing of it was written; free some space and run the command again"
    )
