"""Helpers for the workbench tests: drive the app, wait for it, build stored sessions.

``build_session`` runs offline rounds headless (the same engine the app uses) and then pins
every stored timestamp, so pictures that show times or summaries (whose A5 template quotes the
archived time range) are the same on every run.
"""

from __future__ import annotations

import asyncio
import html
import os
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input
from textual.worker import WorkerCancelled

from engine.llm.base import (
    OFFLINE_NAME,
    ProviderRequest,
    ProviderResponse,
    StreamEvent,
)
from engine.llm.offline import OfflineProvider
from engine.models import Message
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store
from engine.store.models import (
    CompactionRow,
    MessageRow,
    RoundRow,
    SessionRow,
    SummaryRow,
    UsageRow,
)
from tui.app import CtxscopeApp
from tui.screens.main_screen import MainScreen
from tui.widgets.block_view import BlockView

FIXED_NOW = datetime(2025, 3, 14, 15, 0, tzinfo=UTC)
"""The clock of every test app."""
FIXED_MTIME = datetime(2025, 3, 1, 9, 30, tzinfo=UTC).timestamp()

WORKSPACE_FILES = {
    "README.md": "# demo\n\nA tiny calculator used by the ctxscope tests.\n",
    "CODE_LAW.md": "- Keep functions small.\n- Every change comes with a test.\n",
    "src/calc.py": ("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"),
    "src/parser.py": (
        "import re\n"
        "\n"
        "TOKEN = re.compile(r'\\d+|[+-]')\n"
        "\n"
        "\n"
        "def tokens(text):\n"
        "    return TOKEN.findall(text)\n"
    ),
    "tests/test_calc.py": (
        "from src.calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    ),
}


def make_workspace(root: Path) -> Path:
    """Write the fixed files under ``root/demo`` with fixed mtimes; return the folder."""
    workspace = root / "demo"
    for rel, text in WORKSPACE_FILES.items():
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        os.utime(path, (FIXED_MTIME, FIXED_MTIME))
    return workspace


def offline_settings(**overrides: Any) -> Settings:
    """Offline, permission prompts on, a small window so the gauge visibly moves."""
    values: dict[str, Any] = {
        "model": "offline",
        "bash_policy": "ask",
        "edit_policy": "ask",
        "keep_rounds": 2,
        "context_window": 20_000,
        "strategy": "layered",
    }
    values.update(overrides)
    return Settings(**values)


THREE_ROUNDS = (
    "read @src/calc.py",
    "ls src then grep def in src",
    "todo: add a mul function; test it",
)
"""Three offline rounds, each with tool calls (Read; LS + Grep; TodoWrite)."""


async def wait_until(
    pilot: Pilot[Any], predicate: Callable[[], bool], timeout: float = 10.0
) -> None:
    """Pause the pilot until ``predicate()`` holds (fails the test after ``timeout``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {predicate}")
        await pilot.pause(0.02)


def main_screen(app: CtxscopeApp) -> MainScreen:
    screen = app.main_screen
    assert screen is not None
    return screen


async def settle(pilot: Pilot[Any]) -> None:
    """Wait for every worker, then let the messages they posted be handled."""
    for _ in range(2):
        await _workers_done(pilot.app)
        await pilot.pause()


async def _workers_done(app: Any) -> None:
    """Every worker running now has ended. One cancelled is ended too: an exclusive worker
    (the strategy's decision, a redraw) is cancelled when a newer one of its group starts,
    which a loaded machine makes likelier (``wait_for_complete`` raised then)."""
    for worker in list(app.workers):
        try:
            await worker.wait()
        except WorkerCancelled:
            pass


ScreenT = TypeVar("ScreenT", bound=Screen[Any])


async def screen_after(pilot: Pilot[Any], key: str, kind: type[ScreenT]) -> ScreenT:
    """Press ``key``; the screen of type ``kind`` it opens, once on top with its workers done."""
    await pilot.press(key)
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, kind))
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, kind)
    return screen


async def opened(pilot: Pilot[Any]) -> MainScreen:
    """Wait until the main screen has its session."""
    app = pilot.app
    assert isinstance(app, CtxscopeApp)
    await wait_until(pilot, lambda: main_screen(app).agent is not None)
    await settle(pilot)
    return main_screen(app)


async def ask(pilot: Pilot[Any], text: str, wait: bool = True) -> None:
    """Type ``text`` in the input box, send it, and (by default) wait for the round."""
    app = pilot.app
    assert isinstance(app, CtxscopeApp)
    box = main_screen(app).query_one("#input", Input)
    box.focus()
    box.value = text
    await pilot.pause()
    await pilot.press("enter")
    if wait:
        await settle(pilot)


_SVG_TEXT = re.compile(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>')
CELL_PX = 12.2
"""Width of one terminal cell in Rich's SVG export."""


def screen_lines(app: App[Any]) -> list[str]:
    """The screen as the user sees it, one string per row (read from the SVG screenshot, so
    overlapping widgets show as drawn, whatever is on top)."""
    rows: dict[float, dict[int, str]] = {}
    for x, y, raw in _SVG_TEXT.findall(app.export_screenshot()):
        text = html.unescape(raw).replace("\xa0", " ")
        row = rows.setdefault(float(y), {})
        start = round(float(x) / CELL_PX)
        for i, ch in enumerate(text):
            row[start + i] = ch
    out = []
    for y in sorted(rows):
        cells = rows[y]
        out.append("".join(cells.get(i, " ") for i in range(max(cells) + 1)) if cells else "")
    return out


def pin_times(store: Store, session_id: int, start: datetime) -> None:
    """Rewrite every timestamp of a session to ``start`` + one minute per row, in id order."""
    step = timedelta(minutes=1)
    store.bind()
    for table in (MessageRow, UsageRow):
        rows = table.select().where(table.session == session_id).order_by(table.id)
        for i, row in enumerate(rows):
            table.update(created_at=start + i * step).where(table.id == row.id).execute()
    for i, rnd in enumerate(RoundRow.select().where(RoundRow.session == session_id)):
        RoundRow.update(started_at=start + i * step, finished_at=start + i * step).where(
            RoundRow.id == rnd.id
        ).execute()
    last = start + timedelta(hours=1)
    for table in (SummaryRow, CompactionRow):
        table.update(created_at=last).where(table.session == session_id).execute()
    SessionRow.update(created_at=start, updated_at=last).where(
        SessionRow.id == session_id
    ).execute()


def build_session(
    db_path: Path,
    workspace: Path,
    settings: Settings,
    inputs: tuple[str, ...] = THREE_ROUNDS,
    *,
    title: str = "",
    compact: bool = False,
    age: timedelta = timedelta(hours=3),
) -> int:
    """Store a session of offline rounds (optionally compacted) with pinned timestamps."""
    store = Store.open(db_path)
    try:
        session = store.create_session(
            workspace=str(workspace),
            title=title or inputs[0][:60],
            provider=OFFLINE_NAME,
            model="offline",
            strategy=settings.strategy,
        )
        assert session.id is not None
        agent = Agent(store, session, settings, OfflineProvider(settings), workspace)
        for text in inputs:
            agent.run(text)
        start = FIXED_NOW - age
        pin_times(store, session.id, start)
        if compact:
            # A fresh agent reads the pinned times, so the summary's time range is fixed too.
            fresh = Agent(store, session, settings, OfflineProvider(settings), workspace)
            fresh.compact("keep the calculator API")
            pin_times(store, session.id, start)
        return session.id
    finally:
        store.close()


class GatedProvider(OfflineProvider):
    """The offline provider, stopping before call ``stop_at`` until the test releases it."""

    def __init__(self, settings: Settings, stop_at: int) -> None:
        super().__init__(settings)
        self.stop_at = stop_at
        self.calls = 0
        self.waiting = threading.Event()
        self.release = threading.Event()

    def complete(
        self,
        request: ProviderRequest,
        on_event: Callable[[StreamEvent], None],
        cancel: threading.Event | None = None,
    ) -> ProviderResponse:
        self.calls += 1
        if self.calls == self.stop_at:
            self.waiting.set()
            if not self.release.wait(10):
                raise AssertionError("the test never released the provider")
        return super().complete(request, on_event, cancel)


def messages_in(app: CtxscopeApp) -> list[Message]:
    """The history messages the history pane shows, in order."""
    view = main_screen(app).query_one("#history", BlockView)
    return [b.data for b in view.blocks if isinstance(b.data, Message)]
