"""Regression tests for the bugs found in hands-on use (issue 13), one or more per bug.

Each test failed on the code before its fix (checked by running it against the old code).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from textual import events
from textual.pilot import Pilot

from engine.models import Summary
from engine.store import Store
from tests.tui.conftest import AppFactory
from tests.tui.helpers import (
    GatedProvider,
    ask,
    build_session,
    offline_settings,
    opened,
    screen_lines,
    settle,
    wait_until,
)
from tui.screens.permission_modal import PermissionModal
from tui.text_wrap import wrap_rows
from tui.widgets.block_view import BlockView
from tui.widgets.chat_view import ChatEntry, ChatView
from tui.widgets.history_view import HistoryView
from tui.widgets.scratchpad_view import ScratchpadView

pytestmark = pytest.mark.anyio


async def drawn_rows(pilot: Pilot[Any], view: BlockView) -> list[str]:
    """Every row of ``view`` as drawn, page by page (``render_line`` of what is on screen)."""
    rows: list[str] = []
    height = view.scrollable_content_region.height
    for top in range(0, view.virtual_size.height, height):
        view.scroll_to(y=top, animate=False, immediate=True)
        await pilot.pause()
        offset = int(view.scroll_y)
        for y in range(top - offset, height):
            if offset + y < view.virtual_size.height:
                rows.append(view.render_line(y).text)
    return rows


def _last_answer_visible(chat: ChatView) -> bool:
    last = len(chat.blocks) - 1
    region = chat.block_region(last)
    bottom = chat.scroll_offset.y + chat.scrollable_content_region.height
    return chat.is_vertical_scroll_end and region.bottom <= bottom


async def test_chat_follows_new_answers_after_resizes(make_app: AppFactory) -> None:
    """Bug 1: after narrow↔wide or a shorter height the chat kept its old offset and new
    rounds landed off-screen."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        chat = screen.query_one(ChatView)
        for i in range(3):
            await ask(pilot, f"ls src then grep def in src then read README.md #{i}")
        assert _last_answer_visible(chat)
        for size in ((80, 24), (120, 40), (120, 26)):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            await ask(pilot, f"read README.md at {size}")
            entries = [b.data for b in chat.blocks if isinstance(b.data, ChatEntry)]
            assert entries[-1].role == "answer"
            assert _last_answer_visible(chat), size


