"""Reading and writing text files the way the file tools need it.

- binary files (a NUL byte in the first 8 KiB, git's heuristic) are refused;
- UTF-8 (with or without BOM) is decoded as such; anything else is decoded as Latin-1, which
  never fails and round-trips every byte, so an Edit of a legacy file changes only what it
  replaces;
- pure CRLF files are edited as LF and written back as CRLF;
- writes are atomic: a temporary file in the same directory, fsync, then ``os.replace``;
- the mtime map of seed C4 guards edits: a file must have been Read in this session and be
  unchanged since.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tools.base import ToolContext
from tools.common import ToolFailure

BINARY_SNIFF_BYTES = 8192
"""How much of a file's head is searched for a NUL byte to call it binary (git uses 8000)."""

UTF8 = "utf-8"
UTF8_BOM = "utf-8-sig"
LATIN1 = "latin-1"


@dataclass
class TextFile:
    """A decoded text file: ``text`` always uses ``\\n``; encoding and newline say how to
    write it back."""

    text: str
    encoding: str
    newline: str

    def encode(self, text: str | None = None) -> bytes:
        """``text`` (default: this file's text) in this file's encoding and newline style."""
        body = self.text if text is None else text
        if self.newline != "\n":
            body = body.replace("\n", self.newline)
        try:
            return body.encode(self.encoding)
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end]
            raise ToolFailure(
                "encoding_error",
                f"The new text contains {bad!r}, which this file's encoding ({self.encoding}) "
                "cannot hold; use characters the file already uses.",
            ) from None


def count_lines(text: str) -> int:
    """Lines as an editor counts them (a last line without a newline still counts)."""
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def is_binary(head: bytes) -> bool:
    """True when the bytes hold a NUL within the sniffed head."""
    return b"\0" in head[:BINARY_SNIFF_BYTES]


def decode(data: bytes) -> TextFile:
    """Decode file bytes (see the module docstring for the rules)."""
    if data.startswith(b"\xef\xbb\xbf"):
        encoding = UTF8_BOM
    else:
        encoding = UTF8
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        encoding, text = LATIN1, data.decode(LATIN1)
    newline = "\n"
    crlf = text.count("\r\n")
    if crlf and crlf == text.count("\n"):
        newline, text = "\r\n", text.replace("\r\n", "\n")
    return TextFile(text=text, encoding=encoding, newline=newline)


def read_bytes(path: Path, shown: str) -> bytes:
    """The bytes of a regular file, or a :class:`ToolFailure` a model can act on."""
    if not path.exists():
        raise ToolFailure("not_found", f"{shown} does not exist. Check the path with LS or Glob.")
    if path.is_dir():
        raise ToolFailure("is_a_directory", f"{shown} is a directory; use LS to list it.")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ToolFailure("read_failed", f"Cannot read {shown}: {exc.strerror or exc}.") from None


def load_text(path: Path, shown: str) -> TextFile:
    """Read and decode a text file; binary files raise ``binary_file``."""
    data = read_bytes(path, shown)
    if is_binary(data):
        raise ToolFailure(
            "binary_file",
            f"{shown} is a binary file ({len(data)} bytes); the file tools only handle text.",
            size=len(data),
        )
    return decode(data)


def _umask() -> int:
    """The process umask, read without changing it (``os.umask`` would race threads)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new, never a mix.

    The permission bits of an existing file are kept; a new file gets ``0666 & ~umask``.
    On any failure the temporary file is removed and the original is left untouched.
    """
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_file(ctx: ToolContext, path: Path, shown: str, data: bytes) -> float:
    """Atomically write ``data``, record the new mtime in ``ctx.mtimes``, return it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
    except OSError as exc:
        raise ToolFailure(
            "write_failed",
            f"Could not write {shown}: {exc.strerror or exc}. The file was left unchanged.",
        ) from None
    mtime = path.stat().st_mtime
    ctx.mtimes[str(path)] = mtime
    return mtime


def require_fresh(ctx: ToolContext, path: Path, shown: str) -> None:
    """Refuse to change a file not Read in this session, or changed on disk since (C4)."""
    key = str(path)
    if key not in ctx.mtimes:
        raise ToolFailure(
            "not_read",
            f"{shown} has not been read in this session. Read it first so the change is "
            "based on its current content.",
        )
    current = path.stat().st_mtime
    if current != ctx.mtimes[key]:
        raise ToolFailure(
            "modified_since_read",
            f"{shown} was modified externally since you last read it. "
            "Read it again, then redo the change.",
        )
