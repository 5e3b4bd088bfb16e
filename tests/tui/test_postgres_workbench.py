"""Issue 34: the workbench on ``--db postgresql://…`` as on SQLite, against a real server (the
``postgres_server`` fixture, tests/conftest.py): an imported recording shown the same, the
sessions screen listing it, a native round stored in PostgreSQL, the compare screen's replay, the
archive and its search (Recall on tsvector)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Input, Markdown

from engine.llm.offline import OfflineProvider
from engine.models import RecallHit, RoundStatus
from engine.recordings.importing import import_session
from engine.settings.config import Settings
from engine.store import Store
from tests.postgres_server import PostgresServer
from tests.tui.helpers import (
    FIXED_NOW,
    ask,
    build_session,
    main_screen,
    messages_in,
    offline_settings,
    opened,
    screen_after,
    settle,
    wait_until,
)
from tests.tui.test_sessions import visible_state
from tui.app import CtxscopeApp
from tui.screens.archive_screen import ArchiveScreen
from tui.screens.compare_screen import CompareScreen
from tui.screens.sessions_screen import COLUMNS, SessionsScreen
from tui.widgets.block_view import BlockView
from tui.widgets.chat_view import ChatView
from tui.widgets.session_header import SessionHeader

pytestmark = pytest.mark.anyio

POMODORO = (
    Path(__file__).parent.parent
    / "data"
    / "corpus"
    / "yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl"
)
# `jq -r 'select(.type=="assistant") | .message.model' FILE | sort | uniq -c`: all 75
# assistant records name this one model.
POMODORO_MODEL = "claude-sonnet-4-5-20250929"


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty database on the test server; dropped after."""
    url = postgres_server.create_database("tui")
    yield url
    postgres_server.drop_database(url)


@pytest.fixture
def apps() -> Iterator[list[CtxscopeApp]]:
    """The apps a test built; their stores are closed after it (before the database is
    dropped: ``pg_url`` is set up first, so torn down last)."""
    built: list[CtxscopeApp] = []
    yield built
    for app in built:
        app.store.close()


def _app(
    apps: list[CtxscopeApp],
    db: Path | str,
    workspace: Path,
    settings: Settings | None = None,
    **kwargs: Any,
) -> CtxscopeApp:
    """An app on ``db`` built as tests/tui/conftest.py's ``make_app`` builds one."""
    settings = settings or offline_settings()
    app = CtxscopeApp(
        db_path=db,
        workspace=workspace,
        settings=settings,
        provider=OfflineProvider(settings),
        clock=lambda: FIXED_NOW,
        workspace_label="demo",
        **kwargs,
    )
    apps.append(app)
    return app


def _import_pomodoro(db: Path | str, workspace: Path) -> int:
    store = Store.open(db)
    try:
        report = import_session(store, POMODORO, str(workspace), settings=Settings())
    finally:
        store.close()
    assert report.session.id is not None
    return report.session.id


async def _shown(app: CtxscopeApp) -> tuple[dict[str, object], str, int]:
    """What the main screen shows of the recording: every pane, the header's text, and how
    many history messages; then F2's list of sessions (its titles)."""
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        state = visible_state(app)
        header = str(screen.query_one(SessionHeader).render())
        count = len(messages_in(app))
        await pilot.press("f2")
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        table = app.screen.query_one(DataTable)
        state["sessions"] = [
            [str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)
        ]
    return state, header, count


async def test_an_imported_recording_shows_as_on_sqlite_and_f2_lists_it(
    pg_url: str, apps: list[CtxscopeApp], tmp_path: Path, workspace: Path
) -> None:
    on_sqlite = _import_pomodoro(tmp_path / "ctxscope.db", workspace)
    on_postgres = _import_pomodoro(pg_url, workspace)
    sqlite_state, sqlite_header, sqlite_count = await _shown(
        _app(apps, tmp_path / "ctxscope.db", workspace, resume=on_sqlite)
    )
    pg_state, pg_header, pg_count = await _shown(_app(apps, pg_url, workspace, resume=on_postgres))
    assert f"Claude Code · {POMODORO_MODEL}" in pg_header and "recorded" in pg_header
    assert "OFFLINE" not in pg_header
    assert pg_count > 0 and pg_count == sqlite_count
    assert pg_header == sqlite_header
    # F2: the one session, listed as on SQLite (its id, title, figures)
    sessions = pg_state["sessions"]
    assert isinstance(sessions, list) and len(sessions) == 1
    row = sessions[0]
    assert row[1] == str(on_postgres) and row[2].startswith("import: Build a simple Pomodoro")
    # rounds: the file's 3 prompts (jq over its non-meta user lines that are not tool results)
    # and its one local command's 3 lines (caveat, bash-input, bash-stdout), as
    # tests/tui/test_imported_view.py counts them
    assert row[COLUMNS.index("Rounds")] == "6"
    assert pg_state == sqlite_state


