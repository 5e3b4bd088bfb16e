"""Issue 39: F5 on a recording made a fork before a compaction that then stored nothing, and
the fork stayed. A change that does nothing makes no fork: the fork made for the compaction is
deleted and the recording opened again when the compaction is skipped (here: the summary call
fails and head-middle-tail skips, seed 004 F-007) or its preview is abandoned."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.llm.anthropic import AnthropicProvider
from engine.recordings.importing import import_session
from engine.settings.config import Settings
from engine.store import Store
from tests.fakes.anthropic_server import FakeAnthropicServer, error_reply
from tests.tui.conftest import AppFactory
from tests.tui.helpers import offline_settings, opened, settle, wait_until
from tests.tui.test_recorded_readonly import MAROT, show_json
from tui.screens.compact_preview_modal import CompactPreviewModal

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    """A fake Messages API on 127.0.0.1 whose every call fails (529 overloaded)."""
    with FakeAnthropicServer() as fake:
        fake.default = lambda _r: error_reply(529, "overloaded", error_type="overloaded_error")
        yield fake


def stored_sessions(db: Path) -> list[int]:
    store = Store.open(db)
    try:
        return sorted(i.session.id for i in store.list_sessions() if i.session.id is not None)
    finally:
        store.close()


NO_RETRY = {"head-middle-tail": {"max_retries": 0}}
"""Seed 004 F-007 ``COMPACT_MAX_RETRIES = 0``: one summary call, then skip (the session
stores the numbers it plans with at import)."""


def import_marot(db: Path, workspace: Path, strategy: str) -> int:
    store = Store.open(db)
    settings = Settings(strategy=strategy, strategies=NO_RETRY)
    report = import_session(store, MAROT, str(workspace), settings=settings)
    store.close()
    assert report.session.id is not None
    return report.session.id


async def test_a_skipped_compaction_leaves_no_fork(
    make_app: AppFactory, db_path: Path, workspace: Path, server: FakeAnthropicServer
) -> None:
    """F5, Enter on marot's recording (head-middle-tail, no retry): the summary call fails
    once, the compaction is skipped ("Compaction skipped: nothing was …"), and the fork made
    for it is gone: the database holds the recording only, open again, unchanged."""
    sid = import_marot(db_path, workspace, "head-middle-tail")
    before = show_json(db_path, sid)
    settings = offline_settings(
        model="claude-opus-4-6",
        strategy="head-middle-tail",
        strategies=NO_RETRY,
        max_retries=0,
    )
    provider = AnthropicProvider(settings, api_key="sk-test", base_url=server.url)
    app = make_app(resume=sid, settings=settings, provider=provider)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await pilot.press("f5")
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("not kept" in n.message for n in app._notifications))  # noqa: SLF001
        await wait_until(pilot, lambda: screen.session_id == sid and screen.busy is None)
        await settle(pilot)
        notes = [(n.title, n.message) for n in app._notifications]  # noqa: SLF001
        assert len(server.requests) == 1  # the one summary call, failed
        assert any(t == "Nothing compacted" and "skipped" in m for t, m in notes), notes
        assert screen.agent is not None and screen.agent.session.recorded
    assert stored_sessions(db_path) == [sid]
    assert show_json(db_path, sid) == before


async def test_an_abandoned_preview_leaves_no_fork(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """F5, Ctrl+R (the draft first), Esc: "Compaction abandoned; nothing was changed." — and
    no fork is left either."""
    sid = import_marot(db_path, workspace, "layered")
    app = make_app(resume=sid)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await pilot.press("f5")
        await pilot.pause()
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, CompactPreviewModal), 20)
        assert screen.session_id != sid  # the preview is the fork's
        await pilot.press("escape")
        await wait_until(pilot, lambda: screen.session_id == sid and screen.busy is None)
        await settle(pilot)
        notes = [n.message for n in app._notifications]  # noqa: SLF001
        assert "Compaction abandoned; nothing was changed." in notes
    assert stored_sessions(db_path) == [sid]


async def test_a_stored_compaction_keeps_its_fork(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """The other side: F5, Enter with the offline summary stores a compaction on the fork,
    which stays (the recording and one fork)."""
    sid = import_marot(db_path, workspace, "layered")
    app = make_app(resume=sid)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await pilot.press("f5")
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: any(n.title == "Compacted" for n in app._notifications))  # noqa: SLF001
        await settle(pilot)
        fork = screen.session_id
    assert fork is not None and fork != sid
    assert stored_sessions(db_path) == [sid, fork]
