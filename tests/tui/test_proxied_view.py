"""Issue 40: a session recorded by ``ctxscope proxy`` opens in the workbench as a conversation
— its chat, its history and the gauge's recorded usage — built from the exact requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.store import Store
from tests.fakes.anthropic_server import (
    FakeAnthropicServer,
    fake_anthropic,  # noqa: F401  (the fixture)
)
from tests.proxy.conftest import RunningProxy
from tests.proxy.test_conversation import three_requests
from tests.tui.conftest import AppFactory
from tests.tui.helpers import messages_in, opened
from tui.widgets.chat_view import ChatView

pytestmark = pytest.mark.anyio


async def test_a_proxied_session_opens_with_its_chat_history_and_gauge(
    make_app: AppFactory,
    db_path: Path,
    fake_anthropic: FakeAnthropicServer,  # noqa: F811
) -> None:
    """Three requests through the proxy (the SDK, the fake API): the history holds the six
    messages of the conversation, the chat says the last answer, and the gauge shows the last
    call's usage as the API reported it (in 15, cache read 5,040: tests/proxy USAGES[2])."""
    proxy = RunningProxy(fake_anthropic.url, db_path)
    try:
        three_requests(fake_anthropic, proxy)
    finally:
        proxy.stop()
    store = Store.open(db_path)
    (sid,) = store.proxied_sessions()
    store.close()
    app = make_app(resume=sid)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        assert [m.role for m in messages_in(app)] == [
            "user", "assistant", "tool", "assistant", "user", "assistant"
        ]  # fmt: skip
        chat = screen.query_one(ChatView)
        bodies = [b.body for b in chat.blocks]
        assert "Fix the failing test in a.py" in bodies and "All tests pass." in bodies
        figures = str(screen.query_one("#gauge-figures").render())
        assert "in 15 · out 8" in figures and "cache read 5,040" in figures
