"""Pins in the workbench: Ctrl+T on a history message pins it, the pane shows it, and a compaction
from F5 keeps it (with the rest of its step)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.models import Message
from engine.store import Store
from tests.tui.conftest import AppFactory
from tests.tui.helpers import THREE_ROUNDS, ask, offline_settings, opened, settle
from tui.widgets.history_view import HistoryView

pytestmark = pytest.mark.anyio


async def test_pin_key_keeps_a_message_through_compaction(
    make_app: AppFactory, db_path: Path
) -> None:
    app = make_app(settings=offline_settings(keep_rounds=1))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        for text in THREE_ROUNDS:
            await ask(pilot, text)
        history = screen.query_one(HistoryView)
        history.focus()
        # the Read result of round 1
        target = next(
            i
            for i, b in enumerate(history.blocks)
            if isinstance(b.data, Message) and b.data.role == "tool" and b.data.meta.round == 1
        )
        history.cursor = target
        pinned_id = history.blocks[target].data.id
        await pilot.press("ctrl+t")
        await settle(pilot)
        block = next(b for b in history.blocks if isinstance(b.data, Message)
                     and b.data.id == pinned_id)  # fmt: skip
        assert block.data.pinned and any("pinned" in text for text, _ in block.header)
        await pilot.press("f5", "enter")
        await settle(pilot)
        kept = {b.data.id for b in history.blocks if isinstance(b.data, Message)}
        assert pinned_id in kept

    store = Store.open(db_path)
    try:
        messages = {m.id: m for m in store.history(1).messages}
        assert messages[pinned_id].pinned
        call = next(m for m in messages.values() if m.meta.round == 1 and m.tool_calls)
        assert pinned_id - 1 == call.id  # its call stayed with it
        assert store.compactions(1)[0].messages_compacted > 0
    finally:
        store.close()


async def test_the_inspector_marks_pinned_messages(make_app: AppFactory) -> None:
    from textual.widgets import TextArea

    from tui.screens.inspector_screen import InspectorScreen

    app = make_app(settings=offline_settings(keep_rounds=1))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, THREE_ROUNDS[0])
        history = screen.query_one(HistoryView)
        history.focus()
        history.cursor = next(
            i for i, b in enumerate(history.blocks)
            if isinstance(b.data, Message) and b.data.role == "user"
        )  # fmt: skip
        await pilot.press("ctrl+t")
        await settle(pilot)
        await pilot.press("f4")
        await settle(pilot)
        assert isinstance(app.screen, InspectorScreen)
        texts = [area.text for area in app.screen.query(TextArea)]
        history_text = next(t for t in texts if t.startswith("[user"))
        assert history_text.startswith(f"[user, pinned] {THREE_ROUNDS[0]}")
        assert "[assistant, pinned]" not in history_text  # only what was pinned
