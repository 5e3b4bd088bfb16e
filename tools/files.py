"""Reading and writing text files the way the file tools need it.

- binary files (a NUL byte in the first 8 KiB, git's heuristic) are refused;
- UTF-8 (with or without BOM) is decoded as such; anything else is decoded as Latin-1, which
  never fails and round-trips every byte, so an Edit of a legacy file changes only what it
  replaces;
- pure CRLF files are edited as LF and written back as CRLF;
- only regular files are opened (a FIFO or a device would hang the agent or never end), and
  they are opened non-blocking so a file swapped for a FIFO after the check cannot hang either;
- every open, read or write, goes through the confined walk of ``tools.confined``: from the
  workspace directory, one component at a time, never through a link;
- writes are atomic: a temporary file in the same directory, fsync, then ``os.replace``
  in the directory's descriptor, so a directory swapped for a symlink mid-write cannot send
  the write outside the workspace; the temporary file is removed on every failure;
- the freshness rule of seed C4 guards edits: a file must have been Read in this session and
  be unchanged since — same mtime, same size and same content hash (a same-mtime change, e.g.
  on a coarse-clock file system, is still caught).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tools.base import Fingerprint, ToolContext
from tools.common import ToolFailure
from tools.confined import SWAPPED, open_beneath, open_parent, stat_beneath

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


READ_CHUNK = 1 << 20


def not_regular(shown: str, mode: int) -> ToolFailure:
    kind = (
        "a FIFO (named pipe)"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )
    return ToolFailure(
        "not_a_regular_file",
        f"{shown} is {kind}; the file tools only read regular files (reading it could block "
        "forever).",
    )


def _opened_failure(exc: OSError, shown: str) -> ToolFailure:
    if isinstance(exc, FileNotFoundError):
        return ToolFailure("not_found", f"{shown} does not exist. Check the path with LS or Glob.")
    if exc.errno in SWAPPED:
        return ToolFailure(
            "path_outside_workspace",
            f"Cannot read {shown}: it or a directory on its path is (or just became) a "
            "symlink or not a directory; the file tools never open through a link.",
        )
    return ToolFailure("read_failed", f"Cannot read {shown}: {exc.strerror or exc}.")


def require_file_or_dir(root: Path, path: Path, shown: str) -> os.stat_result:
    """``path``'s stat when it is a regular file or a directory; else a :class:`ToolFailure`.

    The stat is taken through the confined walk (:mod:`tools.confined`), never through a link.
    """
    try:
        st = stat_beneath(root, path)
    except OSError as exc:
        raise _opened_failure(exc, shown) from None
    if stat.S_ISLNK(st.st_mode):
        raise _opened_failure(OSError(errno.ELOOP, "symlink"), shown)
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise not_regular(shown, st.st_mode)
    return st


@contextlib.contextmanager
def open_regular(root: Path, path: Path, shown: str) -> Iterator[tuple[int, os.stat_result]]:
    """An open descriptor of the regular file ``path`` and its stat, or a :class:`ToolFailure`.

    Opened through the confined walk (no link followed, see :mod:`tools.confined`),
    non-blocking (a FIFO put in its place cannot hang the open) and checked on the descriptor
    itself, so what is read is what was checked.
    """
    try:
        fd = open_beneath(root, path)
    except OSError as exc:
        raise _opened_failure(exc, shown) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ToolFailure("is_a_directory", f"{shown} is a directory; use LS to list it.")
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(shown, st.st_mode)
        os.set_blocking(fd, True)
        yield fd, st
    finally:
        os.close(fd)


def read_bytes(root: Path, path: Path, shown: str) -> bytes:
    """The bytes of a regular file, or a :class:`ToolFailure` a model can act on."""
    with open_regular(root, path, shown) as (fd, st):
        chunks = []
        try:
            while chunk := os.read(fd, READ_CHUNK):
                chunks.append(chunk)
        except OSError as exc:
            raise ToolFailure(
                "read_failed", f"Cannot read {shown}: {exc.strerror or exc}."
            ) from None
        return b"".join(chunks)


def fingerprint_of(root: Path, path: Path, shown: str) -> Fingerprint:
    """The current :class:`Fingerprint` of a regular file (hashed in chunks)."""
    with open_regular(root, path, shown) as (fd, st):
        digest = hashlib.sha256()
        while chunk := os.read(fd, READ_CHUNK):
            digest.update(chunk)
        return Fingerprint(st.st_mtime, st.st_size, digest.hexdigest())


def load_text(root: Path, path: Path, shown: str) -> TextFile:
    """Read and decode a text file; binary files raise ``binary_file``."""
    data = read_bytes(root, path, shown)
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


def atomic_write(root: Path, path: Path, data: bytes) -> float:
    """Write ``data`` to ``path`` (inside ``root``) so readers see the old file or the new.

    The permission bits of an existing file are kept; a new file gets ``0666 & ~umask``.
    On any failure the temporary file is removed and the original is left untouched.
    Returns the new file's mtime (taken on the descriptor: rename keeps it).
    """
    dir_fd = open_parent(root, path, create=True)
    name = path.name
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    created = False
    try:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        else:
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.ELOOP if stat.S_ISLNK(st.st_mode) else errno.EINVAL, name)
            mode = st.st_mode & 0o7777
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd
        )
        created = True
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
            mtime = os.fstat(handle.fileno()).st_mtime
        # rename(2) replaces the name itself, never a symlink's target.
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        created = False
        return mtime
    finally:
        if created:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
        os.close(dir_fd)


def write_file(ctx: ToolContext, path: Path, shown: str, data: bytes) -> float:
    """Atomically write ``data``, record what was written for the freshness rule, return mtime."""
    root = ctx.workspace.resolve()
    try:
        mtime = atomic_write(root, path, data)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ToolFailure(
                "path_outside_workspace",
                f"Could not write {shown}: a directory on its path is (or just became) a "
                "symlink or not a directory; writes never follow links. The file was left "
                "unchanged.",
            ) from None
        raise ToolFailure(
            "write_failed",
            f"Could not write {shown}: {exc.strerror or exc}. The file was left unchanged.",
        ) from None
    key = str(path)
    ctx.mtimes[key] = mtime
    ctx.fingerprints[key] = Fingerprint(mtime, len(data), hashlib.sha256(data).hexdigest())
    return mtime


def require_fresh(ctx: ToolContext, path: Path, shown: str) -> None:
    """Refuse to change a file not Read in this session, or changed on disk since (C4).

    Changed means a different mtime, size or content hash than when it was last read (or
    written by a tool).
    """
    key = str(path)
    if key not in ctx.mtimes:
        raise ToolFailure(
            "not_read",
            f"{shown} has not been read in this session. Read it first so the change is "
            "based on its current content.",
        )
    known = ctx.fingerprints.get(key)
    current = fingerprint_of(ctx.workspace.resolve(), path, shown)
    changed = (
        current.mtime != ctx.mtimes[key]
        if known is None
        else (current.mtime, current.size, current.sha256)
        != (known.mtime, known.size, known.sha256)
    )
    if changed:
        raise ToolFailure(
            "modified_since_read",
            f"{shown} was modified externally since you last read it. "
            "Read it again, then redo the change.",
        )
