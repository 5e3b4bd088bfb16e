"""Which stored session already holds a recording: one recording, one session.

A file imported with ``import FILE``, imported again after it grew, followed by ``watch``, or
read by the whole-history import (``import`` without a path) is one recording, stored in the
session that first held it: a second session of it would count its requests and cost twice in
every total (``report`` sums every session). It is found again by

- the digest of its bytes (``import FILE``'s ``source``: the same bytes under any name),
- the path an import remembered (:class:`~engine.store.history.ImportedFile`: what the file
  was then, so that it is known as unchanged, grown or rewritten), or
- the path and the recorded session id a ``watch`` follows (:func:`watched_source`).

A file is known by its size, modification time and a hash of its first bytes (a Claude Code
session also by its subagent files'): the same in all of these is unchanged; the same first
bytes and more of them is a file that grew; anything else was rewritten.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from engine.models import Session
from engine.recordings import agents
from engine.store import Store
from engine.store.errors import SessionNotFound
from engine.store.history import ImportedFile

HEAD_BYTES = 4096
State = Literal["new", "grown", "rewritten", "unchanged"]


def watched_source(path: Path, session_id: str, resolved: Path | None = None) -> str:
    """What a watched session is found again by: the file and its recorded session id
    (``resolved``: ``path.resolve()``, when the caller has it)."""
    return f"{resolved or path.resolve()}#{session_id}"


def remembered(store: Store, path: Path, resolved: Path | None = None) -> ImportedFile | None:
    """What an import remembered of ``path`` (by the name it was given, or the file's own;
    ``resolved``: ``path.resolve()``, when the caller has it)."""
    own = resolved or path.resolve()
    names = [n for n in (str(path), str(path.absolute()), str(own)) if storable(n)]
    return store.imported_file(*dict.fromkeys(names)) if names else None


def storable(text: str) -> bool:
    """Whether ``text`` can be stored as it is: a file name that is not UTF-8 (its bytes
    read as surrogates) cannot, and is not looked up or remembered."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def stored_recording(
    store: Store,
    path: Path,
    index: int,
    session_id: str,
    digest_key: str | None = None,
    earlier_keys: Sequence[str] = (),
) -> Session | None:
    """The session holding the ``index``-th recording of ``path`` already, if any: by its
    bytes (``digest_key``), the path an import remembered, the path a watch follows
    (``session_id``: the session id the recording names), or the bytes of a shorter copy of
    it (``earlier_keys``: copies whose bytes begin this file, as Entire keeps a session in
    each checkpoint it reaches)."""
    candidates: list[Session | None] = []
    resolved = path.resolve()  # once: the history import asks for every file it stores
    if not storable(str(resolved)):
        return None
    if digest_key:
        candidates.append(store.session_for_source(digest_key))
    before = remembered(store, path, resolved)
    if before is not None and index < len(before.sessions):
        try:
            candidates.append(store.get_session(before.sessions[index]))
        except SessionNotFound:  # deleted since
            pass
    candidates.append(store.session_for_source(watched_source(path, session_id, resolved)))
    candidates += (store.session_for_source(key) for key in earlier_keys)
    return next((c for c in candidates if c is not None), None)


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


__all__ = [
    "HEAD_BYTES",
    "State",
    "fingerprint",
    "remembered",
    "storable",
    "state_of",
    "stored_recording",
    "watched_source",
]
