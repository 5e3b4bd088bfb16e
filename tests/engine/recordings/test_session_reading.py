"""Reading a JSON-lines session file past its head (issue 44): the rest is read at once and
split at its line ends when every line of it is a record kept as it is
(``files._plain_rest``), else line by line (``files._records``); the text, its lines as
the line reader takes them (``base.known_lines``), the long lines and the bytes that are
not UTF-8 are the same either way.

Each file below is 250 records (``{"n": i}``, one a line) and then what the case adds: the
first :data:`~engine.recordings.files.HEAD_LINES` (200) are the head, read line by line in
both ways; what follows is the rest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.recordings import base, files

RECORDS = b"".join(b'{"n": %d}\n' % i for i in range(250))


def read_both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[files.SessionText, bool]:
    """The file read as it is now, and whether the rest was read at once; checked against
    the same file read line by line (``_plain_rest`` made to decline)."""
    taken: list[bool] = []
    plain_rest = files._plain_rest

    def spied(*args: object) -> list[str] | None:
        rest = plain_rest(*args)  # type: ignore[arg-type]
        taken.append(rest is not None)
        return rest

    monkeypatch.setattr(files, "_plain_rest", spied)
    fast = files.read_session(path)
    fast_lines = list(base.numbered_lines(fast.text, skip_blank=True))
    monkeypatch.setattr(files, "_plain_rest", lambda *args: None)
    slow = files.read_session(path)
    slow_lines = list(base.numbered_lines(slow.text, skip_blank=True))
    assert fast.text == slow.text
    assert fast_lines == slow_lines
    assert (fast.long_lines, fast.not_utf8) == (slow.long_lines, slow.not_utf8)
    assert fast.left_out.as_json() == slow.left_out.as_json()
    return fast, taken == [True]


def test_plain_records_are_read_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """250 records, each line ended: 250 line ends in the text, line 250 is ``{"n": 249}``."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(RECORDS)
    read, at_once = read_both(path, monkeypatch)
    assert at_once
    assert read.text.count("\n") == 250
    lines = list(base.numbered_lines(read.text, skip_blank=True))
    assert lines[-1] == (250, '{"n": 249}', False)


def test_a_cut_last_line_stays_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A last line without its end (a file still being written) is line 251, marked cut."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(RECORDS + b'{"n": 25')
    read, at_once = read_both(path, monkeypatch)
    assert at_once
    lines = list(base.numbered_lines(read.text, skip_blank=True))
    assert lines[-1] == (251, '{"n": 25', True)


def test_crlf_line_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CRLF line ends: each record still begins its line; the reader drops the CR."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(RECORDS.replace(b"\n", b"\r\n"))
    read, at_once = read_both(path, monkeypatch)
    assert at_once
    lines = list(base.numbered_lines(read.text, skip_blank=True))
    assert lines[-1] == (250, '{"n": 249}', False)


def test_bytes_that_are_not_utf8_are_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two stray bytes (``\\xff``, ``\\xfe``) in a record past the head: 2 read as U+FFFD;
    a U+FFFD written in the file (``\\xef\\xbf\\xbd``) is not one of them."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(RECORDS + b'{"t": "a\xff b\xfe c\xef\xbf\xbd"}\n')
    read, at_once = read_both(path, monkeypatch)
    assert at_once
    assert read.not_utf8 == 2


@pytest.mark.parametrize(
    ("rest", "last"),
    [
        (b"\n\n" + b'{"n": 250}\n', (253, '{"n": 250}', False)),  # blank lines: skipped
        (b"not json\n" + b'{"n": 250}\n', (252, '{"n": 250}', False)),  # a stand-in: "?"
        (b'  {"n": 250}\n', (251, '  {"n": 250}', False)),  # after spaces (kept)
    ],
)
def test_other_lines_are_read_line_by_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    rest: bytes,
    last: tuple[int, str, bool],
) -> None:
    """A rest with a line that is not a record as it is (blank, not JSON, indented) is read
    line by line, with the same numbers: the last record is on the line counted by hand."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(RECORDS + rest)
    read, at_once = read_both(path, monkeypatch)
    assert not at_once
    lines = list(base.numbered_lines(read.text, skip_blank=True))
    assert lines[-1] == last
