"""The report screen (F11 and the command palette): cost per day and what the compactions kept,
as charts; every compaction in a table; Enter opens its session."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from engine.recordings.history import Folder, import_history
from engine.store import Store
from tests.engine.recordings.corpus import MAROT, YOAVF
from tests.tui.conftest import AppFactory
from tests.tui.helpers import offline_settings, opened, settle, wait_until
from tui.screens.report_screen import ReportScreen
from tui.widgets.cost_chart import CostChart
from tui.widgets.kept_chart import KeptChart


def _history(tmp_path: Path, db_path: Path) -> None:
    """Two Claude Code sessions of the corpus: marot's (one auto compaction, 2026-02-11) and
    yoavf's (none, 2025-10-21)."""
    folder = tmp_path / "projects"
    folder.mkdir()
    shutil.copy(MAROT, folder / "marot.jsonl")
    shutil.copy(YOAVF, folder / "yoavf.jsonl")
    store = Store.open(db_path)
    import_history(store, [Folder(folder, "claude-code")], "/ws", offline_settings(), jobs=1)
    store.close()


async def _report(pilot: Pilot[Any]) -> ReportScreen:
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, ReportScreen))
    screen = pilot.app.screen
    assert isinstance(screen, ReportScreen)
    await wait_until(pilot, lambda: screen.report is not None, timeout=30)
    await settle(pilot)
    return screen


@pytest.mark.anyio
async def test_f11_shows_cost_per_day_and_what_compactions_kept(
    make_app: AppFactory, db_path: Path, tmp_path: Path
) -> None:
    _history(tmp_path, db_path)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await pilot.press("f11")
        screen = await _report(pilot)
        # the two recorded days with usage (the open, empty session has none)
        days = screen.query_one(CostChart).days
        assert [d for d, _ in days] == ["2025-10-21", "2026-02-11"]
        assert all(cost > 0 for _, cost in days)
        kept = screen.query_one(KeptChart)
        assert kept.count == 1 and "file_read" in kept.kept
        totals = str(screen.query_one("#report-totals", Static).render())
        assert "1 compaction (1 auto)" in totals
        table = screen.query_one(DataTable)
        assert table.row_count == 1
        row = [str(cell) for cell in table.get_row_at(0)]
        assert row[1] == "auto" and row[2] == "167,094"  # marot's compactMetadata.preTokens
        marot = screen.rows[0]
        await pilot.press("enter")
        await wait_until(pilot, lambda: not isinstance(pilot.app.screen, ReportScreen))
        await opened(pilot)
        main = app.main_screen
        assert main is not None and main.session_id == marot


@pytest.mark.anyio
async def test_the_report_is_in_the_command_palette(
    make_app: AppFactory, db_path: Path, tmp_path: Path
) -> None:
    _history(tmp_path, db_path)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"Report")
        await wait_until(pilot, lambda: "Report" in _highlighted_command(pilot))
        await pilot.press("enter")
        screen = await _report(pilot)
        assert screen.report is not None and len(screen.report.sessions) == 3


def _highlighted_command(pilot: Pilot[Any]) -> str:
    """The command palette's highlighted hit ("" while it has none)."""
    screen = pilot.app.screen
    if not isinstance(screen, CommandPalette):
        return ""
    hits = screen.query_one(CommandList)
    if hits.highlighted is None:
        return ""
    return str(hits.get_option_at_index(hits.highlighted).prompt)


SnapCompare = Callable[..., bool]


async def _opened_report(pilot: Pilot[Any]) -> None:
    await opened(pilot)
    await pilot.press("f11")
    screen = await _report(pilot)
    table = screen.query_one(DataTable)
    await wait_until(pilot, lambda: table.has_focus)  # the key bar shows the table's keys
    await pilot.pause()


def test_report_wide(
    snap_compare: SnapCompare, make_app: AppFactory, db_path: Path, tmp_path: Path
) -> None:
    """F11 over marot's and yoavf's sessions: the title; the totals line (3 sessions, one of
    them the open empty one; 192 requests, the API messages of the two files, 152 + 40; the
    dollars; tokens by kind; 1 compaction, auto); two charts side by side — cost per day, a
    bar for 10-21 (small) and one for 02-11 (most of it), and what the one compaction's
    summary kept, a bar per kind in percent (read about two thirds, changed all, cmds and
    errors none, asks a third), every label under its bar; under them the table's one row: marot's
    session, auto, 167,094, 42 minutes in, the items lost, the kept figures, its title; the
    key bar."""
    _history(tmp_path, db_path)
    assert snap_compare(make_app(), terminal_size=(120, 40), run_before=_opened_report)
