"""Issue 32: keys sent in one burst into a focused pane, Ctrl+T with the input focused, a pane
jump that survives tmux, the strategy switch in the palette.

``Pilot.press`` waits until the app is idle after every key, which hides what a terminal does
with fast typing or a paste: every key arrives before the app has handled the first. The
burst here posts all key events at once, as the terminal driver does, then waits.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events
from textual.widgets import Input

from engine.store import Store
from tests.tui.conftest import AppFactory
from tests.tui.helpers import ask, opened, settle, wait_until
from tui.app import CtxscopeApp
from tui.screens.keys_modal import KeysModal
from tui.widgets.history_view import HistoryView

pytestmark = pytest.mark.anyio

TYPED = "glob 2024*.py then read pyproject.toml"
"""The text the issue saw arrive as ``glob 2024*.py then r``."""
KEY_NAMES = {" ": "space", "*": "asterisk", ".": "full_stop"}
"""Textual's key names for the signs in :data:`TYPED` (letters and digits are their own)."""


def burst(app: CtxscopeApp, text: str, *, enter: bool) -> None:
    """Post a key event per character of ``text`` (then Enter) at once, with no pause."""
    for char in text:
        app.post_message(events.Key(KEY_NAMES.get(char, char), char))
    if enter:
        app.post_message(events.Key("enter", "\r"))


def user_inputs(db: Path) -> list[str]:
    store = Store.open(db)
    try:
        return [m.content for m in store.all_messages(1) if m.role == "user"]
    finally:
        store.close()


@pytest.mark.parametrize("pane", ["#chat", "#scratch", "#history"])
async def test_a_burst_typed_in_a_pane_is_sent_whole_by_its_enter(
    make_app: AppFactory, db_path: Path, pane: str
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "ls")  # something in every pane to open with Enter
        screen.query_one(pane).focus()
        await pilot.pause()
        burst(app, TYPED, enter=True)
        await wait_until(pilot, lambda: len(user_inputs(db_path)) == 2)
        await settle(pilot)
        assert user_inputs(db_path) == ["ls", TYPED]
        assert screen.query_one("#input", Input).value == ""
        assert app.screen is screen  # the Enter opened nothing in the pane


async def test_a_burst_without_enter_waits_whole_in_the_box(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        screen.query_one("#history").focus()
        await pilot.pause()
        burst(app, TYPED, enter=False)
        await pilot.pause()
        box = screen.query_one("#input", Input)
        assert box.value == TYPED and screen.focused is box


async def test_a_paste_into_a_pane_lands_in_the_box(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        screen.query_one("#scratch").focus()
        await pilot.pause()
        app.post_message(events.Paste(TYPED))
        await pilot.pause()
        assert screen.query_one("#input", Input).value == TYPED


async def test_ctrl_t_in_the_input_says_how_to_pin(make_app: AppFactory) -> None:
    """Nothing is selected in the history: Ctrl+T says what to do instead of nothing."""
    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "ls")
        screen.query_one(HistoryView).cursor = None
        screen.query_one("#input", Input).focus()
        await pilot.press("ctrl+t")
        await pilot.pause()
        toasts = [str(t.render()) for t in app.screen.query("Toast")]
        assert any("Nothing to pin" in t and "Ctrl+G" in t for t in toasts)


async def test_ctrl_t_in_the_input_pins_the_selected_message(
    make_app: AppFactory, db_path: Path
) -> None:
    """A message selected in the history (the one the user looks at) is pinned by Ctrl+T
    typed with the input focused."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "ls")
        history = screen.query_one(HistoryView)
        history.focus()
        await pilot.press("home")
        selected = history.selected_message()
        assert selected is not None and selected.id is not None
        screen.query_one("#input", Input).focus()
        await pilot.press("ctrl+t")
        await settle(pilot)
    store = Store.open(db_path)
    try:
        pinned = [m.id for m in store.history(1).messages if m.pinned]
    finally:
        store.close()
    assert pinned == [selected.id]


async def test_ctrl_g_cycles_the_panes_and_f1_says_it(make_app: AppFactory) -> None:
    """Alt+1…4 arrive as characters under tmux (``£``, ``™``): Ctrl+G reaches the app there
    and moves the focus from pane to pane; F1 lists it."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        visited = []
        for _ in range(3):
            await pilot.press("ctrl+g")
            await pilot.pause()
            assert screen.focused is not None
            visited.append(screen.focused.id)
        assert visited == ["scratch", "history", "chat"]
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, KeysModal)
        listed = dict(app.screen.actions)  # what the F1 table is drawn from
        assert "next pane" in listed["ctrl+g"] and "tmux" in listed["ctrl+g"]


async def test_the_palette_switches_the_strategy(make_app: AppFactory, db_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "ls")  # an empty session is not kept
        titles = [c.title for c in app.get_system_commands(screen)]
        strategies = [t for t in titles if t.startswith("Strategy: ")]
        # the session's own (layered) is not offered: the other five are
        assert strategies == [
            "Strategy: reset-hint",
            "Strategy: mock-user",
            "Strategy: message-window",
            "Strategy: head-middle-tail",
            "Strategy: masking",
        ]
        [switch] = [c for c in app.get_system_commands(screen) if c.title == "Strategy: masking"]
        switch.callback()
        await wait_until(
            pilot, lambda: screen.agent is not None and screen.agent.strategy.name == "masking"
        )
        await settle(pilot)
    store = Store.open(db_path)
    try:
        assert store.get_session(1).strategy == "masking"
        [recorded] = store.strategy_switches(1)
        assert (recorded.previous, recorded.strategy) == ("layered", "masking")
    finally:
        store.close()
