"""Issue 22, items 1 and 2: no typed key is lost, compaction by hand in two keys with the cut
chosen on screen, undo and pin on keys, in the footer, F1 and the palette."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from textual import events
from textual.keys import _character_to_key
from textual.widgets import Input

from engine.models import Message, Summary
from engine.store import Store
from tests.tui.conftest import AppFactory
from tests.tui.helpers import (
    THREE_ROUNDS,
    ask,
    build_session,
    offline_settings,
    opened,
    settle,
    wait_until,
)
from tui.screens.keys_modal import KeysModal
from tui.widgets.history_view import HistoryView
from tui.widgets.key_bar import KeyBar

pytestmark = pytest.mark.anyio

PRINTABLE = "".join(chr(c) for c in range(32, 127))
"""Every printable ASCII character, space to tilde (95 of them)."""


async def test_every_printable_key_typed_in_a_pane_reaches_the_input(
    make_app: AppFactory,
) -> None:
    """Item 1: with the chat, scratchpad or history pane focused, each printable character is
    typed into the input box, none taken by a pane key (a fresh session: each key typed costs
    a strategy decision, cheapest on an empty history).

    The 95 keys of a pane go in one burst, each the Key event ``pilot.press`` would send,
    queued while the pane has the focus: the app hands every one of them to the pane (the
    focus moves to the box only after the first is handled, behind the whole burst), so each
    key meets the pane's and the screen's bindings exactly as one typed alone does, and one
    wait replaces 95 (a key at a time, with a wait for the app to go idle after each, took
    about 70 s for the three panes)."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        box = screen.query_one("#input", Input)
        for pane in ("#chat", "#scratch", "#history"):
            box.value = ""
            screen.set_focus(screen.query_one(pane))
            assert screen.focused is screen.query_one(pane)
            for char in PRINTABLE:
                app.post_message(events.Key(_character_to_key(char), char))
            with contextlib.suppress(AssertionError):  # a key lost: the assert below says which
                await wait_until(pilot, lambda: len(box.value) >= len(PRINTABLE))
            await pilot.pause()  # (not settle: each key cancels the decision the last one began)
            assert box.value == PRINTABLE, pane
            assert app.screen is screen  # no key opened anything
        box.value = ""
        screen.query_one("#history").focus()
        await pilot.press(*"read a1b2.txt")
        assert box.value == "read a1b2.txt"


async def test_f5_then_enter_compacts_with_the_cut_shown_and_moved(
    make_app: AppFactory, db_path: Path
) -> None:
    """Item 2: after three rounds F5 shows the cut above the last round (whatever the automatic
    trigger's keep_rounds, 10 here); ↑ keeps one more round, ↓ one fewer; Enter compacts at the
    cut, Esc cancels; the footer names Enter, ↑ ↓ and Esc while the bar is up."""
    app = make_app(settings=offline_settings(keep_rounds=10))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        for text in THREE_ROUNDS:
            await ask(pilot, text)
        history = screen.query_one(HistoryView)
        await pilot.press("f5")
        plan = str(screen.query_one("#compact-bar-plan").render())
        assert plan.startswith("Compact rounds 1–2 (") and "the last round stays" in plan
        marks = [b for b in history.blocks if "compact here" in str(b.header)]
        assert len(marks) == 1 and "rounds 1–2 above" in marks[0].body
        footer = screen.query_one(KeyBar).labels()
        assert {"⏎ Compact", "↑ Keep more", "↓ Keep fewer", "esc Cancel"} <= set(footer)
        await pilot.press("up")
        assert "Compact round 1 (" in str(screen.query_one("#compact-bar-plan").render())
        await pilot.press("up")  # cannot keep all three: the cut stays above round 2
        assert "Compact round 1 (" in str(screen.query_one("#compact-bar-plan").render())
        await pilot.press("escape")
        assert not screen.query_one("#compact-bar").display
        assert not [b for b in history.blocks if "compact here" in str(b.header)]
        await pilot.press("f5", "down", "enter")  # keep no round: all three go
        await settle(pilot)
        first = history.blocks[0].data
        assert isinstance(first, Summary) and (first.first_round, first.last_round) == (1, 3)
        assert not [b for b in history.blocks if isinstance(b.data, Message)]
    store = Store.open(db_path)
    try:
        [comp] = store.compactions(1)
        assert (comp.trigger, comp.outcome, comp.rounds_compacted) == ("manual", "success", 3)
        assert comp.stats["kept_rounds"] == 0
    finally:
        store.close()


