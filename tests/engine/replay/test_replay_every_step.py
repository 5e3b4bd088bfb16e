"""Replay covers every recorded call, in the window asked for (issue 20, "Replay every step").

The recording: a mini-swe-agent trajectory written here in that format (``trajectory_format``
``mini-swe-agent-1``: a system message, the task, then one assistant message per model call,
each answered by a ``<returncode>``/``<output>`` user message). It has 145 model calls: 144
with one ```bash``` action each and a last one that ends the task without an action. Each output is
60 numbered lines, so that the whole run (~60 000 tokens) fits the default window but not
32 000 tokens.
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
from engine.store import Store

CALLS = 145


def trajectory() -> dict[str, object]:
    messages: list[dict[str, str]] = [
        {"role": "system", "content": "You are a helpful assistant that can run commands."},
        {"role": "user", "content": "<pr_description>\nTidy the modules\n</pr_description>"},
    ]
    for n in range(CALLS - 1):
        command = f"cat src/module_{n}.py"
        messages.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: look at module {n}.\n\n```bash\n{command}\n```",
            }
        )
        output = "\n".join(f"{i}: value_{n}_{i} = compute({i}, {n})" for i in range(60))
        messages.append(
            {
                "role": "user",
                "content": f"<returncode>0</returncode>\n<output>\n{output}\n</output>",
            }
        )
    messages.append({"role": "assistant", "content": "THOUGHT: every module is tidy. Done."})
    return {"info": {"exit_status": "Submitted"}, "messages": messages,
            "trajectory_format": "mini-swe-agent-1"}  # fmt: skip


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    folder = tmp_path_factory.mktemp("traj")
    path = folder / "long.traj.json"
    data = trajectory()
    path.write_text(json.dumps(data))
    # counted from the file itself, not by the importer: one model call per assistant message
    calls = sum(m["role"] == "assistant" for m in data["messages"])  # type: ignore[index, union-attr]
    assert calls == CALLS
    db = folder / "rec.db"
    store = Store.open(db)
    report = import_session(store, path, str(folder))
    assert report.session.id is not None
    store.close()
    return db, report.session.id


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_recorded_call_is_replayed_whatever_max_steps_is(
    name: str, recorded: tuple[Path, int]
) -> None:
    """The live agent stops a round at ``max_steps`` (50 by default); a replay must not."""
    db, sid = recorded
    store = Store.open(db, read_only=True)
    try:
        result = replay(store, sid, name, Settings(max_steps=50, data_dir=None))
    finally:
        store.close()
    assert len(result.steps) == CALLS
    assert result.window == 200_000


def test_replay_window_and_the_strategies_differ_in_32000(
    recorded: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    db, sid = recorded
    argv = ["replay", str(sid), "--db", str(db), "--json", "--window", "32000"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["window"] == 32000
    rows = {r["strategy"]: r for r in data["strategies"]}
    assert set(rows) == set(STRATEGIES)
    assert {r["steps"] for r in rows.values()} == {CALLS}
    assert {r["window"] for r in rows.values()} == {32000}
    assert all(r["peak"] <= 32000 for r in rows.values())
    # the strategies no longer all send the same requests
    assert len({r["total_input"] for r in rows.values()}) >= 4
    assert rows["layered"]["compactions"] + rows["head-middle-tail"]["compactions"] > 0

    # in the default window nothing needs compacting: every strategy but the projecting ones
    # sends the same requests
    assert main(["replay", str(sid), "--db", str(db), "--strategy", "layered"]) == 0
    assert capsys.readouterr().out.startswith("replayed in a 200,000-token window\n")


def test_replay_set_overrides_a_strategy_number(
    recorded: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    db, sid = recorded
    base = ["replay", str(sid), "--db", str(db), "--json", "--strategy", "masking"]
    assert main([*base, "--set", "masking.keep_last_observations=100"]) == 0
    many = json.loads(capsys.readouterr().out)["strategies"][0]
    assert main([*base, "--set", "masking.keep_last_observations=5"]) == 0
    few = json.loads(capsys.readouterr().out)["strategies"][0]
    assert few["total_input"] < many["total_input"]
    assert main([*base, "--set", "masking.no_such_number=5"]) == 2  # a usage error


def test_a_replay_window_carries_the_strategies_windows() -> None:
    """Seed 002's init profile: ``200 000 / 150 000`` (window / COMPACT_TRIGGER_THRESHOLD),
    the trigger at 75 % of the window; in 32 000 tokens that is 24 000. Seed 001's
    ``MODEL_CONTEXT_LIMIT`` becomes the replay's window."""
    from engine.settings.params import in_window

    moved = in_window(Settings(), 32_000)
    assert moved.context_window == 32_000
    assert moved.strategies.mock_user.resolved() == (32_000, 24_000, 3)
    assert moved.strategies.reset_hint.context_limit == 32_000
    kept = in_window(Settings(strategies={"mock-user": {"trigger_tokens": 9_000}}), 32_000)
    assert kept.strategies.mock_user.resolved() == (32_000, 9_000, 3)
