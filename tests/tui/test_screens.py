"""The context inspector, the narrow layout, the command palette, and a long session."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.widgets import Collapsible

from engine.context.builder import LAYERS
from engine.context.history import HistoryManager
from engine.models import Message, MessageMeta, RoundStatus, ToolCall
from engine.store import Store
from tests.tui.conftest import AppFactory
from tests.tui.helpers import ask, main_screen, offline_settings, opened, settle
from tui.screens.inspector_screen import InspectorScreen
from tui.widgets.history_view import HistoryView

pytestmark = pytest.mark.anyio


async def test_inspector_shows_every_layer_with_its_tokens(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "read @src/calc.py")
        assert screen.agent is not None
        expected = screen.agent.preview().layers
        await pilot.press("f4")
        await settle(pilot)
        inspector = app.screen
        assert isinstance(inspector, InspectorScreen)
        items = list(inspector.query(Collapsible))
        assert len(items) == len(LAYERS) + 1
        total = sum(expected.values())
        for name, item in zip(LAYERS, items, strict=False):
            share = f"{100 * expected[name] / total:.0f}%"
            assert item.title == f"{name} · {expected[name]:,} tok · {share}"
        assert items[-1].title == "raw JSON request"
        assert all(item.collapsed for item in items)
        await pilot.press("e")
        assert not any(item.collapsed for item in items)
        raw = items[-1].query_one("TextArea").text  # type: ignore[attr-defined]
        assert '"messages"' in raw and "src/calc.py" in raw
        code_law = items[LAYERS.index("L2 CODE_LAW")].query_one("TextArea").text  # type: ignore[attr-defined]
        assert "Keep functions small" in code_law
        await pilot.press("escape")
        assert app.screen is screen


async def test_narrow_layout_switches_panes(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(pilot)
        assert screen.has_class("-narrow")
        shown = {
            name: screen.query_one(f"#{name}-pane").display
            for name in ("chat", "scratch", "history", "gauge")
        }
        assert shown == {"chat": True, "scratch": False, "history": True, "gauge": False}
        await pilot.press("f7")
        assert screen.pane == "gauge"
        assert screen.query_one("#gauge-pane").display
        assert not screen.query_one("#history-pane").display
        await pilot.press("f7")
        assert screen.pane == "scratch" and screen.query_one("#scratch-pane").display
    wide = make_app()
    async with wide.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        assert screen.has_class("-wide")
        assert all(
            screen.query_one(f"#{name}-pane").display
            for name in ("chat", "scratch", "history", "gauge")
        )
        assert screen.check_action("next_pane", ()) is False


async def test_every_action_is_in_the_command_palette(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        titles = [c.title for c in app.get_system_commands(screen)]
        for label in ("Sessions", "Archive", "Context", "Compact", "Last pad", "New"):
            assert any(t.startswith(label + " (") for t in titles), label
        assert not any(t.startswith("Interrupt") for t in titles)  # nothing runs
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"Context", "enter")
        await settle(pilot)
        assert isinstance(app.screen, InspectorScreen)


def write_long_session(db_path: Path, workspace: Path, rounds: int) -> int:
    """``rounds`` rounds of five messages each, written straight through the history manager."""
    store = Store.open(db_path)
    try:
        session = store.create_session(str(workspace), "long", "offline", "offline")
        assert session.id is not None
        manager = HistoryManager(store, session.id, offline_settings())
        for n in range(1, rounds + 1):
            rnd, _ = manager.open_round(f"question {n}: look at src/mod{n}.py")
            call = ToolCall(id=f"toolu_{n}", name="Read", input={"file_path": f"src/mod{n}.py"})
            manager.append(
                rnd.index,
                Message(
                    role="assistant",
                    content=f"Thought: read mod{n}",
                    tool_calls=[call],
                    meta=MessageMeta(step=1),
                ),
            )
            manager.append(
                rnd.index,
                Message(
                    role="tool",
                    content='{"status":"success","data":{"lines":"1-40"}}',
                    meta=MessageMeta(step=1, tool_name="Read", tool_use_id=call.id),
                ),
            )
            manager.append(
                rnd.index,
                Message(role="assistant", content=f"Thought: done {n}", meta=MessageMeta(step=2)),
            )
            manager.append(
                rnd.index,
                Message(
                    role="assistant", content=f"answer {n}", meta=MessageMeta(step=3, final=True)
                ),
            )
            manager.finish_round(rnd.index, RoundStatus.FINISHED)
        return session.id
    finally:
        store.close()


async def test_a_long_session_is_rendered_lazily(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    write_long_session(db_path, workspace, rounds=400)
    app = make_app(resume="latest")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        history = screen.query_one(HistoryView)
        assert history.messages_shown() == 2000
        assert history.row_count > 2000
        # One widget for the whole history, not one per message.
        assert len(list(app.query("*"))) < 150
        history.focus()
        await pilot.press("home")
        assert history.scroll_y == 0
        await pilot.press("end")
        assert history.scroll_y == history.max_scroll_y > 0
        assert (
            main_screen(app)
            .query_one("#history-pane")
            .border_subtitle.startswith("0 summaries 0 tok · 2,000 messages")
        )


async def test_execution_log_of_a_message_window_session(make_app: AppFactory) -> None:
    """Seed 003's log: one entry per run, listed by Ctrl+L (also a palette entry)."""
    from textual.widgets import DataTable

    from tests.tui.helpers import THREE_ROUNDS, ask, offline_settings, opened
    from tui.screens.execution_log_screen import ExecutionLogScreen

    app = make_app(settings=offline_settings(strategy="message-window"))
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        for text in THREE_ROUNDS[:2]:
            await ask(pilot, text)
        await pilot.press("ctrl+l")
        assert isinstance(app.screen, ExecutionLogScreen)
        table = app.screen.query_one(DataTable)
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        assert [str(r[1]) for r in rows] == ["read @src/calc.py", "ls src then grep def in src"]
        assert str(rows[0][3]) == "Read" and str(rows[1][3]) == "LS, Grep"
        await pilot.press("escape")
        assert not isinstance(app.screen, ExecutionLogScreen)


def test_execution_log_marks_failed_calls() -> None:
    """A failed call is marked ✗ in the tools column, and a merged entry says how many of its
    calls failed (seed 003 4.2 keeps ``hadToolFailure``; the log stores ``ok`` per call and a
    ``failed`` tally per tool once merged)."""
    from engine.compaction.execution_log import merge_entries, run_entry
    from tui.screens.execution_log_screen import tool_summary

    one = run_entry("r1", "fix it", "done", [("Read", {"path": "a.py"}, True)])
    two = run_entry("r2", "run it", "failed", [("Bash", {"command": "x"}, False)])
    three = run_entry("r3", "again", "ok", [("Bash", {"command": "y"}, True)])
    assert tool_summary(one) == "Read"
    assert tool_summary(two) == "Bash✗"
    assert tool_summary(merge_entries([one, two, three])) == "Read×1, Bash×2 (1✗)"
