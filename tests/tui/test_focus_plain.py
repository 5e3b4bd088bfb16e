"""Issue 39, at 80 x 24 as in a tmux pane: the focus shows in a plain capture (no colours), and
F8 on the history fills the screen without cutting its right edge; F2 dates a recording by its
own rounds.

The screen is read as characters only (:func:`tests.tui.helpers.screen_lines`, the SVG
export's text), as ``tmux capture-pane -p`` gives it: a focused pane is drawn with heavy lines
(``┏━ History``), the others with round ones (``╭─ Chat``); the input box with the focus too.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from textual.widgets import DataTable

from tests.tui.conftest import AppFactory
from tests.tui.helpers import opened, screen_lines, settle, wait_until
from tests.tui.test_recorded_readonly import imported
from tui.app import CtxscopeApp
from tui.screens.sessions_screen import SessionsScreen

pytestmark = pytest.mark.anyio

SIZE = (80, 24)
PANES = {"chat-pane": "Chat", "scratch-pane": "Scratchpad", "history-pane": "History"}


def heavy_titles(lines: list[str]) -> list[str]:
    """The pane titles drawn with heavy lines (``┏━ Title``)."""
    return [t for t in PANES.values() for line in lines if f"┏━ {t}" in line]


async def test_every_tab_stop_shows_in_a_plain_capture(make_app: AppFactory) -> None:
    """Tab goes round the main screen's focusable widgets; at each stop exactly one pane is
    drawn heavy, the focused widget's. Before: the focused pane changed colour only (the
    capture was the same character for character), and at 80 columns the first Tab stopped on
    the pane tabs, drawn in colour only too."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        assert screen.focused is not None and screen.focused.id == "input"
        lines = screen_lines(app)
        assert heavy_titles(lines) == ["Chat"]
        # the input box itself: heavy too (the chat's log shares its pane)
        assert sum(line.count("┃┏━") for line in lines) == 1
        stops: list[str] = []
        for _ in range(4):
            await pilot.press("tab")
            await pilot.pause()
            focused = screen.focused
            assert focused is not None
            pane = next((a.id for a in focused.ancestors if a.has_class("pane")), None)
            assert pane in PANES, f"Tab stopped on {focused!r}, outside every pane"
            lines = screen_lines(app)
            assert heavy_titles(lines) == [PANES[pane]]
            if focused.id == "chat":  # the chat's log: its pane heavy, the input box not
                assert not any("┃┏━" in line for line in lines)
            stops.append(f"{pane}/{focused.id}")
        assert "chat-pane/chat" in stops and "history-pane/history" in stops


async def test_f8_on_the_history_keeps_its_right_edge_at_80_columns(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """F8 on the history of marot's recording at 80 x 24: the pane is 80 columns wide, its
    four corners and both side lines on the screen. Before: the maximised pane kept its 2fr
    width (twice the screen's), so the right border and every line's end were cut."""
    sid = imported(db_path, workspace)
    app = make_app(resume=sid)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        screen.query_one("#history").focus()
        await pilot.press("f8")
        await wait_until(pilot, lambda: screen.maximized is not None)
        await settle(pilot)
        lines = [line.ljust(80) for line in screen_lines(app)]
        top, *middle, bottom = lines[: SIZE[1]]
        assert top.startswith("┏━ History") and top[79] == "┓", top
        assert bottom[0] == "┗" and bottom[79] == "┛", bottom
        assert all(line[0] == "┃" and line[79] == "┃" for line in middle), middle


async def test_f3_shows_whether_the_list_or_the_search_box_has_the_focus(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """F3 on marot's recording at 80 x 24: its search box and compaction list were both drawn
    with the same tall lines, focused or not. The list opens with the focus: heavy (┏━), the
    box tall (▔); typing moves the focus to the box (issue 39's F3 item), and the lines swap."""
    sid = imported(db_path, workspace)
    app = make_app(resume=sid)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot)
        await pilot.press("f3")
        await settle(pilot)
        lines = screen_lines(app)
        box_top, list_top = lines[1], lines[4]
        assert box_top.startswith("▊▔▔") and list_top.startswith("┏━━"), lines[:6]
        await pilot.press("b", "u", "g")
        await settle(pilot)
        lines = screen_lines(app)
        assert lines[1].startswith("┏━━") and lines[4].startswith("▊▔▔"), lines[:6]
        assert "bug" in lines[2]


async def test_f2_says_when_a_recording_last_ran_not_when_it_was_imported(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """F2's time column is the session's own last round (issue 39: it was the import time, so
    every imported session read "just now"). Marot's last record is 2026-02-11T21:46:25.781Z
    (its raw file's latest timestamp); with the clock at 2026-02-12 21:46 that is 23 hours."""
    sid = imported(db_path, workspace)
    app = make_app(resume=sid, clock=lambda: datetime(2026, 2, 12, 21, 46, tzinfo=UTC))
    assert await f2_last_active(app) == "23 h ago"


async def f2_last_active(app: CtxscopeApp) -> str:
    """F2's Last active of its one session."""
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await pilot.press("f2")
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        table = app.screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count == 1)
        assert str(table.columns[table.ordered_columns[3].key].label) == "Last active"
        return str(table.get_row_at(0)[3])


async def test_f2_keeps_every_figure_in_view_at_80_columns(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """F2 at 80 x 24 on marot's recording: the row shows its context and cost (77,419 and
    $11.85: its last call, input + cache read + cache write + output, and its 152 calls at
    Claude Opus 4.6's list price, as `sessions` prints them) and its one compaction, the
    title shortened to the width they leave; the workspace column, last, is the one that
    scrolls out (the table used to end at "La…" of Last active at this width)."""
    sid = imported(db_path, workspace)
    app = make_app(resume=sid, clock=lambda: datetime(2026, 2, 12, 21, 46, tzinfo=UTC))
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot)
        await pilot.press("f2")
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        await wait_until(pilot, lambda: app.screen.query_one(DataTable).row_count == 1)
        await settle(pilot)
        lines = screen_lines(app)
        (header,) = [line for line in lines if " Title " in line]
        assert header.split()[:8] == [
            "ID",
            "Title",
            "Last",
            "active",
            "Context",
            "Cost",
            "Comp.",
            "Rounds",
        ]
        (row,) = [line for line in lines if "$11.85" in line]
        # the workspace's first letter at the edge ("demo" with the test's folder)
        assert row.split()[-6:] == ["ago", "77,419", "$11.85", "1", "8", "d"]
        assert "23 h ago" in row and len(row) <= 80
        # wider, the rows are drawn again: the whole title ("import: " and the first prompt)
        await pilot.resize_terminal(120, 24)
        await wait_until(
            pilot, lambda: any("Implement spotter-gqc " in x for x in screen_lines(app))
        )


def test_a_windows_workspace_is_named_by_its_last_folder() -> None:
    from tui.screens.sessions_screen import folder_name

    assert folder_name("D:\\oh-my-posh") == "oh-my-posh"
    assert folder_name("C:\\Users\\Chris\\git\\starcar") == "starcar"
    assert folder_name("/home/u/spotter") == "spotter"
    assert folder_name("") == ""


async def test_f2_shows_no_time_for_a_recording_that_has_none(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """The corpus' SWE-agent trajectory records no time (no entry carries one): F2's Last
    active is "–", where it said when the file was imported ("just now")."""
    from tests.tui.test_recorded_readonly import SWE_AGENT

    sid = imported(db_path, workspace, SWE_AGENT)
    assert await f2_last_active(make_app(resume=sid)) == "–"