async def test_a_native_round_is_stored_in_postgresql(
    pg_url: str, apps: list[CtxscopeApp], workspace: Path
) -> None:
    app = _app(apps, pg_url, workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "read README.md")
        session_id = screen.session_id
        tool_results = [m.content for m in messages_in(app) if m.role == "tool"]
        # tests/tui/helpers.py WORKSPACE_FILES: README.md's first line
        assert len(tool_results) == 1 and "# demo" in tool_results[0]
        chat = main_screen(app).query_one(ChatView)
        answer = chat.blocks[-1].body
        # the offline model sums up what its tools returned: README.md is 3 lines
        # ("# demo", "", "A tiny calculator…" in WORKSPACE_FILES)
        assert "Read README.md: 3 lines" in answer
    store = Store.open(pg_url)
    try:
        rounds = store.rounds(session_id)
        assert [(r.index, r.status) for r in rounds] == [(1, RoundStatus.FINISHED)]
        stored = store.round_messages(session_id, 1)
        assert [m.role for m in stored][0] == "user"
        assert stored[0].content == "read README.md"
        assert any(m.role == "tool" and "# demo" in m.content for m in stored)
        assert stored[-1].role == "assistant" and stored[-1].content == answer
    finally:
        store.close()


COMPARED = ("read @src/calc.py", "ls src then grep def in src", "read @src/calc.py", "ls src")


async def _compare_rows(app: CtxscopeApp) -> list[list[str]]:
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        screen = await screen_after(pilot, "f9", CompareScreen)
        await wait_until(pilot, lambda: bool(screen.results), timeout=60)
        await settle(pilot)
        table = screen.query_one(DataTable)
        return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_f9_compares_as_on_sqlite(
    pg_url: str, apps: list[CtxscopeApp], tmp_path: Path, workspace: Path
) -> None:
    settings = offline_settings(keep_rounds=1, context_window=5_000)
    rows = []
    for db in (tmp_path / "ctxscope.db", pg_url):
        sid = build_session(db, workspace, settings, COMPARED)  # type: ignore[arg-type]
        rows.append(await _compare_rows(_app(apps, db, workspace, settings, resume=sid)))
    on_sqlite, on_postgres = rows
    # the six strategies (tests/tui/test_compare.py), one row each
    assert [r[0] for r in on_postgres] == [
        "layered", "reset-hint", "mock-user", "message-window", "head-middle-tail", "masking"
    ]  # fmt: skip
    assert on_postgres == on_sqlite


async def _archive_search(
    app: CtxscopeApp, word: str
) -> tuple[str, list[tuple[int, int, str, str]]]:
    """F3 on the open session: the first compaction's summary, then the hits of a search."""
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        screen = await screen_after(pilot, "f3", ArchiveScreen)
        summary = screen.query_one("#archive-summary", Markdown).source
        search = screen.query_one("#archive-search", Input)
        search.value = word
        search.focus()
        await pilot.press("enter")
        await settle(pilot)
        view = screen.query_one("#archive-segment", BlockView)
        hits = [b.data for b in view.blocks if isinstance(b.data, RecallHit)]
    return summary, [(h.message_id, h.round, h.role, h.snippet) for h in hits]


async def test_f3_archive_and_its_search_as_on_sqlite(
    pg_url: str, apps: list[CtxscopeApp], tmp_path: Path, workspace: Path
) -> None:
    """The archive's search is Recall: FTS5 on SQLite, tsvector on PostgreSQL."""
    settings = offline_settings(keep_rounds=1)
    shown = []
    for db in (tmp_path / "ctxscope.db", pg_url):
        sid = build_session(db, workspace, settings, compact=True)  # type: ignore[arg-type]
        shown.append(await _archive_search(_app(apps, db, workspace, settings, resume=sid), "calc"))
    (sqlite_summary, sqlite_hits), (pg_summary, pg_hits) = shown
    # as tests/tui/test_archive_search.py: rounds 1-2 archived, round 1 read src/calc.py
    assert "\n> keeps files read 1/1 · requests 2/2\n" in pg_summary
    assert pg_hits and {hit[1] for hit in pg_hits} <= {1, 2}
    assert (pg_summary, pg_hits) == (sqlite_summary, sqlite_hits)
