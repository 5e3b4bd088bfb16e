"""Reading a JSON-lines session file (issue 44): past its head the rest is read a block at a
time and split at its line ends, a run of lines that each begin a record decoded at once
(``files._rest``, ``files._Kept.records``), as is a head made only of such lines; any other
line one by one as before; the text,
its lines as the line reader takes them (``SessionText.lines``, numbered by
``base.numbered``), the long lines, the bytes that are not UTF-8 and what was left out are the
same as when every line is read on its own (``files._lines``, made to read the rest here) and
its text's lines found again (``base.numbered_lines``).

Each file below is 250 records (``{"n": i}``, one a line, 11 or 12 bytes with the line end)
and then what the case adds: the first :data:`~engine.recordings.files.HEAD_LINES` (200)
are the head, read with ``readline`` in both ways; what follows is the rest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.recordings import base, files

RECORDS = b"".join(b'{"n": %d}\n' % i for i in range(250))
LONG = b'{"long": "' + b"x" * 200 + b'"}'
"""A record of 212 bytes: over the cap of 100 these tests set."""


def read_both(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[files.SessionText, list[tuple[int, str, bool]], int]:
    """The file read as it is now, its numbered lines, and how many lines came in runs
    read at once; checked against the same file read a line at a time."""
    at_once: list[int] = []
    records = files._Kept.records

    def spied(kept: files._Kept, raw: list[bytes]) -> None:
        at_once.append(len(raw))
        records(kept, raw)

    with monkeypatch.context() as patch:
        patch.setattr(files._Kept, "records", spied)
        fast = files.read_session(path)
    assert fast.lines is not None and "\n".join(fast.lines) == fast.text
    fast_lines = list(base.numbered(fast.lines, skip_blank=True))
    with monkeypatch.context() as patch:
        patch.setattr(files, "_rest", files._lines)
        slow = files.read_session(path)
    slow_lines = list(base.numbered_lines(slow.text, skip_blank=True))
    assert fast.text == slow.text
    assert fast_lines == slow_lines
    assert (fast.long_lines, fast.not_utf8) == (slow.long_lines, slow.not_utf8)
    assert fast.left_out.as_json() == slow.left_out.as_json()
    return fast, fast_lines, sum(at_once)


@pytest.mark.parametrize("block", [files.BLOCK, 7, 64])
def test_plain_records_are_read_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """250 records, each line ended, read in blocks of 1 MB, 7 or 64 bytes (a line across
    blocks): all 250 read at once (the head's 200, then the rest's 50); 250 line ends; line
    250 is ``{"n": 249}``."""
    monkeypatch.setattr(files, "BLOCK", block)
    path = tmp_path / "s.jsonl"
    path.write_bytes(RECORDS)
    read, lines, at_once = read_both(path, monkeypatch)
    assert at_once == 250
    assert read.text.count("\n") == 250
    assert lines[-1] == (250, '{"n": 249}', False)


def test_a_cut_last_line_stays_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A last line without its end (a file still being written) is line 251, marked cut."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(RECORDS + b'{"n": 25')
    _, lines, at_once = read_both(path, monkeypatch)
    assert at_once == 250
    assert lines[-1] == (251, '{"n": 25', True)


def test_crlf_line_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CRLF line ends: each record still begins its line; the reader drops the CR."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(RECORDS.replace(b"\n", b"\r\n"))
    _, lines, at_once = read_both(path, monkeypatch)
    assert at_once == 250
    assert lines[-1] == (250, '{"n": 249}', False)


def test_bytes_that_are_not_utf8_are_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two stray bytes (``\\xff``, ``\\xfe``) in a record past the head: 2 read as U+FFFD;
    a U+FFFD written in the file (``\\xef\\xbf\\xbd``) is not one of them."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(RECORDS + b'{"t": "a\xff b\xfe c\xef\xbf\xbd"}\n')
    read, _, _ = read_both(path, monkeypatch)
    assert read.not_utf8 == 2


@pytest.mark.parametrize(
    ("rest", "last"),
    [
        (b"\n\n" + b'{"n": 250}\n', (253, '{"n": 250}', False)),  # blank lines: skipped
        (b"not json\n" + b'{"n": 250}\n', (252, '{"n": 250}', False)),  # a stand-in: "?"
        (b'  {"n": 250}\n', (251, '  {"n": 250}', False)),  # after spaces (kept)
    ],
)
def test_other_lines_are_read_one_by_one(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    rest: bytes,
    last: tuple[int, str, bool],
) -> None:
    """A rest with a line that is not a record as it is (blank, not JSON, indented): the
    same lines either way, the last record on the line counted by hand."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(RECORDS + rest)
    _, lines, _ = read_both(path, monkeypatch)
    assert lines[-1] == last


@pytest.mark.parametrize("block", [files.BLOCK, 64])
@pytest.mark.parametrize(
    ("rest", "long_lines", "last"),
    [
        (LONG + b'\n{"n": 250}\n', [251], (252, '{"n": 250}', False)),
        (b'{"n": 250}\n' + LONG + b"\n", [252], (251, '{"n": 250}', False)),
        (b'{"n": 250}\n' + LONG, [252], (251, '{"n": 250}', False)),  # the last, not ended
    ],
)
def test_lines_over_the_cap(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    block: int,
    rest: bytes,
    long_lines: list[int],
    last: tuple[int, str, bool],
) -> None:
    """With a cap of 100 bytes, a 212-byte record past the head (read whole, or across
    64-byte blocks) is an empty line, its number kept; the records around it read."""
    monkeypatch.setattr(files, "MAX_LINE_CHARS", 100)
    monkeypatch.setattr(files, "BLOCK", block)
    path = tmp_path / "s.jsonl"
    path.write_bytes(RECORDS + rest)
    read, lines, _ = read_both(path, monkeypatch)
    assert read.long_lines == long_lines
    assert lines[-1] == last


def test_a_head_with_other_lines_is_read_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A comment on line 2 and a blank line 3 (252 lines): the head's 200 one by one, the 52
    after at once; the comment kept as its stand-in on its line, the last record on 252."""
    path = tmp_path / "s.jsonl"
    lines_in = RECORDS.splitlines(keepends=True)
    path.write_bytes(lines_in[0] + b"// a comment\n\n" + b"".join(lines_in[1:]))
    read, lines, at_once = read_both(path, monkeypatch)
    assert at_once == 52
    assert lines[1] == (2, "//", False)
    assert lines[-1] == (252, '{"n": 249}', False)
