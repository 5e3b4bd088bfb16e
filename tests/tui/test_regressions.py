"""Regression tests for the bugs found in hands-on use (issue 13), one or more per bug.

Each test failed on the code before its fix (checked by running it against the old code).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events

from engine.store import Store
from tests.tui.conftest import AppFactory
from tests.tui.helpers import ask, main_screen, offline_settings, opened, settle
from tui.widgets.chat_view import ChatEntry, ChatView

pytestmark = pytest.mark.anyio


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
