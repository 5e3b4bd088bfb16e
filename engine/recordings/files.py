"""Opening what ``import`` and ``watch`` are given: regular text files only, read in bounded
pieces.

A FIFO, a device or a socket is named for what it is and never opened (reading a FIFO would
wait for a writer); a file with a NUL byte in its first 8 KB is "not a text session file"; a
line longer than :data:`~engine.recordings.base.MAX_LINE_CHARS` is read in 1 MB pieces and
dropped, never held whole; bytes that are not UTF-8 are read as U+FFFD and counted. The format
is told from the first lines (:func:`read_session`): a JSON-lines file is streamed and keeps
only what can be a record, a file in no known format is refused from its head alone.
"""

from __future__ import annotations

import itertools
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from engine.recordings.base import (
    MAX_LINE_CHARS,
    MAX_LINES_KEPT,
    ImportError_,
    Known,
    NotRead,
)

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


HEAD_LINES = 200
"""Lines read to tell a JSON-lines session from a whole document or an unknown file."""
MAX_WHOLE_BYTES = 256 * 1024 * 1024
"""The largest file read whole (a JSON document, an aider history): a larger one is refused.
JSON-lines sessions are streamed and have no such limit."""
MAX_KEPT_BYTES = 64 * 1024 * 1024
"""Bytes of records kept from one JSON-lines file; the lines after are counted, not read
(what bounds an import's memory: docs/benchmarks.md)."""
PAST_CAP = "past the 64 MB of records one file may give"


@dataclass
class SessionText:
    """A session file as the readers get it."""

    text: str
    """Its text; in a JSON-lines file a line that cannot be a record (not ``{…`` or ``[…``)
    is shortened to ``?`` (``//`` for a comment), which the line reader counts and names as
    it did the line, and every record past :data:`MAX_KEPT_BYTES` is an empty line (its
    number kept, its text not)."""
    long_lines: list[int] = field(default_factory=list)
    """Lines over :data:`MAX_LINE_CHARS`, dropped while reading."""
    not_utf8: int = 0
    """Byte sequences that are not UTF-8, read as U+FFFD."""
    left_out: NotRead = field(default_factory=NotRead)
    """Records left out while reading, past the cap: counted, the first few numbered."""
    whole: bool = False
    """Read whole (a JSON document, an aider history, an unknown file's head)."""
    lines: list[str] | None = None
    """A JSON-lines file's lines as read, each without its ``\\n`` (``"\\n".join`` of them
    is :attr:`text`): its reader takes them as they are
    (:attr:`engine.recordings.base.Known.lines`). None for a file read whole."""

    def known(self) -> Known | None:
        """What a JSON-lines file's reader takes as read (its lines); None for a file read
        whole."""
        return None if self.lines is None else Known(self.lines)


def read_session_text(path: Path) -> tuple[str, list[int], int]:
    """:func:`read_session`'s text, long lines and bytes that are not UTF-8."""
    read = read_session(path)
    return read.text, read.long_lines, read.not_utf8


def _open_regular(path: Path) -> BinaryIO:
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ImportError_([f"cannot read it: {exc.strerror or exc}"], source=str(path)) from None
    special = special_mode(mode)
    if special:
        raise ImportError_([f"{special}, not a session file; not opened"], source=str(path))
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except OSError as exc:
        raise ImportError_([f"cannot read it: {exc.strerror or exc}"], source=str(path)) from None


def _lines(f: BinaryIO, long_lines: list[int], number: int = 0) -> Iterator[bytes]:
    """The file's lines (the first of them line ``number + 1``), one at a time, a line over
    :data:`MAX_LINE_CHARS` read in 1 MB pieces and given as an empty line (its number in
    ``long_lines``)."""
    cap = MAX_LINE_CHARS  # in bytes: a line this long in bytes is at least as long in chars
    while True:
        line = f.readline(cap + 1)
        if not line:
            return
        number += 1
        if len(line) > cap and not line.endswith(b"\n"):
            long_lines.append(number)
            while line and not line.endswith(b"\n"):
                line = f.readline(1 << 20)  # the rest of it, a MB at a time
            yield b"\n"
            continue
        yield line


RECORD_STARTS = (b"{", b"[")
"""How a record line (an object, or an array the line reader names as such) begins."""


def _is_record_line(line: bytes) -> bool:
    """Could this line (a JSON-lines file's) be a record: an object, a cut one, or a JSON
    array (which the line reader names as such)?"""
    return line.lstrip(b"\xef\xbb\xbf \t").startswith(RECORD_STARTS)


