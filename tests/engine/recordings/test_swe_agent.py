"""SWE-agent ``.traj``: the real corpus file through the real import path."""

from __future__ import annotations

import json

from engine.store import Store
from tests.engine.recordings.helpers import CORPUS, import_all

SWE = CORPUS / "SWE-agent__SWE-agent__swe-agent__test-repo-i1.traj"


def test_every_action_has_its_recorded_result_and_submit_keeps_the_diff(store: Store) -> None:
    """``jq '.trajectory|length' $T`` → 5 steps; ``jq -r '.trajectory[].action' $T`` ends with
    ``submit``; ``jq '.info.submission|length' $T`` → 301, and ``jq '.trajectory[-1].observation
    == .info.submission' $T`` → true. ``history`` holds only 4 observations: the ``submit``
    step's output (the final diff) is written to ``trajectory`` alone. All 5 calls must keep a
    recorded result; none may be the synthetic "no result" error."""
    raw = json.loads(SWE.read_text(encoding="utf-8"))
    (one,) = import_all(store, SWE)
    assert one.report.fmt == "swe-agent"
    calls = [c for m in one.role("assistant") for c in m.tool_calls]
    assert len(calls) == 5
    assert calls[-1].input == {"command": "submit"}
    results = one.role("tool")
    assert len(results) == 5
    assert not any(m.meta.is_error for m in results)
    sid = one.report.session.id
    assert sid is not None
    submitted = store.observation_for(sid, calls[-1].id)
    assert submitted is not None
    assert submitted.text == raw["info"]["submission"]
    assert len(submitted.text) == 301
    assert "diff --git a/tests/missing_colon.py b/tests/missing_colon.py" in submitted.text