async def test_keys_typed_right_after_enter_stay_in_the_box(make_app: AppFactory) -> None:
    """Bug 2: keys that arrive before the screen handled Enter belong to the next message:
    they must neither join the message sent nor be wiped with it."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        box = screen.query_one("#input")
        box.focus()
        await pilot.press(*"read README.md")
        # Enter and the next keys queued together, as a fast typist's keys arrive.
        for key, char in (("enter", None), ("z", "z"), ("q", "q")):
            app.post_message(events.Key(key, char))
        await settle(pilot)
        assert screen.agent is not None
        users = [m for m in screen.agent.history.history.messages if m.role == "user"]
        assert [m.content for m in users] == ["read README.md"]
        assert box.value == "zq"


async def test_gauge_follows_the_strategys_decision(make_app: AppFactory, workspace: Path) -> None:
    """Bug 3: the gauge said "→ compacts first" by the raw budget rule while the strategy
    declined (the last rounds alone over the threshold, too few rounds beyond them), and
    nothing compacted. The gauge, its warning and the agent now go by one decision."""
    for name in ("big1.txt", "big2.txt"):
        lines = [f"line {i}: the quick brown fox jumps over the dog {name}" for i in range(400)]
        (workspace / name).write_text("\n".join(lines), encoding="utf-8")
    settings = offline_settings(context_window=20_000, keep_rounds=2)
    app = make_app(settings=settings)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "ls src")
        await ask(pilot, "read big1.txt")
        await ask(pilot, "read big2.txt")
        gauge = screen.query_one("#gauge")
        box = screen.query_one("#input")
        box.focus()
        await pilot.press(*"ls")
        await settle(pilot)
        state = gauge.state
        assert state is not None
        # The estimate is over the threshold, but layered waits: one round beyond the keep
        # zone is not worth a summary while the keep zone alone is over the threshold.
        assert state.next_estimate is not None and state.next_estimate >= state.threshold
        figures = str(screen.query_one("#gauge-figures").render())
        assert "compacts first" not in figures
        assert not state.fires
        assert state.decision is not None
        assert state.decision.fires and not state.decision.compacts
        assert state.warning is not None and "will not compact" in state.warning
        # ... and indeed the agent does not compact.
        await pilot.press("enter")
        await settle(pilot)
        assert screen.agent is not None
        assert screen.agent.store.compactions(screen.agent.session_id) == []


async def test_emoji_of_ambiguous_width_cannot_shift_rows(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """Bug 4: the A5 template's ``🏗️`` (with U+FE0F) is two cells for Rich and one for tmux:
    rows shifted and borders broke. Rows are drawn without such sequences; the stored summary
    keeps them."""
    settings = offline_settings(keep_rounds=1)
    build_session(db_path, workspace, settings, compact=True)
    app = make_app(settings=settings, resume=1)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        view = screen.query_one(HistoryView)
        summary = next(b.data for b in view.blocks if isinstance(b.data, Summary))
        assert "🏗️" in summary.content  # stored as written
        rows = await drawn_rows(pilot, view)
        assert any("Archived Session Summary" in row for row in rows)
        assert not any(ch in row for row in rows for ch in "\ufe0f\u200d")
        width = view.scrollable_content_region.width
        assert all(cell_len(row) == width for row in rows)
    assert "\ufe0f" not in "".join(wrap_rows("### 🏗️ Technical Context", 20, None))
    assert wrap_rows("### 🏗️ Technical Context", 40, None) == ["### 🏗 Technical Context"]


@pytest.mark.parametrize("size", [(120, 40), (200, 60)])
async def test_cut_and_keep_marks_are_not_clipped(
    make_app: AppFactory, db_path: Path, workspace: Path, size: tuple[int, int]
) -> None:
    """Bug 5: the ✂ next-cut and keep-zone lines were one row each, clipped at the pane's
    width (at 120×40 and at 200×60); counts said "1 rounds"."""
    settings = offline_settings(keep_rounds=1)
    build_session(db_path, workspace, settings)
    app = make_app(settings=settings, resume=1)
    async with app.run_test(size=size) as pilot:
        screen = await opened(pilot)
        await pilot.press("f5")
        plan = str(screen.query_one("#compact-bar-plan").render())
        assert "1 rounds" not in plan and "Compact rounds 1–2 (" in plan
        await pilot.press("escape")
        view = screen.query_one(HistoryView)
        text = " ".join(row.strip(" ┄━▌") for row in await drawn_rows(pilot, view))
        text = " ".join(text.split())
        assert "rounds 1–2 above" in text and "→ one summary" in text
        assert "the last round, never compacted" in text


async def test_last_scratchpad_keeps_the_observation_costs(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """Bug 6: F6 (the last round's scratchpad) left out "N tok seen → M kept", the figure
    the live pad shows for too short a time in offline rounds; after a resume too."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "read @src/calc.py then ls src")
        await pilot.press("f6")
        scratch = screen.query_one(ScratchpadView)
        costs = [str(b.header) for b in scratch.blocks if "tok seen →" in str(b.header)]
        assert len(costs) == 2 and "kept" in costs[0]
    app = make_app(resume=1)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await pilot.press("f6")
        scratch = screen.query_one(ScratchpadView)
        assert sum("tok seen →" in str(b.header) for b in scratch.blocks) == 2


async def test_footer_fits_80_columns_and_shows_only_live_keys(make_app: AppFactory) -> None:
    """Bug 7: at 80 columns the palette key was drawn over the last keys (``paletteq``) and
    Quit / Interrupt fell off; ``f7 Pane`` showed in the wide layout, where F7 does nothing;
    Esc did not close Textual's keys panel."""
    settings = offline_settings()
    provider = GatedProvider(settings, stop_at=1)
    app = make_app(settings=settings, provider=provider)
    async with app.run_test(size=(80, 24)) as pilot:
        await opened(pilot)
        footer = screen_lines(app)[-1]
        assert "Quit" in footer and "paletteq" not in footer
        assert "Pane" in footer  # F7 works in the narrow layout
        await ask(pilot, "ls src", wait=False)
        await wait_until(pilot, provider.waiting.is_set)
        await pilot.pause()
        footer = screen_lines(app)[-1]
        assert "Interrupt" in footer and "Quit" in footer
        provider.release.set()
        await settle(pilot)
        await pilot.resize_terminal(120, 40)
        await settle(pilot)
        footer = screen_lines(app)[-1]
        assert "Pane" not in footer and "Quit" in footer
        app.action_show_help_panel()
        await pilot.pause()
        assert app.screen.query("HelpPanel")
        await pilot.press("escape")
        assert not app.screen.query("HelpPanel")


async def test_always_is_remembered_when_coming_back_to_a_session(make_app: AppFactory) -> None:
    """Bug 8: "always for this session" was forgotten after leaving the session and
    resuming it."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "run `echo one`", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal))
        await pilot.press("s")
        await settle(pilot)
        first = screen.session_id
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert screen.session_id != first
        screen.open(first)
        await settle(pilot)
        assert screen.session_id == first
        await ask(pilot, "run `echo two`", wait=False)
        await wait_until(
            pilot, lambda: isinstance(app.screen, PermissionModal) or screen.busy is None
        )
        asked_again = isinstance(app.screen, PermissionModal)
        if asked_again:
            await pilot.press("a")
        await settle(pilot)
        assert not asked_again
    # ... and after a restart, resuming the session.
    app = make_app(resume=first)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "run `echo three`", wait=False)
        await wait_until(
            pilot, lambda: isinstance(app.screen, PermissionModal) or screen.busy is None
        )
        asked_again = isinstance(app.screen, PermissionModal)
        if asked_again:
            await pilot.press("a")
        await settle(pilot)
        assert not asked_again


async def test_busy_keys_say_why_and_history_figures_say_what_they_count(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """Bug 8: F2 / F5 during a round did nothing without a word; the history pane's figure
    silently included the summaries."""
    settings = offline_settings(keep_rounds=1)
    build_session(db_path, workspace, settings, compact=True)
    provider = GatedProvider(settings, stop_at=1)
    app = make_app(settings=settings, provider=provider, resume=1)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await opened(pilot)
        subtitle = str(screen.query_one("#history-pane").border_subtitle)
        assert "1 summary" in subtitle and "messages" in subtitle
        await ask(pilot, "ls src", wait=False)
        await wait_until(pilot, provider.waiting.is_set)
        for key in ("f2", "f5"):
            await pilot.press(key)
            await pilot.pause()
        toasts = [str(t.render()) for t in app.screen.query("Toast")]
        assert sum("a round is running" in t for t in toasts) == 2
        provider.release.set()
        await settle(pilot)


async def test_workspace_with_resume_opens_that_workspaces_latest(
    make_app: AppFactory, db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    """Bug 8: ``--workspace X --resume`` opened the latest session of any workspace."""
    other = tmp_path / "other"
    other.mkdir()
    settings = offline_settings()
    build_session(db_path, workspace, settings, title="in demo")
    build_session(db_path, other, settings, title="in other", age=timedelta(hours=1))
    app = make_app(settings=settings, resume="latest", workspace_explicit=True)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        assert screen.session_id == 1  # the latest of *this* workspace, not session 2


async def test_launches_without_input_store_no_session(make_app: AppFactory, db_path: Path) -> None:
    """Bug 9: every launch stored a new empty "(untitled)" session (8 launches left 7)."""
    for _ in range(3):
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(pilot)
            await pilot.press("ctrl+n")
            await settle(pilot)
    store = Store.open(db_path)
    try:
        assert store.list_sessions() == []
    finally:
        store.close()
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await ask(pilot, "ls src")
    store = Store.open(db_path)
    try:
        infos = store.list_sessions()
        assert [(i.rounds, i.session.title) for i in infos] == [(1, "ls src")]
    finally:
        store.close()


async def test_thinking_of_an_imported_session_is_shown_beside_the_layers(
    make_app: AppFactory, db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    """Issue 9/13: thinking blocks are kept, never re-sent, and the gauge shows those still in
    history as their own line. "Let me look at the test first." is 8 tokens in cl100k
    (Let · me · look · at · the · test · first · .)."""
    import json

    from engine.recordings.importing import import_session
    from engine.settings.config import Settings

    lines = [
        {"role": "user", "content": "Fix the failing test."},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "Let me look at the test first.",
                    "signature": "s",
                },
                {"type": "text", "text": "Done: the test passes."},
            ],
        },
    ]
    recorded = tmp_path / "thinking.jsonl"
    recorded.write_text("".join(json.dumps(line) + "\n" for line in lines))
    store = Store.open(db_path)
    report = import_session(store, recorded, str(workspace), settings=Settings())
    store.close()
    app = make_app(resume=report.session.id)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        assert "thinking 8 kept, not re-sent" in "\n".join(screen_lines(app))
        state = screen.query_one("#gauge").state
        assert state is not None and state.thinking == 8
        # outside the bar: the total is the request's layers alone
        assert state.total == sum(state.layers.values())
