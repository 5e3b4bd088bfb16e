"""``ctxscope sessions`` shows a session's own dates (issue 39: it showed the time a recording
was imported, so a history of old sessions all read "today")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from tests.engine.recordings.corpus import MAROT

FIRST = "2026-02-11T20:36:45.618000+00:00"
LAST = "2026-02-11T21:46:25.781000+00:00"
"""The earliest and latest ``timestamp`` of marot's user and assistant records (a python
one-liner over the raw file: 2026-02-11T20:36:45.618Z and 2026-02-11T21:46:25.781Z, of 491)."""


def test_a_recording_lists_with_the_dates_it_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CTXSCOPE_DB", str(tmp_path / "db.sqlite"))
    assert main(["import", str(MAROT)]) == 0
    capsys.readouterr()
    assert main(["sessions", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert (listed["started_at"], listed["last_at"]) == (FIRST, LAST)
    assert main(["sessions"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split()[:4] == ["ID", "STARTED", "LAST", "AGENT"]
    assert row.split()[:5] == ["1", "2026-02-11", "20:36", "21:46", "Claude"]
