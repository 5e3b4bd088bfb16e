"""Compaction by key, the stored result, and resuming a session exactly as it was left."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, OptionList, TextArea

from engine.models import Message, Summary
from engine.store import Store
from tests.tui.conftest import AppFactory
from tests.tui.helpers import (
    THREE_ROUNDS,
    GatedProvider,
    ask,
    build_session,
    main_screen,
    offline_settings,
    opened,
    screen_after,
    settle,
    wait_until,
)
from tui.app import CtxscopeApp
from tui.screens.archive_screen import ArchiveScreen
from tui.screens.compact_preview_modal import CompactPreviewModal
from tui.screens.sessions_screen import SessionsScreen
from tui.widgets.block_view import BlockView
from tui.widgets.chat_view import ChatView
from tui.widgets.history_view import HistoryView
from tui.widgets.session_header import SessionHeader
from tui.widgets.token_gauge import TokenGauge

pytestmark = pytest.mark.anyio


def visible_state(app: CtxscopeApp) -> dict[str, object]:
    """What the panes show, as comparable data."""
    screen = main_screen(app)
    gauge = screen.query_one(TokenGauge).state
    assert gauge is not None
    return {
        "header": screen.query_one(SessionHeader).info,
        "chat": [(b.header, b.body) for b in screen.query_one(ChatView).blocks],
        "history": [(b.header, b.body, b.gutter) for b in screen.query_one(HistoryView).blocks],
        "layers": gauge.layers,
        "steps": gauge.steps,
        "compactions_at": gauge.compactions_at,
        "last_usage": gauge.last_usage,
        "todos": str(screen.query_one("#todos").render()),
    }


async def test_compact_by_key_then_resume_the_same_state(
    make_app: AppFactory, db_path: Path
) -> None:
    settings = offline_settings(keep_rounds=1)
    app = make_app(settings=settings)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        for text in THREE_ROUNDS:
            await ask(pilot, text)
        history = screen.query_one(HistoryView)
        cut_marks = [b for b in history.blocks if "next compaction cut" in str(b.header)]
        assert len(cut_marks) == 1 and "rounds 1–2" in cut_marks[0].body

        await pilot.press("f5")
        assert "rounds 1–2" in str(screen.query_one("#compact-bar-plan").render())
        await pilot.press(*"the calculator API")
        await pilot.press("enter")
        await settle(pilot)

        first = history.blocks[0]
        assert isinstance(first.data, Summary)
        assert first.data.first_round == 1 and first.data.last_round == 2
        assert history.cursor == 0
        assert [m.meta.round for m in (b.data for b in history.blocks) if isinstance(m, Message)]
        kept_rounds = {b.data.meta.round for b in history.blocks if isinstance(b.data, Message)}
        assert kept_rounds == {3}
        banner = str(screen.query_one("#history-banner").render())
        assert "→" in banner and "2 rounds" in banner
        gauge = screen.query_one(TokenGauge).state
        assert gauge is not None and gauge.layers["L3 summaries"] > 0
        assert gauge.compactions_at == (len(gauge.steps),)
        before = visible_state(app)

    store = Store.open(db_path)
    try:
        comps = store.compactions(1)
        assert [(c.outcome, c.trigger, c.focus) for c in comps] == [
            ("success", "manual", "the calculator API")
        ]
        stored = store.history(1)
        assert len(stored.summaries) == 1
        assert {m.meta.round for m in stored.messages} == {3}
        (segment,) = store.segments(1)
        assert (segment.first_round, segment.last_round) == (1, 2)
        assert [t.content for t in store.get_todos(1)] == ["add a mul function", "test it"]
    finally:
        store.close()

    again = make_app(settings=settings, resume="latest")
    async with again.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        after = visible_state(again)
    # The banner of the finished compaction is not part of the stored state; all else is.
    assert after == before


async def test_sessions_screen_resumes_the_chosen_session(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    settings = offline_settings()
    first = build_session(db_path, workspace, settings, ("read @README.md",), title="first")
    build_session(db_path, workspace, settings, ("ls",), title="second")
    app = make_app(settings=settings, resume="latest")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        assert screen.query_one(SessionHeader).info.title == "second"
        await pilot.press("f2")
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        table = app.screen.query_one(DataTable)
        assert table.row_count == 2
        titles = [str(table.get_row_at(i)[2]) for i in range(2)]
        assert titles == ["second", "first"]
        await pilot.press("down", "enter")
        await settle(pilot)
        assert app.screen is screen
        assert screen.session_id == first
        assert screen.query_one(SessionHeader).info.title == "first"
        chat = screen.query_one(ChatView)
        assert "read @README.md" in chat.blocks[0].body


async def test_archive_shows_summary_beside_the_segment(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    settings = offline_settings(keep_rounds=1)
    build_session(db_path, workspace, settings, compact=True)
    app = make_app(settings=settings, resume=1)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        screen = await screen_after(pilot, "f3", ArchiveScreen)
        assert screen.query_one(OptionList).option_count == 1
        segment = screen.query_one("#archive-segment", BlockView)
        archived = [b.data for b in segment.blocks if isinstance(b.data, Message)]
        assert {m.meta.round for m in archived} == {1, 2}
        title = str(screen.query_one("#archive-segment-pane").border_title)
        assert "r1–2" in title and "tok" in title
        assert "Summary" in str(screen.query_one("#archive-summary-pane").border_title)
        await pilot.press("escape")
        assert app.screen is main_screen(app)


async def test_auto_compaction_mid_round_redraws_history(make_app: AppFactory) -> None:
    # L1 alone is ~3 100 tokens: with a 4 200-token window (threshold 3 360) the budget rule
    # fires on the third input, before the round opens.
    settings = offline_settings(keep_rounds=1, context_window=4_200)
    provider = GatedProvider(settings, stop_at=5)  # the first model call of round 3
    app = make_app(settings=settings, provider=provider)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "ls")
        await ask(pilot, "ls src")
        await ask(pilot, "read @README.md", wait=False)
        await wait_until(pilot, provider.waiting.is_set)
        await pilot.pause()
        history = screen.query_one(HistoryView)
        assert screen.busy == "round"
        first = history.blocks[0]
        assert isinstance(first.data, Summary)
        assert (first.data.first_round, first.data.last_round) == (1, 1)
        assert "auto compaction" in str(screen.query_one("#history-banner").render())
        provider.release.set()
        await settle(pilot)
        assert isinstance(history.blocks[0].data, Summary)
        rounds = {b.data.meta.round for b in history.blocks if isinstance(b.data, Message)}
        assert rounds == {2, 3}


async def test_budget_warning_when_nothing_can_be_compacted(make_app: AppFactory) -> None:
    # over the threshold (3 200) with L1 alone (~3 350), yet inside the window: the offline
    # provider refuses a request over the window, as the API does
    settings = offline_settings(keep_rounds=10, context_window=4_000)
    app = make_app(settings=settings)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "ls")
        await ask(pilot, "ls src")
        gauge = screen.query_one(TokenGauge)
        assert gauge.state is not None and gauge.state.severity == "over"
        warning = gauge.state.warning
        assert warning is not None and "layered will not compact: nothing to compact" in warning
        assert screen.query_one("#gauge-warning").display
        toasts = [str(t.render()) for t in app.screen.query("Toast")]
        assert any("CTXSCOPE_KEEP_ROUNDS" in t for t in toasts)  # the engine's BudgetWarning


async def test_preview_edit_commit_and_abandon(make_app: AppFactory, db_path: Path) -> None:
    settings = offline_settings(keep_rounds=1)
    app = make_app(settings=settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        for text in THREE_ROUNDS:
            await ask(pilot, text)
        # abandon: the draft is dropped, nothing is stored (not even a record)
        await pilot.press("f5", "ctrl+r")
        await settle(pilot)
        assert isinstance(app.screen, CompactPreviewModal)
        draft = app.screen.query_one("#compact-preview-summary", TextArea).text
        assert draft.startswith("## 📌 Archived Session Summary")
        assert "archives" in str(app.screen.query_one("#compact-preview-plan").render())
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, CompactPreviewModal)
        # edit, then commit: the edit is what is stored and sent, the draft kept beside it
        await pilot.press("f5", "ctrl+r")
        await settle(pilot)
        area = app.screen.query_one("#compact-preview-summary", TextArea)
        area.text = "Rounds 1–2: built a calculator; keep its API (add, mul)."
        await pilot.press("ctrl+s")
        await settle(pilot)
        request = app.screen.agent.preview().request  # type: ignore[attr-defined]
        assert request.system[-1]["text"] == area.text

    store = Store.open(db_path)
    try:
        [comp] = store.compactions(1)
        assert comp.stats["edited"] is True and comp.stats["draft_summary"] == draft
        assert store.history(1).summaries[0].content == area.text
    finally:
        store.close()


async def test_sessions_screen_filters_previews_renames_and_deletes(
    make_app: AppFactory, db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    settings = offline_settings(keep_rounds=1)
    # F2 lists the sessions by when they last ran: "first" an hour before "current"
    older = timedelta(hours=4)
    first = build_session(db_path, workspace, settings, title="first", compact=True, age=older)
    build_session(db_path, other, settings, ("ls",), title="not here", age=older)
    build_session(db_path, workspace, settings, ("ls src",), title="current")
    app = make_app(settings=settings, resume=3)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await pilot.press("f2")
        await settle(pilot)
        sessions = app.screen
        assert isinstance(sessions, SessionsScreen)
        table = sessions.query_one(DataTable)
        assert [str(table.get_row_at(i)[2]) for i in range(table.row_count)] == ["current", "first"]
        await pilot.press("w")
        await settle(pilot)
        assert table.row_count == 3
        await pilot.press("w")
        await settle(pilot)
        await pilot.press("down")
        await settle(pilot)
        preview = str(sessions.query_one("#sessions-preview").render())
        assert "#1 first" in preview and "first: read @src/calc.py" in preview
        await pilot.press("r")
        await pilot.pause()
        rename = app.screen.query_one("#rename-input", Input)
        rename.value = "calculator"
        await pilot.press("enter")
        await settle(pilot)
        assert app.store.get_session(first).title == "calculator"
        await pilot.press("d")
        await pilot.pause()
        await pilot.press("escape")  # keep it
        await settle(pilot)
        assert table.row_count == 2
        await pilot.press("d")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert [str(table.get_row_at(i)[2]) for i in range(table.row_count)] == ["current"]
        await pilot.press("d")  # the open session is not deleted
        await settle(pilot)
        assert table.row_count == 1
    store = Store.open(db_path)
    try:
        assert [i.session.id for i in store.list_sessions()] == [3, 2]
        assert store.segments(first) == [] and store.observations(first) == []
    finally:
        store.close()


HOLD_LEASE = """
import sys, time
from engine.store import Store
store = Store.open(sys.argv[1])
lease = store.acquire_lease(int(sys.argv[2]), "round")
print("held", flush=True)
time.sleep(60)
"""


async def test_delete_refuses_a_session_another_process_writes(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    import subprocess
    import sys

    settings = offline_settings(keep_rounds=1)
    busy = build_session(db_path, workspace, settings, ("ls",), title="busy")
    build_session(db_path, workspace, settings, ("ls src",), title="current")
    root = Path(__file__).resolve().parents[2]
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LEASE, str(db_path), str(busy)],
        stdout=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        app = make_app(settings=settings, resume=2)
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(pilot)
            await pilot.press("f2")
            await settle(pilot)
            table = app.screen.query_one(DataTable)
            assert [str(table.get_row_at(i)[2]) for i in range(table.row_count)] == [
                "current",
                "busy",
            ]
            await pilot.press("down", "d")
            await pilot.pause()
            await pilot.press("y")
            await settle(pilot)
            assert table.row_count == 2
            shown = [n.message for n in app._notifications]  # noqa: SLF001 - the toast text
            assert (
                f"session {busy} is being written by pid {holder.pid}, round since" in (shown[-1])
            )
    finally:
        holder.kill()
        holder.wait()
    store = Store.open(db_path)
    try:
        assert store.get_session(busy).title == "busy"
        store.delete_session(busy)  # its holder is gone: the delete goes through
        assert [i.session.id for i in store.list_sessions()] == [2]
    finally:
        store.close()
