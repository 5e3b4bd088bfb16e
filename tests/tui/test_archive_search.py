"""The archive screen: each compaction's fidelity beside its summary, and the search box that
finds archived messages as the Recall tool does."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Markdown, OptionList

from engine.models import RecallHit
from tests.tui.conftest import AppFactory
from tests.tui.helpers import build_session, offline_settings, opened, screen_after, settle
from tui.screens.archive_screen import ArchiveScreen
from tui.widgets.block_view import BlockView

pytestmark = pytest.mark.anyio


async def test_archive_shows_fidelity_and_searches(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    settings = offline_settings(keep_rounds=1)
    build_session(db_path, workspace, settings, compact=True)  # rounds 1-2 archived
    app = make_app(settings=settings, resume=1)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        screen = await screen_after(pilot, "f3", ArchiveScreen)
        summary = screen.query_one("#archive-summary", Markdown)
        # round 1 read src/calc.py; 2 requests; round 2's commands were LS and Grep (no Bash)
        assert "\n> keeps files read 1/1 · requests 2/2\n" in summary.source

        search = screen.query_one("#archive-search", Input)
        search.value = "calc"
        search.focus()
        await pilot.press("enter")
        await settle(pilot)
        view = screen.query_one("#archive-segment", BlockView)
        hits = [b.data for b in view.blocks if isinstance(b.data, RecallHit)]
        assert hits and {h.round for h in hits} <= {1, 2}
        assert "Search “calc”" in str(screen.query_one("#archive-segment-pane").border_title)

        assert view.cursor == 0 and app.focused is view
        await pilot.press("enter")  # the first hit: back to its compaction's segment
        await settle(pilot)
        assert screen.query_one(OptionList).highlighted == 0
        assert "r1–2" in str(screen.query_one("#archive-segment-pane").border_title)
