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
    NotRead,
    known_lines,
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


def _lines(f: BinaryIO, long_lines: list[int]) -> Iterator[bytes]:
    """The file's lines, one at a time, a line over :data:`MAX_LINE_CHARS` read in 1 MB
    pieces and given as an empty line (its number in ``long_lines``)."""
    cap = MAX_LINE_CHARS  # in bytes: a line this long in bytes is at least as long in chars
    number = 0
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
                rest = _plain_rest(f, head, out)
                kept = _records(head, lines if rest is None else iter(()), out)
                if rest is not None:
                    kept[-1:] = rest  # where the head's last line end leaves off
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
        out.text = known_lines("\n".join(kept), kept)
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


def _plain_rest(f: BinaryIO, head: list[bytes], out: SessionText) -> list[str] | None:
    """The rest of a JSON-lines file after its ``head``, read at once and split at its line
    ends (``"\\n".join`` of the list is its text, each line decoded as :func:`_records`
    decodes one), when every line of it is a record that :func:`_records` would keep as it
    is: it can hold no line over :data:`MAX_LINE_CHARS` nor pass :data:`MAX_KEPT_BYTES`, and
    each line begins a record. The common case, without :func:`_records`' loop over each
    line (issue 44); else None, the file where it was."""
    at = f.tell()
    size = os.fstat(f.fileno()).st_size - at
    if size <= 0 or size > MAX_LINE_CHARS or size + sum(map(len, head)) > MAX_KEPT_BYTES:
        return None
    data = f.read(size)
    lines = data.split(b"\n")
    last = lines[-1]
    plain = (
        len(data) == size
        and not f.read(1)  # not grown since: what is read is the whole rest
        and all(line.startswith(RECORD_STARTS) for line in itertools.islice(lines, len(lines) - 1))
        and (not last or last.startswith(RECORD_STARTS))
    )
    if not plain:
        f.seek(at)
        return None
    texts = [line.decode("utf-8", errors="replace") for line in lines]
    for line, text in zip(lines, texts, strict=True):
        if "\ufffd" in text:
            out.not_utf8 += text.count("\ufffd") - line.count(_REPLACEMENT)
    return texts


def _records(head: list[bytes], rest: Iterator[bytes], out: SessionText) -> list[str]:
    """A JSON-lines file's lines, each decoded without its line end (bytes that are not UTF-8
    read as U+FFFD, counted in ``out.not_utf8``): ``"\\n".join`` of them is the text. Record
    lines kept up to :data:`MAX_KEPT_BYTES` (the rest empty lines, counted in
    ``out.left_out``); the first :data:`MAX_LINES_KEPT` other lines shortened to a stand-in
    the line reader counts and names as it did the line, the others empty lines counted
    here, a run at a time. Decoded line by line, not whole (issue 44): CPython's decoder
    takes its fast ASCII path only until the first other character, so a session with one
    emoji early on decodes 5-10x slower whole."""
    lines: list[str] = []
    kept = 0
    full = False
    stand_ins = 0
    ended = True  # the last line kept had its line end
    run_why, run_start, run_length = "", 0, 0

    def end_run() -> None:
        nonlocal run_length
        if run_length:
            out.left_out.line(run_why, run_start, count=run_length)
            lines.extend([""] * run_length)
            run_length = 0

    for number, line in enumerate(itertools.chain(head, rest), start=1):
        if not line.startswith(RECORD_STARTS) or full or kept + len(line) > MAX_KEPT_BYTES:
            # Not the common case, a record that fits: a blank line is kept too.
            stripped = line.strip()
            if stripped and _is_record_line(stripped):
                if full or kept + len(line) > MAX_KEPT_BYTES:
                    full = True  # the rest of the file, not a shorter line that would fit
                    why = PAST_CAP
                    if run_length and why != run_why:
                        end_run()
                    if not run_length:
                        run_why, run_start = why, number
                    run_length += 1
                    continue
            elif stripped:
                why = "comment" if stripped.startswith((b"//", b"#")) else "not JSON"
                if stand_ins < MAX_LINES_KEPT:
                    # Two bytes: a comment stays one, anything else is not JSON; a last line
                    # without its end keeps none (the reader names it a cut last line).
                    stand_ins += 1
                    end_run()
                    lines.append("//" if why == "comment" else "?")
                    ended = line.endswith(b"\n")
                    continue
                if run_length and why != run_why:
                    end_run()
                if not run_length:
                    run_why, run_start = why, number
                run_length += 1
                continue
        if run_length:
            end_run()
        kept += len(line)
        ended = line.endswith(b"\n")
        text = (line[:-1] if ended else line).decode("utf-8", errors="replace")
        if "\ufffd" in text:
            out.not_utf8 += text.count("\ufffd") - line.count(_REPLACEMENT)
        lines.append(text)
    end_run()
    if ended:
        lines.append("")  # the text ends with a line end (or is empty)
    return lines


def special_file(path: Path) -> str:
    """What ``path`` is when it is neither a regular file nor a folder ("a FIFO (named
    pipe)"...), "" otherwise or when it is not there."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return ""
    return "" if stat.S_ISDIR(mode) else special_mode(mode)
