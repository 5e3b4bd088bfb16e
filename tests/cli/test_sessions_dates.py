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


def test_sessions_are_listed_by_when_they_ran_not_when_they_were_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Imported in this order: the pomodoro Claude Code session (its last record 2025-10-21),
    marot's (2026-02-11) and the SWE-agent trajectory (no time at all). ``sessions`` lists them
    as they ran, most recent first, the one with no time last; it listed them by when they
    were imported (the trajectory first)."""
    from tests.engine.recordings.corpus import CORPUS, YOAVF

    monkeypatch.setenv("CTXSCOPE_DB", str(tmp_path / "db.sqlite"))
    swe = CORPUS / "SWE-agent__SWE-agent__swe-agent__test-repo-i1.traj"
    for path in (YOAVF, MAROT, swe):
        assert main(["import", str(path)]) == 0
    capsys.readouterr()
    assert main(["sessions", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [s["id"] for s in listed] == [2, 1, 3]
    assert [s["last_at"][:10] if s["last_at"] else None for s in listed] == [
        "2026-02-11",
        "2025-10-21",
        None,
    ]
