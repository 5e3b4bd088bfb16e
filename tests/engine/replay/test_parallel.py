"""Strategies replayed side by side in worker processes give what a replay in this process gives.

The session is a live offline one (tests/engine/replay/test_replay.py's ten asks) in a 20 000-
token window, where layered compacts at least twice; each strategy's result from the pool is
compared, figure by figure (the dataclasses' equality: every step's tokens, cache use, cost,
compactions and recall), with :func:`engine.replay.runner.replay` called here, in order.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from engine.compaction.strategies import STRATEGIES, replay_order
from engine.replay.parallel import GC_THRESHOLDS, ReplayCancelled, replay_strategies
from engine.replay.runner import replay
from engine.settings.config import Settings
from engine.store import Store
from engine.store.errors import StoreError
from tests.engine.replay import test_replay
from tests.engine.replay.test_replay import live_session

workspace = test_replay.workspace  # the same ten-ask workspace, as a fixture here
SETTINGS = Settings(context_window=20_000, keep_rounds=2)


@pytest.fixture
def stored(workspace: Path, tmp_path: Path) -> tuple[Path, int]:
    db = tmp_path / "live.db"
    return db, live_session(db, workspace, SETTINGS)


def test_the_pool_gives_each_strategy_what_a_replay_here_gives(
    stored: tuple[Path, int],
    workspace: Path,
) -> None:
    db, sid = stored
    names = list(STRATEGIES)
    seen: dict[str, list[int]] = {}

    def progress(name: str, step: int, total: int) -> None:
        seen.setdefault(name, []).append(step)
        assert step <= total

    pooled = replay_strategies(db, sid, names, SETTINGS, workspace, jobs=2, on_step=progress)

    store = Store.open(db, read_only=True)
    here = [replay(store, sid, name, SETTINGS, workspace) for name in names]
    store.close()
    assert [r.strategy for r in pooled] == names  # in the order asked, whichever ended first
    assert len(here[0].steps) == 20  # ten asks, each one call and one answer
    assert any(c.outcome == "success" for c in here[0].compactions)  # layered did compact
    assert pooled == here
    # every worker said where it was, up to its last step, from its own process
    assert {name: steps[-1] for name, steps in seen.items()} == {name: 20 for name in names}


def test_one_strategy_or_one_job_runs_here_with_every_step_reported(
    stored: tuple[Path, int],
    workspace: Path,
) -> None:
    db, sid = stored
    steps: list[tuple[str, int]] = []
    results = replay_strategies(
        db, sid, ["masking", "layered"], SETTINGS, workspace, jobs=1,
        on_step=lambda name, step, total: steps.append((name, step)),
    )  # fmt: skip
    assert [r.strategy for r in results] == ["masking", "layered"]
    # in this process every step is reported, strategy after strategy
    assert steps == [("masking", n) for n in range(1, 21)] + [("layered", n) for n in range(1, 21)]


def test_a_failing_replay_in_a_worker_is_raised_here(tmp_path: Path, workspace: Path) -> None:
    db = tmp_path / "empty.db"
    Store.open(db).close()  # a database without session 7
    with pytest.raises(StoreError, match="7"):
        replay_strategies(db, 7, ["layered", "masking"], SETTINGS, workspace, jobs=2)


@pytest.mark.parametrize("jobs", [1, 2])
def test_cancelling_stops_every_replay(
    stored: tuple[Path, int],
    workspace: Path,
    jobs: int,
) -> None:
    db, sid = stored
    reported: list[int] = []
    with pytest.raises(ReplayCancelled):
        replay_strategies(
            db, sid, list(STRATEGIES), SETTINGS, workspace, jobs=jobs,
            on_step=lambda name, step, total: reported.append(step),
            cancelled=lambda: True,
        )  # fmt: skip
    # nothing got as far as a whole strategy's last step
    assert 20 not in reported


def test_a_relative_database_path_is_this_folders_file(
    stored: tuple[Path, int],
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The CLI is given ``--db live.db``: the workers, forked from a server that may have
    started in another folder, must open this process' ``live.db``."""
    db, sid = stored
    monkeypatch.chdir(db.parent)
    results = replay_strategies(
        Path(db.name), sid, ["layered", "masking"], SETTINGS, workspace, jobs=2
    )
    assert [len(r.steps) for r in results] == [20, 20]


def test_replays_here_collect_garbage_less_often_and_put_the_thresholds_back(
    stored: tuple[Path, int], workspace: Path
) -> None:
    db, sid = stored
    before = gc.get_threshold()
    during: set[tuple[int, ...]] = set()
    replay_strategies(
        db, sid, ["layered", "masking"], SETTINGS, workspace, jobs=1,
        on_step=lambda name, step, total: during.add(gc.get_threshold()),
    )  # fmt: skip
    assert during == {GC_THRESHOLDS}
    assert gc.get_threshold() == before
    with pytest.raises(ReplayCancelled):  # and after a replay that stopped half-way
        replay_strategies(db, sid, ["layered"], SETTINGS, workspace, jobs=1, cancelled=lambda: True)
    assert gc.get_threshold() == before


def test_the_slowest_to_replay_are_handed_out_first_in_the_order_they_had() -> None:
    """The order the pool was given the strategies in before the registry held it
    (``sorted(names, key=lambda n: n not in ("message-window", "masking"))``, worked out once
    for these inputs): message-window and masking first, each group in the order asked."""
    assert replay_order(list(STRATEGIES)) == [
        "message-window",
        "masking",
        "layered",
        "reset-hint",
        "mock-user",
        "head-middle-tail",
    ]
    assert replay_order(["masking", "layered", "message-window", "mock-user"]) == [
        "masking",
        "message-window",
        "layered",
        "mock-user",
    ]
    assert replay_order(["reset-hint", "layered"]) == ["reset-hint", "layered"]
