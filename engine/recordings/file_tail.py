"""The lines appended to a file since the last look (``ctxscope watch``).

:class:`FileTail` reads only the bytes appended since its last look: it remembers the
offset, keeps a half-written last line until its end arrives, and starts again from the
beginning when the file was replaced or truncated (another inode, a size below the offset, or
other first bytes). It opens the file for reading only, reads at most :data:`LOOK_BYTES` per
look, and drops a line longer than :data:`~engine.recordings.base.MAX_LINE_CHARS` as it
comes (never holding it whole); a path that is no longer a regular file is said, not opened.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from engine.recordings.base import MAX_LINE_CHARS

HEAD_BYTES = 256
"""The first bytes of a file, compared at each look: other bytes there mean another file."""
LOOK_BYTES = 64 * 1024 * 1024
"""Bytes read at most per look (the rest at the next): a huge append is never read whole."""


@dataclass
class Chunk:
    """What one look at a file found."""

    lines: list[bytes | None]
    """Complete lines appended since the last look (without their line ends); None for a
    line longer than :data:`~engine.recordings.base.MAX_LINE_CHARS`, dropped as it came."""
    reset: bool = False
    """The file was replaced or truncated: ``lines`` start again from its first line."""
    error: str = ""
    """Why the file could not be read at this look (it stays followed)."""


class FileTail:
    """The lines appended to one file since the last :meth:`read`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""
        self.skipping = False
        """Inside a line over the cap: dropping bytes until its end."""
        self.identity: tuple[int, int] | None = None
        self.head = b""

    def read(self) -> Chunk:
        """The complete lines written since the last call; nothing while the file is absent."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return Chunk([])
        except OSError as exc:
            return Chunk([], error=f"cannot read it: {exc.strerror or exc}")
        if not stat.S_ISREG(st.st_mode):
            return Chunk([], error="not a regular file; not opened")
        identity = (st.st_dev, st.st_ino)
        reset = False
        if self.identity is not None and (identity != self.identity or st.st_size < self.offset):
            reset = True
        elif st.st_size == self.offset:
            return Chunk([])
        try:
            with open(self.path, "rb") as f:
                if not reset and self.head:
                    if f.read(len(self.head)) != self.head:
                        reset = True
                if reset:
                    self.offset, self.partial, self.head, self.skipping = 0, b"", b"", False
                f.seek(self.offset)
                data = f.read(LOOK_BYTES)
        except OSError as exc:
            return Chunk([], error=f"cannot read it: {exc.strerror or exc}")
        self.identity = identity
        self.offset += len(data)
        if len(self.head) < HEAD_BYTES:
            self.head = (self.head + data)[:HEAD_BYTES]
        return Chunk(self._lines(data), reset)

    def _lines(self, data: bytes) -> list[bytes | None]:
        out: list[bytes | None] = []
        if self.skipping:
            end = data.find(b"\n")
            if end < 0:
                return out
            data, self.skipping = data[end + 1 :], False
        pieces = (self.partial + data).split(b"\n")
        self.partial = pieces.pop()  # b"" after a line end; else a line still being written
        for piece in pieces:
            out.append(None if len(piece) > MAX_LINE_CHARS else piece.rstrip(b"\r"))
        if len(self.partial) > MAX_LINE_CHARS:
            out.append(None)  # named now; the rest of it is dropped as it comes
            self.partial, self.skipping = b"", True
        return out
