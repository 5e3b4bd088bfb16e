"""Newcomer help: the empty chat explains itself, the keys list (F1 / ?), pane keys, honest
offline labels."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from tests.tui.conftest import AppFactory
from tests.tui.helpers import (
    ask,
    build_session,
    messages_in,
    offline_settings,
    opened,
    screen_lines,
    settle,
)
from tui.screens.keys_modal import KeysModal
from tui.screens.search_modal import SearchModal
from tui.widgets.chat_view import EXAMPLES, ChatView, Example
from tui.widgets.history_view import HistoryView
from tui.widgets.token_gauge import TokenGauge

pytestmark = pytest.mark.anyio


async def test_empty_offline_chat_offers_examples_that_fill_the_input(
    make_app: AppFactory,
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        chat = screen.query_one(ChatView)
        text = " ".join(b.body for b in chat.blocks)
        assert "rule-based answers" in text and "grep PATTERN" in text and "run `CMD`" in text
        examples = [b.data.text for b in chat.blocks if isinstance(b.data, Example)]
        assert examples == list(EXAMPLES) and len(examples) == 3
        chat.focus()
        await pilot.press("down", "down", "enter")
        box = screen.query_one("#input", Input)
        assert box.value == EXAMPLES[1] and box.has_focus
        await pilot.press("enter")
        await settle(pilot)
        assert not chat.showing_intro
        figures = str(screen.query_one("#gauge-figures").render())
        assert "offline provider: ctxscope's local count" in figures and "no API count" in figures


async def test_keys_list_and_pane_keys(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await pilot.press("f1")
        assert isinstance(app.screen, KeysModal)
        listed = "\n".join(screen_lines(app))
        for key in ("F2", "F5", "F9", "Ctrl+L", "Ctrl+T", "Ctrl+Z", "Ctrl+N", "Esc", "Ctrl+Q"):
            assert key in listed
        await pilot.press("escape")
        assert app.screen is screen
        box = screen.query_one("#input", Input)
        history = screen.query_one(HistoryView)
        history.focus()
        await pilot.press("?", "3", "p")  # typed in a pane: they go to the input
        assert box.value == "?3p" and box.has_focus and app.screen is screen
        await pilot.press("alt+1")
        assert screen.query_one(ChatView).has_focus
        await pilot.press("alt+3")
        assert history.has_focus


async def test_breakdown_percent_free_buffer_heaviest_and_round_subtotals(
    make_app: AppFactory,
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "read @src/calc.py then ls src")
        gauge = screen.query_one(TokenGauge)
        state = gauge.state
        assert state is not None
        assert state.free == state.context_window - state.total
        assert state.buffer == state.context_window - state.threshold
        shown = "\n".join(screen_lines(app))
        assert "free " in shown and "buffer " in shown
        assert "until compaction" in shown
        top = state.heaviest[0]
        assert top.tokens == max(m.tokens or 0 for m in messages_in(app))
        assert f"{top.label} {top.tokens:,} tok" in str(
            screen.query_one("#gauge-heaviest").render()
        )
        screen.action_jump_to(top.key)
        await pilot.pause()
        history = screen.query_one(HistoryView)
        assert history.has_focus and history.cursor is not None
        picked = history.blocks[history.cursor].data
        assert f"m{picked.id}" == top.key
        separators = [str(b.header) for b in history.blocks if "── round 1" in str(b.header)]
        total = sum(m.tokens or 0 for m in messages_in(app) if m.meta.round == 1)
        assert separators and f"{total:,} tok" in separators[0]


async def test_split_adapts_and_f8_maximises_the_focused_pane(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        scratch = screen.query_one("#scratch-pane")
        history_pane = screen.query_one("#history-pane")
        assert scratch.size.width < history_pane.size.width  # idle: the pad yields
        await ask(pilot, "ls src")
        await pilot.press("f6")  # the last round's pad: it grows
        await pilot.pause()
        assert scratch.size.width > history_pane.size.width
        await pilot.press("f6")
        screen.query_one("#history").focus()
        await pilot.press("f8")
        await pilot.pause()
        assert screen.maximized is history_pane
        await pilot.press("f8")
        await pilot.pause()
        assert screen.maximized is None


async def test_ctrl_f_searches_history_and_archive(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    settings = offline_settings(keep_rounds=1)
    build_session(db_path, workspace, settings, compact=True)
    app = make_app(settings=settings, resume=1)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        screen.query_one(HistoryView).focus()
        await pilot.press("ctrl+f")
        assert isinstance(app.screen, SearchModal)
        app.screen.query_one("#search-input", Input).value = "def sub"
        await settle(pilot)
        hits = app.screen.hits
        assert {h.where for h in hits} >= {"archive"}  # round 1 read calc.py: archived now
        app.screen.query_one("#search-input", Input).value = "mul function"
        await settle(pilot)
        hits = app.screen.hits
        assert hits and all(h.where in ("history", "summary") for h in hits)
        first = hits[0]
        await pilot.press("enter", "enter")
        await settle(pilot)
        history = screen.query_one(HistoryView)
        assert app.screen is screen and history.cursor is not None
        data = history.blocks[history.cursor].data
        assert data is (first.message or first.summary)


@pytest.mark.parametrize("tmux", [True, False])
async def test_f1_lists_pane_keys_that_work_in_this_terminal(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch, tmux: bool
) -> None:
    """Issue 39: F1 listed Alt+1…4, which under tmux type ``¡™£¢`` into the input. Under tmux
    (``TMUX`` set, as in a pane) it lists Ctrl+G and Tab for the panes and no Alt+ key;
    elsewhere it lists Alt+1…4 too, saying where they do not work."""
    if tmux:
        monkeypatch.setenv("TMUX", "/tmp/tmux-1000/default,4242,0")
    else:
        monkeypatch.delenv("TMUX", raising=False)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await pilot.press("f1")
        assert isinstance(app.screen, KeysModal)
        listed = "\n".join(screen_lines(app))
        assert "Ctrl+G" in listed and "next pane" in listed
        assert ("Alt+1" in listed) is not tmux
