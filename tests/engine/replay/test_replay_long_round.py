"""Issue 32: a replay plays every recorded step, or says where and why it stopped.

A mini-swe-agent run is one round of many calls: the issue's 145-call run, replayed in a
32 000-token window, stopped at step 133 under ``layered`` with no compaction and no word (its
emergency cut took only closed rounds, and there are none). The trajectory here is made in the
test in mini-swe-agent's own format (``trajectory_format: mini-swe-agent-1``, the layout of
``tests/data/mini_swe_agent.traj.json``), 145 calls long, with thoughts long enough that the
assistant turns alone outgrow the window: before the fix ``layered`` stopped at step 94,
silently.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from engine.compaction.strategies import STRATEGIES
from engine.recordings.importing import import_session
from engine.replay.runner import replay
from engine.settings.config import Settings
from engine.settings.params import in_window
from engine.store import Store
from tests.engine.builders import round_with_an_answer_in_the_middle

CALLS = 145
"""Model calls of the trajectory (``info.model_stats.api_calls``), each one bash action."""
REPLAYED = CALLS + 1
"""Requests a replay sends: one per recorded call, and one after the last call's result (the
recorded run ended with its submission command; the replay asks once more and is answered with
the end)."""
WINDOW = 32_000


SYSTEM = "You are a helpful assistant that can interact with a computer."
TASK = "<pr_description>\nThe parser drops the last field of every record.\n</pr_description>"
WHY = "the split happens on commas and the last field may be lost without a newline. "
SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff\n```"


def long_trajectory(path: Path) -> Path:
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{TASK}\nFix it."},
    ]
    for i in range(CALLS - 1):
        part = f"part{i % 17}.py"
        thought = f"THOUGHT: Step {i}: I will look at {part} near line {i * 7}; " + WHY * 12
        action = f"```bash\nsed -n '{i},{i + 40}p' src/{part}\n```"
        messages.append({"role": "assistant", "content": f"{thought}\n\n{action}"})
        out = "\n".join(
            f"{i * 40 + k:5d}  def field_{k}(record): return record.split(',')[{k}]"
            for k in range(40)
        )
        observation = f"<returncode>0</returncode>\n<output>\n{out}\n</output>"
        messages.append({"role": "user", "content": observation})
    messages.append({"role": "assistant", "content": f"THOUGHT: Done.\n\n{SUBMIT}"})
    messages.append({"role": "user", "content": "diff --git a/src/part1.py b/src/part1.py\n"})
    stats = {"instance_cost": 1.0, "api_calls": CALLS}
    info = {"exit_status": "Submitted", "submission": "", "model_stats": stats}
    trajectory = {"info": info, "messages": messages, "trajectory_format": "mini-swe-agent-1"}
    path.write_text(json.dumps(trajectory, indent=1), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    folder = tmp_path_factory.mktemp("long")
    store = Store.open(folder / "r.db")
    report = import_session(store, long_trajectory(folder / "long.traj.json"), str(folder))
    assert report.session.id is not None
    # 145 calls: 145 recorded assistant steps in one round
    assistants = [m for m in store.all_messages(report.session.id) if m.role == "assistant"]
    assert len(assistants) == CALLS
    store.close()
    return folder / "r.db", report.session.id


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_replays_every_recorded_step(
    long_run: tuple[Path, int], strategy: str
) -> None:
    db, sid = long_run
    store = Store.open(db, read_only=True)
    try:
        result = replay(store, sid, strategy, in_window(Settings(), WINDOW), db.parent)
    finally:
        store.close()
    assert result.stops == []
    assert len(result.steps) == REPLAYED
    assert result.peak <= WINDOW
    if strategy == "layered":
        # one round longer than the window: only the round's own oldest steps can go
        assert [c for c in result.compactions if c.outcome == "success"]


def test_a_round_that_ends_early_is_said_with_where_and_why(tmp_path: Path) -> None:
    """The agent ends the round at the recorded answer (step 2), two recorded calls before the
    round's own end: the result names the step, the round, what was left and why."""
    store = Store.open(tmp_path / "r.db")
    sid = round_with_an_answer_in_the_middle(store, tmp_path)
    result = replay(store, sid, "layered", Settings(), tmp_path)
    assert len(result.steps) == 2
    [stop] = result.stops
    assert (stop.step, stop.round, stop.left) == (2, 1, 2)
    assert "recorded answer without a tool call" in stop.reason
    said = result.row()["stopped"][0]["said"]
    assert said.startswith("layered stopped at step 2 of 4 (round 1): ")
    store.close()


def test_the_command_line_says_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = Store.open(tmp_path / "r.db")
    sid = round_with_an_answer_in_the_middle(store, tmp_path)
    store.close()
    argv = ["replay", str(sid), "--db", str(tmp_path / "r.db"), "--strategy", "layered"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "layered stopped at step 2 of 4 (round 1): " in out
    assert "2 recorded calls of the round not replayed" in out


def test_a_row_that_stopped_early_is_marked_and_compared_per_step_played(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 39: strategies that stopped after 115 of 153 steps were compared on their total
    cost with the whole recording ($2.40 against $11.85). A row that did not play every step
    is marked (``2 of 4*``), and every row is compared on the steps all played: here each
    strategy stops at step 2 of 4, so the figures are those of steps 1-2."""
    store = Store.open(tmp_path / "r.db")
    sid = round_with_an_answer_in_the_middle(store, tmp_path)
    store.close()
    argv = ["replay", str(sid), "--db", str(tmp_path / "r.db"), "--strategy", "layered,masking"]
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["compared_over_steps"] == 2
    for row in data["strategies"]:
        assert (row["steps"], row["total_steps"], row["complete"]) == (2, 4, False)
        series = data["series"][row["strategy"]]
        assert row["compared"]["total_input"] == sum(s["tokens"] for s in series[:2])
    assert main(argv) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[1].split()
    assert header[:5] == ["strategy", "steps", "compactions", "peak", "total_input_1-2"]
    assert "total_input" not in header and "cost" not in header
    assert out.splitlines()[2].split()[1:4] == ["2", "of", "4*"]
    assert "every row is compared on steps 1–2, the steps all played" in out