def read_session(path: Path) -> SessionText:
    """The file as the readers get it, read once, front to back. Its first
    :data:`HEAD_LINES` lines decide how: a file whose first non-blank line is a JSON object
    is JSON lines, streamed (a line that cannot be a record is shortened to a stand-in of two
    bytes; records up to :data:`MAX_KEPT_BYTES`); a file whose head holds no record, no JSON
    document and no aider heading is returned as that head (it is in no known format: the
    rest is never read); anything else is read whole, up to :data:`MAX_WHOLE_BYTES`. Raises
    :class:`ImportError_` for what is not a text file."""
    out = SessionText("")
    try:
        with _open_regular(path) as f:
            if b"\0" in f.read(TEXT_PROBE):
                raise ImportError_(
                    ["not a text session file (it holds NUL bytes: a binary file?)"],
                    source=str(path),
                )
            f.seek(0)
            lines = _lines(f, out.long_lines)
            head = list(itertools.islice(lines, HEAD_LINES))
            first = next((line for line in head if line.strip(b"\xef\xbb\xbf \t\r\n")), b"")
            records = _is_record_line(first) and _is_json_object(first)
            if records:
                rest = _rest(f, out.long_lines, len(head)) if len(head) == HEAD_LINES else lines
                kept = _records(head, rest, out)
            else:
                data = b"".join(head)
                pieces = [data]
                if _worth_reading_whole(data):
                    size = os.fstat(f.fileno()).st_size
                    if size > MAX_WHOLE_BYTES:
                        raise ImportError_(
                            [
                                f"{size // (1 << 20)} MB read whole (a JSON document or an aider "
                                f"history) is over the {MAX_WHOLE_BYTES >> 20} MB ctxscope reads; "
                                "not read"
                            ],
                            source=str(path),
                        )
                    pieces += lines
                    out.whole = True
    except OSError as exc:
        raise ImportError_([f"cannot read it: {exc.strerror or exc}"], source=str(path)) from None
    if records:
        out.text, out.lines = "\n".join(kept), kept
    else:
        out.text, out.not_utf8 = _decoded(pieces)
    return out


_REPLACEMENT = "\ufffd".encode()


def _decoded(pieces: list[bytes]) -> tuple[str, int]:
    """The text of ``pieces`` (whole lines), bytes that are not UTF-8 read as U+FFFD; and how
    many were. Decoded line by line, not whole (issue 44): CPython's decoder takes its fast
    ASCII path only until the first other character, so a session with one emoji early on
    decodes 5-10x slower whole; a line end never falls inside a UTF-8 sequence, so the text
    is the same either way."""
    texts = []
    not_utf8 = 0
    for piece in pieces:
        text = piece.decode("utf-8", errors="replace")
        if "\ufffd" in text:
            not_utf8 += text.count("\ufffd") - piece.count(_REPLACEMENT)
        texts.append(text)
    return "".join(texts), not_utf8


def _is_json_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line.lstrip(b"\xef\xbb\xbf")), dict)
    except (ValueError, RecursionError):
        return False


def _worth_reading_whole(head: bytes) -> bool:
    """Whether a file that is not JSON lines may be a known format: a JSON document, an aider
    history (a heading in its head) or JSON lines after some junk (a record in its head)."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if text.startswith(("{", "[")) or b"# aider chat started at" in head:
        return True
    return any(_is_record_line(line) for line in head.splitlines())


BLOCK = 1 << 20
"""Bytes read at a time past a JSON-lines file's head."""


def _rest(f: BinaryIO, long_lines: list[int], number: int) -> Iterator[bytes | list[bytes]]:
    """The lines after a JSON-lines file's head (the first of them line ``number + 1``), read
    a block at a time and split at their line ends (issue 44: no ``readline`` per line): a
    run of lines that each begin a record comes as one list, their bytes without their line
    ends; any other line alone, as :func:`_lines` gives it (with its end; a line over
    :data:`MAX_LINE_CHARS` an empty line, its number in ``long_lines``; a last line without
    its end, without)."""
    cap = MAX_LINE_CHARS
    carry: list[bytes] = []  # the start of a line no block read so far ends
    carried = 0
    dropping = False  # that line is over the cap: its bytes are not kept
    while block := f.read(BLOCK):
        pieces = block.split(b"\n")
        tail = pieces.pop()  # what follows the block's last line end
        if pieces and dropping:
            dropping = False
            number += 1
            yield b"\n"
            del pieces[0]
        elif pieces and carry:
            carry.append(pieces[0])
            pieces[0] = b"".join(carry)
            carry, carried = [], 0
        if pieces:
            if max(map(len, pieces)) <= cap and all(p.startswith(RECORD_STARTS) for p in pieces):
                number += len(pieces)
                yield pieces
            else:
                for piece in pieces:
                    number += 1
                    if len(piece) > cap:
                        long_lines.append(number)
                        yield b"\n"
                    else:
                        yield piece + b"\n"
        if tail and not dropping:
            carry.append(tail)
            carried += len(tail)
            if carried > cap:
                long_lines.append(number + 1)
                dropping = True
                carry, carried = [], 0
    if dropping:
        yield b"\n"  # a last line over the cap, never ended
    elif carry:
        yield b"".join(carry)  # a last line without its end


