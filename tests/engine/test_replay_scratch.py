"""A replay writes nothing outside its scratch folder, whatever data folder the user set."""

from __future__ import annotations

from pathlib import Path

from engine.agent import Agent
from engine.config import Settings
from engine.llm.offline import OfflineProvider
from engine.models import RoundStatus
from engine.replay import replay
from engine.store import Store


def test_a_replay_keeps_its_session_files_out_of_the_users_data_folder(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for n in range(4):
        lines = [f"def f{n}_{i}(x):  # line {i} of module {n}" for i in range(250)]
        (workspace / f"m{n}.py").write_text("\n".join(lines) + "\n")
    live_data = tmp_path / "live-data"
    settings = Settings(context_window=20_000, keep_rounds=2, data_dir=live_data)
    store = Store.open(tmp_path / "live.db")
    session = store.create_session(str(workspace), "live", strategy="layered")
    agent = Agent(store, session, settings, OfflineProvider(), workspace)
    for n in [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]:
        assert agent.run(f"read m{n}.py").status == RoundStatus.FINISHED
    assert session.id is not None
    before = sorted(p.relative_to(live_data) for p in live_data.rglob("*"))

    users = tmp_path / "users-data"
    theirs = settings.model_copy(update={"data_dir": users})
    # head-middle-tail writes a raw middle at each compaction (seed 004), message-window an
    # execution log entry after each round (seed 003): in the scratch folder only
    hmt = replay(store, session.id, "head-middle-tail", theirs, workspace)
    assert any(c.outcome == "success" for c in hmt.compactions)
    replay(store, session.id, "message-window", theirs, workspace)
    store.close()
    assert not users.exists()
    assert sorted(p.relative_to(live_data) for p in live_data.rglob("*")) == before
