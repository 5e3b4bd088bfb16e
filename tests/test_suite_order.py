"""The suite's own order (tests/conftest.py): the files named to run first are files of the
suite, each named once, and they do come first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LONGEST_FIRST

ROOT = Path(__file__).resolve().parent.parent


def test_every_file_named_to_run_first_is_a_test_file_of_the_suite() -> None:
    assert [p for p in LONGEST_FIRST if not (ROOT / p).is_file()] == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)


def test_the_longest_files_come_first(request: pytest.FixtureRequest) -> None:
    """In this run's order (``session.items``): the files of :data:`LONGEST_FIRST` that were
    collected, in its order, before any other file."""
    files: list[str] = []
    for item in request.session.items:
        path = item.nodeid.split("::", 1)[0]
        if not files or files[-1] != path:
            files.append(path)
    named = [p for p in LONGEST_FIRST if p in files]
    assert files[: len(named)] == named