class _Kept:
    """A JSON-lines file's lines as the readers get them (:func:`_records`)."""

    def __init__(self, out: SessionText) -> None:
        self.out = out
        self.lines: list[str] = []
        self.number = 0
        self.kept = 0
        """Bytes of records kept."""
        self.full = False
        self.stand_ins = 0
        self.ended = True
        """The last line kept had its line end."""
        self.run_why, self.run_start, self.run_length = "", 0, 0

    def records(self, raw: list[bytes]) -> None:
        """Lines that each begin a record, without their ends (:func:`_rest`): kept at once
        when they all fit, else one by one."""
        size = sum(map(len, raw)) + len(raw)
        if self.full or self.kept + size > MAX_KEPT_BYTES:
            for line in raw:
                self.line(line + b"\n")
            return
        self.end_run()
        texts = [line.decode("utf-8", errors="replace") for line in raw]
        for i in [i for i, text in enumerate(texts) if "\ufffd" in text]:
            self.out.not_utf8 += texts[i].count("\ufffd") - raw[i].count(_REPLACEMENT)
        self.lines += texts
        self.kept += size
        self.number += len(raw)
        self.ended = True

    def line(self, line: bytes) -> None:
        """One line (with its end, but for a last line without)."""
        self.number += 1
        if (
            not line.startswith(RECORD_STARTS)
            or self.full
            or self.kept + len(line) > MAX_KEPT_BYTES
        ):
            # Not the common case, a record that fits: a blank line is kept too.
            stripped = line.strip()
            if stripped and _is_record_line(stripped):
                if self.full or self.kept + len(line) > MAX_KEPT_BYTES:
                    self.full = True  # the rest of the file, not a shorter line that would fit
                    self.left_out(PAST_CAP)
                    return
            elif stripped:
                why = "comment" if stripped.startswith((b"//", b"#")) else "not JSON"
                if self.stand_ins < MAX_LINES_KEPT:
                    # Two bytes: a comment stays one, anything else is not JSON; a last line
                    # without its end keeps none (the reader names it a cut last line).
                    self.stand_ins += 1
                    self.end_run()
                    self.lines.append("//" if why == "comment" else "?")
                    self.ended = line.endswith(b"\n")
                    return
                self.left_out(why)
                return
        self.end_run()
        self.kept += len(line)
        self.ended = line.endswith(b"\n")
        text = (line[:-1] if self.ended else line).decode("utf-8", errors="replace")
        if "\ufffd" in text:
            self.out.not_utf8 += text.count("\ufffd") - line.count(_REPLACEMENT)
        self.lines.append(text)

    def left_out(self, why: str) -> None:
        """The line is left out: counted with the run of lines left out for the same reason."""
        if self.run_length and why != self.run_why:
            self.end_run()
        if not self.run_length:
            self.run_why, self.run_start = why, self.number
        self.run_length += 1

    def end_run(self) -> None:
        if self.run_length:
            self.out.left_out.line(self.run_why, self.run_start, count=self.run_length)
            self.lines += [""] * self.run_length
            self.run_length = 0


def _records(head: list[bytes], rest: Iterator[bytes | list[bytes]], out: SessionText) -> list[str]:
    """A JSON-lines file's lines, each decoded without its line end (bytes that are not UTF-8
    read as U+FFFD, counted in ``out.not_utf8``): ``"\\n".join`` of them is the text. Record
    lines kept up to :data:`MAX_KEPT_BYTES` (the rest empty lines, counted in
    ``out.left_out``); the first :data:`MAX_LINES_KEPT` other lines shortened to a stand-in
    the line reader counts and names as it did the line, the others empty lines counted
    here, a run at a time. Decoded line by line, not whole (issue 44): CPython's decoder
    takes its fast ASCII path only until the first other character, so a session with one
    emoji early on decodes 5-10x slower whole."""
    kept = _Kept(out)
    if all(line.startswith(RECORD_STARTS) and line.endswith(b"\n") for line in head):
        kept.records([line[:-1] for line in head])  # the common head, as a run of records
    else:
        for line in head:
            kept.line(line)
    for unit in rest:
        if isinstance(unit, list):
            kept.records(unit)
        else:
            kept.line(unit)
    kept.end_run()
    if kept.ended:
        kept.lines.append("")  # the text ends with a line end (or is empty)
    return kept.lines


def special_file(path: Path) -> str:
    """What ``path`` is when it is neither a regular file nor a folder ("a FIFO (named
    pipe)"...), "" otherwise or when it is not there."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return ""
    return "" if stat.S_ISDIR(mode) else special_mode(mode)
