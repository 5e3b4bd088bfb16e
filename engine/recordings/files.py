"""Opening what ``import`` and ``watch`` are given: regular text files only, read in bounded
pieces.

A FIFO, a device or a socket is named for what it is and never opened (reading a FIFO would
wait for a writer); a file with a NUL byte in its first 8 KB is "not a text session file"; a
line longer than :data:`~engine.recordings.base.MAX_LINE_CHARS` is read in 1 MB pieces and
dropped, never held whole; bytes that are not UTF-8 are read as U+FFFD and counted.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from engine.recordings.base import MAX_LINE_CHARS, ImportError_

TEXT_PROBE = 8192
"""Bytes looked at for a NUL: a file with one there is not text."""


def special_mode(mode: int) -> str:
    """What a path that is not a regular file is, in words ("" for a regular file)."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return ""


def read_session_text(path: Path) -> tuple[str, list[int], int]:
    """The file's text, its lines longer than :data:`MAX_LINE_CHARS` replaced by empty lines
    (read in pieces and dropped, never held whole), their numbers, and how many bytes were
    not UTF-8 (read as U+FFFD). Raises :class:`ImportError_` for what is not a text file."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ImportError_([f"cannot read it: {exc.strerror or exc}"], source=str(path)) from None
    special = special_mode(mode)
    if special:
        raise ImportError_([f"{special}, not a session file; not opened"], source=str(path))
    long_lines: list[int] = []
    parts: list[bytes] = []
    cap = MAX_LINE_CHARS  # in bytes: a line this long in bytes is at least as long in chars
    try:
        with open(path, "rb") as f:
            head = f.read(TEXT_PROBE)
            if b"\0" in head:
                raise ImportError_(
                    ["not a text session file (it holds NUL bytes: a binary file?)"],
                    source=str(path),
                )
            f.seek(0)
            number = 0
            while True:
                line = f.readline(cap + 1)
                if not line:
                    break
                number += 1
                if len(line) > cap and not line.endswith(b"\n"):
                    long_lines.append(number)
                    while line and not line.endswith(b"\n"):
                        line = f.readline(1 << 20)  # the rest of it, a MB at a time
                    parts.append(b"\n")
                    continue
                parts.append(line)
    except OSError as exc:
        raise ImportError_([f"cannot read it: {exc.strerror or exc}"], source=str(path)) from None
    data = b"".join(parts)
    text = data.decode("utf-8", errors="replace")
    bad = 0 if "\ufffd" not in text else text.count("\ufffd") - data.count("\ufffd".encode())
    return text, long_lines, bad


def special_file(path: Path) -> str:
    """What ``path`` is when it is neither a regular file nor a folder ("a FIFO (named
    pipe)"...), "" otherwise or when it is not there."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return ""
    return "" if stat.S_ISDIR(mode) else special_mode(mode)
