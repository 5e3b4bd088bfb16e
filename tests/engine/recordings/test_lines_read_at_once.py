"""JsonLines.read takes the common line (an object alone on its line) without feed's steps
(issue 44): every line, common or not, must come out as feeding the lines one by one gives
it: the same records, and the same lines named, counted and warned about, in order."""

from __future__ import annotations

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
    '{"type": "user", "uuid": "c"}',  # the last line, without its line end
]


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
    text = "\n".join(LINES)
    reader = JsonLines()
    known = Known(text.split("\n"), {}) if given_lines else None
    read = reader.read(text, known, typed=typed)
    expected, fed = _fed(LINES, typed)
    assert repr(read) == repr(expected)
    assert reader.lines == fed.lines == len([line for line in LINES if line.strip()])
    assert reader.skipped == fed.skipped and list(reader.skipped) == list(fed.skipped)
    assert reader.warnings == fed.warnings
    assert reader.not_read == fed.not_read
    assert repr(reader.not_read) == repr(fed.not_read)
    # what the lines hold, worked out by hand: the repeat, the pair and the last line read
    assert [n for n, _ in read] == (
        [1, 2, 4, 8, 9, 14, 15, 17, 18] if typed else [1, 2, 4, 6, 8, 9, 14, 15, 17, 18]
    )
    assert fed.skipped["repeated:ai-title"] == 1 and fed.skipped["lone_surrogate"] == 1
