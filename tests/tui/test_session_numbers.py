"""The workbench plans with the numbers a session stores, and says which (issue 20)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.settings.params import changed_params, strategy_params
from engine.store import Store
from tests.tui.conftest import AppFactory
from tests.tui.helpers import offline_settings, opened
from tui.widgets.session_header import SessionHeader
from tui.widgets.token_gauge import TokenGauge

pytestmark = pytest.mark.anyio


async def test_a_resumed_session_plans_with_its_own_numbers(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """Seed 002: ``if total_tokens > COMPACT_TRIGGER_THRESHOLD`` — the session was stored with
    a 12 345 trigger in a 30 000 window; the workbench is started with a 20 000 window and the
    Init profile's 150 000 trigger, and plans with the session's numbers all the same."""
    store = Store.open(db_path)
    settings = offline_settings(strategy="mock-user")
    params = changed_params(
        strategy_params(settings, "mock-user"), "mock-user", {"trigger_tokens": 12_345}, 30_000
    )
    sid = store.create_session(str(workspace), "stored", strategy="mock-user", params=params).id
    store.close()

    app = make_app(settings=settings, resume=sid)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        assert screen.agent is not None
        assert screen.agent.settings.context_window == 30_000
        assert screen.agent.settings.strategies.mock_user.trigger_tokens == 12_345
        header = screen.query_one(SessionHeader)
        assert isinstance(header.tooltip, str)
        assert header.tooltip.startswith(
            "mock-user plans with window 30,000 · profile init · trigger_tokens 12,345 · "
            "long_result_chars 5,000"
        )
        gauge = screen.query_one(TokenGauge).state
        assert gauge is not None and gauge.context_window == 30_000
