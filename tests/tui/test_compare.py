"""The compare screen: a stored session replayed under every strategy (behaviour and pictures)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from tests.tui.conftest import AppFactory
from tests.tui.helpers import (
    build_session,
    offline_settings,
    opened,
    screen_after,
    settle,
    wait_until,
)
from tui.screens.compare_screen import CompareScreen, ReplayInspectorScreen
from tui.widgets.replay_chart import ReplayChart

SnapCompare = Callable[..., bool]
ROUNDS = (
    "read @src/calc.py",
    "ls src then grep def in src",
    "read @src/calc.py",
    "grep def in src",
    "read @src/calc.py",
    "ls src",
)


def _stored(make_app: AppFactory, db_path: Path, workspace: Path) -> Any:
    settings = offline_settings(keep_rounds=1, context_window=5_000)
    build_session(db_path, workspace, settings, ROUNDS)
    return make_app(settings=settings, resume=1)


async def _compared(pilot: Pilot[Any]) -> CompareScreen:
    await opened(pilot)
    screen = await screen_after(pilot, "f9", CompareScreen)
    await wait_until(pilot, lambda: bool(screen.results), timeout=60)
    await settle(pilot)
    return screen


@pytest.mark.anyio
async def test_f9_replays_the_open_session_under_every_strategy(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    app = _stored(make_app, db_path, workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _compared(pilot)
        table = screen.query_one(DataTable)
        names = [str(table.get_row_at(n)[0]) for n in range(table.row_count)]
        assert names == [
            "layered", "reset-hint", "mock-user", "message-window", "head-middle-tail", "masking"
        ]  # fmt: skip
        # each strategy replays the same recorded calls (12 for these six rounds)
        steps = {len(r.steps) for r in screen.results}
        assert steps == {len(app.store.usages(1))}
        assert screen.selected == len(app.store.usages(1))
        chart = screen.query_one(ReplayChart)
        assert chart.selected == screen.selected and len(chart.results) == 6
        await pilot.press("left", "left")
        assert screen.selected == len(app.store.usages(1)) - 2
        # Enter: the highlighted strategy's request at the selected step, in the inspector
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ReplayInspectorScreen), 60)
        inspector = app.screen
        assert isinstance(inspector, ReplayInspectorScreen)
        expected = screen.results[0].steps[screen.selected - 1].tokens
        assert inspector.inspection.total == expected
        await pilot.press("escape")
        await pilot.press("escape")
        assert not isinstance(app.screen, CompareScreen)


def test_compare_wide(
    snap_compare: SnapCompare, make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """Six offline rounds (window 5 000, keep 1 round) replayed under the six strategies: the
    title; the chart with one coloured line per strategy over the recorded steps, x marks at
    compactions, the window line at the top and the thresholds under it, the selected last step
    as a vertical line; the status line with each strategy's tokens at that step; the table,
    one row per strategy (steps, compactions, peak, input, cost — "–", the offline model has no
    price —, ledger recall at the last step for reads, edits, commands, errors, requests), whole
    within the width; under it the line saying why there is no cost; the key bar."""
    app = _stored(make_app, db_path, workspace)
    assert snap_compare(app, terminal_size=(120, 40), run_before=_compared)


def test_compare_narrow(
    snap_compare: SnapCompare, make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """The same comparison at 80×24: a smaller chart, the table whole within the width
    (strategy to cost, "–"; no recall column), the no-cost line, the key bar fitting the
    width."""
    app = _stored(make_app, db_path, workspace)
    assert snap_compare(app, terminal_size=(80, 24), run_before=_compared)


@pytest.mark.anyio
async def test_a_strategy_that_stops_early_says_where_and_why(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """Issue 32: a replay that cannot play a round to its end says so on the compare screen
    too (here every strategy meets a recorded answer in the middle of round 1)."""
    from engine.store import Store
    from tests.engine.builders import round_with_an_answer_in_the_middle

    store = Store.open(db_path)
    sid = round_with_an_answer_in_the_middle(store, workspace)
    store.close()
    app = make_app(resume=sid)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await _compared(pilot)
        assert all(len(r.stops) == 1 for r in screen.results)
        toasts = [str(t.render()) for t in screen.query("Toast")]
        said = [t for t in toasts if "stopped at step 2 of 4 (round 1)" in t]
        assert len(said) == len(screen.results) == 6


@pytest.mark.anyio
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_table_is_not_cut_at_the_right_edge(
    make_app: AppFactory, db_path: Path, workspace: Path, size: tuple[int, int]
) -> None:
    """Issue 39: at 80 and 120 columns the table ran past the right edge (its last columns
    hidden): its content is now no wider than the table."""
    app = _stored(make_app, db_path, workspace)
    async with app.run_test(size=size) as pilot:
        screen = await _compared(pilot)
        table = screen.query_one(DataTable)
        assert table.row_count == 6
        assert table.virtual_size.width <= table.scrollable_content_region.width
        headers = [str(c.label) for c in table.columns.values()]
        assert headers[:6] == ["strategy", "steps", "comp.", "peak", "input", "cost"]
        assert ("recall last read·edit·cmd·err·ask" in headers) == (size[0] >= 110)


@pytest.mark.anyio
async def test_f9_on_a_recording_has_its_as_recorded_row(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """Issue 39: F9 had no as-recorded row (``replay`` has one): a recording's own requests
    come first, with its recorded steps (one per usage record the import stored)."""
    from engine.recordings.importing import import_session
    from engine.settings.config import Settings
    from engine.store import Store

    recording = Path(__file__).parents[1] / "data" / "claude_code" / "resumed_session.jsonl"
    store = Store.open(db_path)
    sid = import_session(store, recording, str(workspace), settings=Settings()).session.id
    usages = len(store.usages(sid or 0))
    store.close()
    app = make_app(resume=sid)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _compared(pilot)
        table = screen.query_one(DataTable)
        names = [str(table.get_row_at(n)[0]) for n in range(table.row_count)]
        assert names[0] == "as-recorded" and len(names) == 7
        assert len(screen.results[0].steps) == usages > 0
