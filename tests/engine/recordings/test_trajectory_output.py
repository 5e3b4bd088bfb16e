"""mini-swe-agent observations: ``output_of`` reads ``<output>…</output>`` as the regex it
replaced did (``<output>\\n?(.*?)\\n?</output>`` with DOTALL), on edge cases and on strings
built at random (fixed seed) from the pieces that matter."""

from __future__ import annotations

import random
import re

import pytest

from engine.recordings.trajectories import output_of

REFERENCE = re.compile(r"<output>\n?(.*?)\n?</output>", re.S)


def reference(content: str) -> str | None:
    found = REFERENCE.search(content)
    return None if found is None else found[1]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("<returncode>0</returncode>\n<output>\nline 1\nline 2\n</output>", "line 1\nline 2"),
        ("<output></output>", ""),
        ("<output>\n</output>", ""),
        ("<output>\n\n</output>", ""),
        ("<output>\n\n\nx\n\n</output>", "\n\nx\n"),
        ("<output>no newlines</output>", "no newlines"),
        ("<output>a</output> then <output>b</output>", "a"),
        ("<output>inner </output> twice </output>", "inner "),
        ("<output>never closed", None),
        ("</output> before <output>", None),
        ("no tags at all", None),
        ("<output>\r\nwindows\r\n</output>", "\r\nwindows\r"),
    ],
)
def test_output_of_edge_cases(content: str, expected: str | None) -> None:
    assert output_of(content) == expected == reference(content)


def test_output_of_matches_the_regex_on_random_strings() -> None:
    pieces = ["<output>", "</output>", "\n", "\n\n", "a", "<", "output>", " "]
    rng = random.Random(9)
    contents = ["".join(rng.choices(pieces, k=rng.randint(0, 9))) for _ in range(5000)]
    assert sum(reference(c) is not None for c in contents) > 500  # both branches exercised
    assert [output_of(c) for c in contents] == [reference(c) for c in contents]