async def test_ctrl_z_undoes_the_last_compaction_from_the_main_screen(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """Item 2: Ctrl+Z, named in the footer only when there is something to undo, does what
    the archive's undo does: the summary leaves, the rounds come back."""
    settings = offline_settings(keep_rounds=1)
    build_session(db_path, workspace, settings, compact=True)
    app = make_app(settings=settings, resume=1)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        history = screen.query_one(HistoryView)
        assert isinstance(history.blocks[0].data, Summary)
        assert "^z Undo compact" in screen.query_one(KeyBar).labels()
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert not [b for b in history.blocks if isinstance(b.data, Summary)]
        rounds = {b.data.meta.round for b in history.blocks if isinstance(b.data, Message)}
        assert rounds == {1, 2, 3}
        assert "^z Undo compact" not in screen.query_one(KeyBar).labels()
    store = Store.open(db_path)
    try:
        [comp] = store.compactions(1)
        assert comp.undone_at is not None
    finally:
        store.close()


async def test_palette_has_undo_and_pin_once_each_and_no_duplicates(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """Item 2: "Keys" and "Maximize" were listed twice (Textual's and the workbench's);
    searching "undo" or "pin" found nothing. F1 lists Ctrl+T and Ctrl+Z too."""
    settings = offline_settings(keep_rounds=1)
    build_session(db_path, workspace, settings, compact=True)
    app = make_app(settings=settings, resume=1)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        titles = [c.title for c in app.get_system_commands(screen)]
        assert len(titles) == len(set(titles))
        assert [t for t in titles if t.startswith("Keys")] == ["Keys (F1)"]
        assert not [t for t in titles if t.startswith(("Maximize", "Minimize"))]
        assert "Undo last compaction (Ctrl+Z)" in titles
        assert "Pin / unpin the selected message (Ctrl+T)" in titles
        await pilot.press("f1")
        assert isinstance(app.screen, KeysModal)
        listed = dict(app.screen.actions)
        assert "pinned message is never archived" in listed["ctrl+t"]
        assert "Undo the last compaction" in listed["ctrl+z"]


async def test_f5_default_cut_frees_the_round_that_holds_most(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """Issue 39: F5's cut kept the last round whatever it held, so on a session whose last
    round read a large file it freed 3 % where moving the cut freed 97 %. When the last round
    holds more than half of history's tokens the default cut takes it too (↑ keeps it)."""
    (workspace / "big.py").write_text(
        "".join(
            f"def helper_{i}(value):  # the {i}th helper of a large module\n" for i in range(450)
        )
    )
    build_session(db_path, workspace, offline_settings(keep_rounds=10),
                  ("ls", "grep def in src", "read @big.py"))  # fmt: skip
    app = make_app(settings=offline_settings(keep_rounds=10), resume=1)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        history = screen.query_one(HistoryView)
        assert history.layout_data is not None
        groups = history.layout_data.history.rounds()
        sizes = [sum(m.tokens or 0 for m in g) for g in groups]
        assert len(sizes) == 3 and sizes[-1] * 2 > sum(sizes)  # the last round holds most
        await pilot.press("f5")
        plan = str(screen.query_one("#compact-bar-plan").render())
        assert plan.startswith("Compact rounds 1–3 (")
        await pilot.press("up")  # keep the last round after all
        plan = str(screen.query_one("#compact-bar-plan").render())
        assert plan.startswith("Compact rounds 1–2 (") and "the last round stays" in plan
