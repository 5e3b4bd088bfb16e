"""Where a session's files live beside its database: seed 003's execution log, seed 004's raw
middles, the workbench's "always allow" answers.

The folder is ``<data dir>/<database key>/<session id>/``. Session ids restart at 1 in every
database, so ``<data dir>/<session id>/`` alone (the layout before issue 32) let two databases
in one folder write into the same folders and mix their logs. The key is the database file's
stem (``ctxscope`` for ``ctxscope.db``) when the data dir is the default ``data/`` beside the
database; a data dir set elsewhere (``data_dir``) may serve databases of the same name in
different folders, so there the key also carries a short hash of the database's full path.

A file found only at the old place is still read: it is copied to the new place the first time
the session asks for it (copied, not moved: the old folder may be another database's too).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

KEY_HASH_CHARS = 8
"""Hex digits of the database path's SHA-256 in a key under a shared data dir."""


def database_key(data_dir: Path, database: Path) -> str:
    """The folder name that keeps ``database``'s sessions apart in ``data_dir``."""
    stem = database.stem or "database"
    if _same(data_dir, database.parent / "data"):
        return stem
    digest = hashlib.sha256(str(database.resolve()).encode()).hexdigest()
    return f"{stem}-{digest[:KEY_HASH_CHARS]}"


def session_folder(data_dir: Path, database: Path, session_id: int) -> Path:
    """``<data dir>/<database key>/<session id>/`` (not created)."""
    return data_dir / database_key(data_dir, database) / str(session_id)


def legacy_session_folder(data_dir: Path, session_id: int) -> Path:
    """Where a session's files were before they were keyed by database."""
    return data_dir / str(session_id)


def session_file(
    data_dir: Path, database: Path, session_id: int, name: str, *, writable: bool = True
) -> Path:
    """The session's file ``name``: at its place in :func:`session_folder`; a file only at the
    old place is copied there first, or, when nothing may be written, read where it is."""
    path = session_folder(data_dir, database, session_id) / name
    old = legacy_session_folder(data_dir, session_id) / name
    if path.exists() or not old.is_file():
        return path
    if not writable:
        return old
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(old, path)
    except OSError:
        return old
    return path


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b
