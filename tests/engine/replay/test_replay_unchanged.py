"""Replay's figures stay what they were when replay was made faster.

``tests/data/replay/pomodoro_window_8000.json`` is the ``--json`` output of

    ctxscope import tests/data/corpus/yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl --db r.db
    CTXSCOPE_MODEL=offline ctxscope replay 2 --db r.db --json --window 8000

(the recording was the second one imported into that database; here it is the first, so the
session id is patched) run at commit a1d456c, before the speed work of issue 18 (caching token
counts and ledger facts, see docs/benchmarks.md#replay); two runs gave byte-identical output.
Regenerated for issue 32 (seeds 001-003 send earlier tool results as the tools returned
them, not seed 000's A3 form): reset-hint, mock-user and message-window changed, the others
not. Regenerated again after issue 29's merge, and wrongly explained then (by the width of
the folder's name): those figures (layered 2, mock-user 4) came from replays whose recorded
tool calls were all answered ``no_workspace``, corrected below. Every strategy compacts in an
8 000-token window, so the figures cover summaries, re-compaction,
masking and the cache model on a real recording.

A change that means to change replay's figures (a strategy's summary, its trigger) regenerates
the file with the two commands above and says so in its commit (issue 30 did: the ledger no
longer counts a harness message, the caveat Claude Code writes before a `!` command, as a
request, so the recall of requests moved; nothing else did); a change meant only to be
faster must leave it as it is.

Regenerated for issue 30 (the second import of the two commands' database is this recording,
after the corpus's marot session; ``cost_note`` and the ``as-recorded`` row and series,
added since, left out; two runs byte-identical): since issue 29 a replay's session has no
folder, and the agent's loop answered every tool call with a ``no_workspace`` error instead of
the recorded result, so no replay sent a recorded observation. Recorded answers run nothing
and now need no folder (``ToolRegistry.needs_workspace``): the requests carry the recorded
results again, and layered compacts 3 times (was 2), reset-hint 3, mock-user 17 (was 4),
message-window 3 (was 2), head-middle-tail 9 (was 6), masking 3 (was 2). Issue 30's other
change, planning with the recorded agent's hidden prefix (docs/replay.md), does not act here:
this recording's prefix is 21 353 tokens (its first call's 21 499 less the transcript's 146),
which an 8 000-token window cannot hold, so the replay plans ctxscope's own request (no
``agent_prefix_tokens``).

Regenerated for issue 39 (the same two commands; ``cost_note`` and the ``as-recorded`` row and
series left out): mock-user's gain floor now holds for what is stored, checked again with the
written summary's size, so 3 of its 17 compactions, which freed less than the floor, are no
longer stored (14); its figures changed, no other strategy's. The rows carry
``total_steps`` and ``complete`` and the document ``compared_over_steps`` (null: every
strategy played every step), added for the replay tables.
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
    assert [s["compactions"] for s in got["strategies"]] == [3, 3, 14, 3, 9, 3]
    assert not any("agent_prefix_tokens" in s for s in got["strategies"])
    assert got == expected
