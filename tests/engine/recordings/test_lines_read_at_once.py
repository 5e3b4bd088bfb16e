"""JsonLines.read takes the common line (an object alone on its line) without feed's steps
(issue 44): every line, common or not, must come out as feeding the lines one by one gives
it: the same records, and the same lines named, counted and warned about, in order."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.recordings.base import JsonLines, Known, numbered_lines

LINES = [
    '{"type": "user", "uuid": "a"}',
    '{"type": "progress", "uuid": "b", "data": {"x": [1, 2, {"y": "é"}]}}',
    '{"type": "user", "uuid": "a"}',  # a repeated line
    '{"type": "ai-title", "title": "t"}',
    '{"type": "ai-title", "title": "t"}',  # a repeat of a kind that repeats
    '{"no": "type"}',  # an object, not a record
    "  ",
    '{"type": "user", "text": "\\ud83d alone"}',  # a lone surrogate escape
    '{"type": "user", "text": "\\ud83d\\ude00 a pair"}',
    "[1, 2]",  # not an object
    '{"type": "user"} {"type": "user"}',  # two values on one line
    '{"type": "user", "cut": "mid-',  # not JSON
    "// a comment",
    '{"type": "system"}  ',  # white space after
    "\t" + '{"type": "system", "n": 2}',  # white space before
    "{" * 3000 + "}" * 3000,  # nested too deeply for the decoder
    '{"type": "assistant", "n": 1e400}',
    '{"type": "user", "uuid": "d", "n": 1}',
    '{"type": "user", "uuid": "d", "n": 2}',  # a second line of a uuid: not a repeat
    '{"type": "user", "uuid": "d", "n": 2}',  # a repeat of it
    '{"type": "user", "uuid": "d", "n": 1}',  # and of the first of that uuid
    '{"type": "user", "uuid": "d", "n": 3}',
    '{"type": "user", "uuid": "h"}',  # a repeat of a head line (below)
    '{"type": "user", "uuid": 7}',
    '{"type": "user", "uuid": 7}',  # a uuid that is not a string
    '{"type": "user", "uuid": "c"}',  # the last line, without its line end
]
HEAD = ['{"type": "user", "uuid": "h"}']
"""Lines the format's sniffer decoded already (handed on in ``Known.records``)."""


def _fed(lines: list[str], typed: bool) -> tuple[list[Any], JsonLines]:
    """The lines fed one by one, as a follower feeds them (the path read took before)."""
    reader, out, untyped = JsonLines(), [], []
    text = "\n".join(lines)
    for number, line, last in numbered_lines(text, skip_blank=True):
        obj = reader.feed(number, line, last and number > 1)
        if obj is None:
            continue
        if typed and not isinstance(obj.get("type"), str):
            untyped.append(number)
        else:
            out.append((number, obj))
    for number in untyped:
        reader.not_read.line("not a record (no type)", number)
    return out, reader


@pytest.mark.parametrize("typed", [False, True])
@pytest.mark.parametrize("given_lines", [False, True])
def test_reading_at_once_is_feeding_line_by_line(typed: bool, given_lines: bool) -> None:
    lines = HEAD + LINES
    text = "\n".join(lines)
    reader = JsonLines()
    head = {n: json.loads(line) for n, line in enumerate(HEAD, start=1)}
    known = Known(text.split("\n"), head) if given_lines else None
    read = reader.read(text, known, typed=typed)
    expected, fed = _fed(lines, typed)
    assert repr(read) == repr(expected)
    assert reader.lines == fed.lines == len([line for line in lines if line.strip()])
    assert reader.skipped == fed.skipped and list(reader.skipped) == list(fed.skipped)
    assert reader.warnings == fed.warnings
    assert reader.not_read == fed.not_read
    assert repr(reader.not_read) == repr(fed.not_read)
    # what the lines hold, worked out by hand (line numbers past the one head line): the
    # repeats left out, the surrogate pair read, the objects without a type only untyped
    kept = [1, 2, 3, 5, 9, 10, 15, 16, 18, 19, 20, 23, 25, 27]
    untyped = [7]
    assert [n for n, _ in read] == (kept if typed else sorted(kept + untyped))
    assert fed.skipped["repeated:ai-title"] == 1 and fed.skipped["lone_surrogate"] == 1
    assert fed.not_read.lines["repeats an earlier line"] == [4, 21, 22, 24, 26]
