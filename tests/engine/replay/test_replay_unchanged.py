"""Replay's figures stay what they were when replay was made faster.

``tests/data/replay/pomodoro_window_8000.json`` is the ``--json`` output of

    ctxscope import tests/data/corpus/yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl --db r.db
    CTXSCOPE_MODEL=offline ctxscope replay 2 --db r.db --json --window 8000

(the recording was the second one imported into that database; here it is the first, so the
session id is patched) run at commit a1d456c, before the speed work of issue 18 (caching token
counts and ledger facts, see docs/benchmarks.md#replay); two runs gave byte-identical output.
Regenerated for issue 32 (seeds 001-003 send earlier tool results as the tools returned
them, not seed 000's A3 form): reset-hint, mock-user and message-window changed, the others
not. In an 8 000-token window every strategy compacts (layered 3, reset-hint 3, mock-user 6,
message-window 2, head-middle-tail 6, masking 2), so the figures cover summaries, re-compaction,
masking and the cache model on a real recording.

A change that means to change replay's figures (a strategy's summary, its trigger) regenerates
the file with the two commands above and says so in its commit (issue 30 did: the ledger no
longer counts a harness message, the caveat Claude Code writes before a `!` command, as a
request, so the recall of requests moved; nothing else did); a change meant only to be
faster must leave it as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main

DATA = Path(__file__).resolve().parents[2] / "data"
RECORDING = DATA / "corpus" / "yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl"
EXPECTED = DATA / "replay" / "pomodoro_window_8000.json"


def test_replay_of_a_real_recording_gives_the_figures_it_gave_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CTXSCOPE_MODEL", "offline")
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "r.db"
    assert main(["import", str(RECORDING), "--db", str(db), "--json"]) == 0
    capsys.readouterr()
    assert main(["replay", "1", "--db", str(db), "--json", "--window", "8000"]) == 0
    got = json.loads(capsys.readouterr().out)
    # added after the reference was made: where the costs' prices come from
    assert got.pop("cost_note").startswith("list price from genai-prices")
    # added after the reference too (issue 30): the recording's own calls, first
    recorded = got["strategies"].pop(0)
    assert recorded["strategy"] == "as-recorded"
    assert len(got["series"].pop("as-recorded")) == recorded["steps"] > 0
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    assert expected["session_id"] == 2
    expected["session_id"] = 1
    assert [s["compactions"] for s in got["strategies"]] == [3, 3, 6, 2, 6, 2]
    assert got == expected
