"""The archive screen: each compaction's fidelity beside its summary, and the search box that
finds archived messages as the Recall tool does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Input, Markdown, OptionList

from cli.main import main
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


async def test_archive_names_what_a_compaction_lost(
    make_app: AppFactory, db_path: Path, tmp_path: Path
) -> None:
    """A recorded session whose one compaction's summary names neither the file read
    (``src/lost.py``) nor the request ("please fix the parser"): F3 lists both by name with
    where they were — round 1; the request is message 1, the Read call message 2 (the first
    two messages stored)."""
    lines = [
        {"role": "user", "content": "please fix the parser"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Read",
                    "input": {"file_path": "src/lost.py"},
                }
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x = 1"}],
        },
        {"role": "assistant", "content": "Fixed."},
        {"role": "user", "content": "Work went on.", "compact_summary": True},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "ok"},
    ]
    src = tmp_path / "lost.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert main(["import", str(src), "--db", str(db_path)]) == 0
    app = make_app(resume=1)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        screen = await screen_after(pilot, "f3", ArchiveScreen)
        source = screen.query_one("#archive-summary", Markdown).source
        assert "> lost 2 items: in the compacted part" in source
        assert "files read     src/lost.py  (round 1, step 1, message 2)" in source
        assert "requests       please fix the parser  (round 1, message 1)" in source
