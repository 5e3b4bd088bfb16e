"""Pictures of the workbench (pytest-textual-snapshot); regenerate with ``--snapshot-update``.

Each docstring says what the picture must show. Everything on screen is pinned: a fixed
workspace named ``demo`` with fixed files and mtimes, a fresh database per test, the app's clock
at a fixed instant and, where stored times show (sessions list, summaries), pinned timestamps.
The input's cursor does not blink under test (the app turns blinking off when headless).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Collapsible, DataTable

from engine.context.builder import LAYERS
from tests.tui.conftest import AppFactory
from tests.tui.helpers import (
    THREE_ROUNDS,
    ask,
    build_session,
    offline_settings,
    opened,
    screen_after,
    settle,
    wait_until,
)
from tui.screens.inspector_screen import InspectorScreen
from tui.screens.permission_modal import PermissionModal

SnapCompare = Callable[..., bool]
WIDE = (120, 40)


async def just_opened(pilot: Pilot[Any]) -> None:
    await opened(pilot)


def test_fresh_session(snap_compare: SnapCompare, make_app: AppFactory) -> None:
    """A new session: header with session #1 (untitled), workspace ``demo``, the OFFLINE
    provider badge and strategy ``layered``; the chat's offline intro with three examples and
    the input box focused; the narrow empty scratchpad ("F6: last round"); the "No history
    yet" hint; the gauge with L1 system, L1 tools and L2 CODE_LAW in the bar, each layer's
    share, free space and the buffer, "N until compaction", the offline labels, "no API calls
    yet"; the footer keys (no F7 in the wide layout)."""
    assert snap_compare(make_app(), terminal_size=WIDE, run_before=just_opened)


def test_after_three_offline_rounds(snap_compare: SnapCompare, make_app: AppFactory) -> None:
    """After three offline rounds with tool calls (Read via @mention; LS + Grep; TodoWrite):
    the chat holds three questions and answers; the todo list tops the (empty) scratchpad;
    history is scrolled to the newest: the end of round 2 and round 3 under the green keep-zone
    bar, each message with its role and tokens, the TodoWrite action and its compressed JSON,
    long bodies capped with "… more line (Enter: full text)"; the gauge shows L3 history and
    the todo recap with their shares, free space and the buffer, the offline "last call" in
    local counts, "N until compaction" under layered, the three heaviest history items and a
    sparkline of six steps."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await opened(pilot)
        for text in THREE_ROUNDS:
            await ask(pilot, text)

    assert snap_compare(make_app(), terminal_size=WIDE, run_before=run_before)


def _stored(make_app: AppFactory, db_path: Path, workspace: Path, **kw: Any) -> Any:
    settings = offline_settings(keep_rounds=1)
    build_session(db_path, workspace, settings, **kw)
    return make_app(settings=settings, resume=1)


def test_compaction_dialog(
    snap_compare: SnapCompare, make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """F5 over a stored three-round session: no dialog; the history pane shows "✂ compact here"
    under rounds 1–2 (their tokens → one summary, ↑ ↓ move the cut, Enter compacts, Esc
    cancels) and "━ stays" over round 3; under the chat input the bar says "Compact rounds 1–2
    (N tok) into one summary; the last round stays." over the focus box (placeholder shown);
    the footer lists ⏎ Compact, ↑ Keep more, ↓ Keep fewer, ^r Edit summary, esc Cancel."""
    app = _stored(make_app, db_path, workspace)
    assert snap_compare(app, terminal_size=WIDE, press=["f5"], run_before=just_opened)


def test_after_compaction(
    snap_compare: SnapCompare, make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """After F5, a focus typed, Enter: the banner over history reads tokens before → after,
    2 rounds and their messages archived, new summary rounds 1–2, what the summary keeps
    ("files read 1/1 · requests 2/2"); the summary block comes
    first in its own colour (selected), then the keep zone with round 3 only; the chat ends
    with the compaction notice; the gauge shows L3 summaries and a ✂ under the last step; a
    toast says how many messages and rounds were archived and that Ctrl+Z undoes it."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await opened(pilot)
        await pilot.press("f5", *"the calculator API", "enter")
        await settle(pilot)

    app = _stored(make_app, db_path, workspace)
    assert snap_compare(app, terminal_size=WIDE, run_before=run_before)


def test_compaction_preview(
    snap_compare: SnapCompare, make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """F5 + Ctrl+R: the preview says nothing is stored yet, what the layered strategy archives
    (the messages of rounds 1–2 and their tokens) and history tokens before → after, what
    the draft keeps of the ledger ("files read 1/1 · requests 2/2"), then the draft A5
    summary in an editable text area, a focus field with Regenerate, and the
    Commit (Ctrl+S) / Abandon (Esc) buttons."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await opened(pilot)
        await pilot.press("f5", "ctrl+r")
        await settle(pilot)

    app = _stored(make_app, db_path, workspace)
    assert snap_compare(app, terminal_size=WIDE, run_before=run_before)


def test_sessions_screen(
    snap_compare: SnapCompare, make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """F2: three stored sessions, most recent first, with title, workspace ``demo``, last
    update relative to the app clock (2 h, 1 d, 4 d ago), rounds, history tokens and
    compactions (1 for the compacted one); the open session is marked ●."""
    settings = offline_settings(keep_rounds=1)
    build_session(
        db_path,
        workspace,
        settings,
        ("ls",),
        title="list the files",
        age=timedelta(days=4, hours=1),
    )
    build_session(
        db_path,
        workspace,
        settings,
        title="calculator work",
        compact=True,
        age=timedelta(days=1, hours=1),
    )
    build_session(
        db_path, workspace, settings, ("read @README.md",), title="readme", age=timedelta(hours=3)
    )
    app = make_app(settings=settings, resume="latest")

    async def run_before(pilot: Pilot[Any]) -> None:
        await opened(pilot)
        await pilot.press("f2")
        await settle(pilot)
        # the table focused (its loader done): the footer lists its keys first from then on
        await wait_until(pilot, lambda: isinstance(pilot.app.focused, DataTable))
        await settle(pilot)

    assert snap_compare(app, terminal_size=WIDE, run_before=run_before)


def test_archive_screen(
    snap_compare: SnapCompare, make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """F3 on a compacted session: the archive search box on top; the compaction on the left
    (manual · success, rounds 1–2, tokens before → after); its A5 summary (Markdown, pinned
    time range) under the focus and the fidelity line ("keeps files read 1/1 · requests 2/2"),
    beside the archived raw rounds 1–2 with round separators, each with its tokens in the pane
    titles."""
    app = _stored(make_app, db_path, workspace, compact=True)

    async def run_before(pilot: Pilot[Any]) -> None:
        await opened(pilot)
        await pilot.press("f3")
        await settle(pilot)

    assert snap_compare(app, terminal_size=WIDE, run_before=run_before)


def test_context_inspector(
    snap_compare: SnapCompare, make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """F4: the next request's total against the window and threshold, whether the next input
    compacts, L2 taken from CODE_LAW.md; one collapsible per layer titled with its tokens,
    L2 CODE_LAW opened to show the rules' text, the raw JSON request last."""
    app = _stored(make_app, db_path, workspace)

    async def run_before(pilot: Pilot[Any]) -> None:
        await opened(pilot)
        screen = await screen_after(pilot, "f4", InspectorScreen)
        items = list(screen.query(Collapsible))
        items[LAYERS.index("L2 CODE_LAW")].collapsed = False
        await pilot.pause()

    assert snap_compare(app, terminal_size=WIDE, run_before=run_before)


def test_permission_prompt(snap_compare: SnapCompare, make_app: AppFactory) -> None:
    """``run `pytest -q``` with bash_policy=ask: the PermissionModal over the workbench names
    the Bash tool and shows the command, with Allow once (a), Always this session (s) and
    Deny (d / Esc) — Deny focused; behind it the scratchpad shows the thought, the Bash action
    and its observation still running."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await opened(pilot)
        await ask(pilot, "run `pytest -q`", wait=False)
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, PermissionModal))
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=WIDE, run_before=run_before)


def test_narrow_layout(
    snap_compare: SnapCompare, make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """80×24 on the stored three-round session: chat on the left with the input; on the
    right the Scratchpad / History / Gauge tabs with History shown (round 3 with its token
    subtotal); the footer fits 80 columns with F7 (Pane) and Quit on it."""
    app = _stored(make_app, db_path, workspace)
    assert snap_compare(app, terminal_size=(80, 24), run_before=just_opened)


NARROW = (80, 24)


@pytest.mark.parametrize("size", [WIDE, NARROW], ids=["120x40", "80x24"])
def test_fresh_session_intro(
    snap_compare: SnapCompare, make_app: AppFactory, size: tuple[int, int]
) -> None:
    """A new offline session: the empty chat explains itself (a rule-based provider, the
    phrases it understands, three examples marked ▷, "F1 lists every key"); the footer fits
    the width with Quit on it and no F7 in the wide layout (F7 Pane at 80×24)."""
    assert snap_compare(make_app(), terminal_size=size, run_before=just_opened)


@pytest.mark.parametrize("size", [WIDE, NARROW], ids=["120x40", "80x24"])
def test_keys_modal(snap_compare: SnapCompare, make_app: AppFactory, size: tuple[int, int]) -> None:
    """F1: the keys of the workbench in one list (F1–F10, Ctrl+N, Esc, /, Enter in the input
    and in a pane, 1–4, Ctrl+P, Ctrl+Q, the dialogs' keys) over the main screen; "Esc closes
    this list" under it."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await opened(pilot)
        await pilot.press("f1")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [WIDE, NARROW], ids=["120x40", "80x24"])
def test_sessions_screen_preview(
    snap_compare: SnapCompare,
    make_app: AppFactory,
    db_path: Path,
    workspace: Path,
    size: tuple[int, int],
) -> None:
    """F2 then ↓: the sessions of this workspace (the title says so and names w, r, d), the
    second row selected and its preview below: id and title, workspace, provider, strategy,
    rounds, tokens, compactions, its first and last question and its last answer."""
    settings = offline_settings(keep_rounds=1)
    build_session(db_path, workspace, settings, title="calculator work", compact=True)
    build_session(db_path, workspace, settings, ("ls",), title="list", age=timedelta(hours=1))
    app = make_app(settings=settings, resume=2)

    async def run_before(pilot: Pilot[Any]) -> None:
        await opened(pilot)
        await pilot.press("f2")
        await settle(pilot)
        # the table focused (its loader done): the footer lists its keys first from then on
        await wait_until(pilot, lambda: isinstance(pilot.app.focused, DataTable))
        await settle(pilot)
        await pilot.press("down")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_delete_session_dialog(
    snap_compare: SnapCompare, make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """F2, ↓, d: the DeleteModal asks before deleting session #1 and says what goes with it
    (rounds, messages, summaries, the archive, observations, usage); Keep (Esc) is focused."""
    settings = offline_settings(keep_rounds=1)
    build_session(db_path, workspace, settings, title="calculator work", compact=True)
    build_session(db_path, workspace, settings, ("ls",), title="list", age=timedelta(hours=1))
    app = make_app(settings=settings, resume=2)

    async def run_before(pilot: Pilot[Any]) -> None:
        await opened(pilot)
        await pilot.press("f2")
        await settle(pilot)
        # the table focused (its loader done): the footer lists its keys first from then on
        await wait_until(pilot, lambda: isinstance(pilot.app.focused, DataTable))
        await settle(pilot)
        await pilot.press("down", "d")
        await pilot.pause()

    assert snap_compare(app, terminal_size=WIDE, run_before=run_before)


@pytest.mark.parametrize("size", [WIDE, NARROW], ids=["120x40", "80x24"])
def test_search_modal(
    snap_compare: SnapCompare,
    make_app: AppFactory,
    db_path: Path,
    workspace: Path,
    size: tuple[int, int],
) -> None:
    """Ctrl+F with the history focused, "calc" typed: hits in the summary, in history and in the
    archive, each labelled with where it is and its round, with a line of context."""
    app = _stored(make_app, db_path, workspace, compact=True)

    async def run_before(pilot: Pilot[Any]) -> None:
        await opened(pilot)
        pilot.app.screen.query_one("#history").focus()
        await pilot.press("ctrl+f", "c", "a", "l", "c")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_gauge_breakdown_narrow(
    snap_compare: SnapCompare, make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """80×24, the Gauge tab (Alt+4): the bar, each layer in plain words with its tokens and
    share of the window, free space and the buffer over the threshold, the headline "next
    request N / 20,000 window", the strategy's "N until compaction" under it, the last call
    labelled as the offline provider's own count, the heaviest history items with their
    share."""
    app = _stored(make_app, db_path, workspace)

    async def run_before(pilot: Pilot[Any]) -> None:
        await opened(pilot)
        pilot.app.screen.query_one("#history").focus()
        await pilot.press("alt+4")
        await pilot.pause()

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)
