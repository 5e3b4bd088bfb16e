"""Issue 31: a session recorded by ``ctxscope proxy`` in the workbench — F10 opens its
requests, one row each, and the selected one's layers, diff and cost below."""

from __future__ import annotations

import pytest
from textual.widgets import TextArea

from engine.exchanges import Exchange
from engine.models import Usage
from engine.store import Store
from tests.proxy.shapes import REMINDER, request, user
from tests.tui.conftest import AppFactory
from tests.tui.helpers import opened, screen_after, settle, wait_until
from tui.screens.detail_modal import DetailModal
from tui.screens.requests_screen import RequestsScreen

pytestmark = pytest.mark.anyio


def record(store: Store) -> int:
    """Two Claude Code requests (their documented shape: system blocks, tools, user_id,
    cache markers), the second with the reminder in its first message changed."""
    first = request([user(REMINDER, "Fix the failing test")])
    changed = user(REMINDER.replace("make test", "pytest -q"), "Fix the failing test")
    answer = {"role": "assistant", "content": [{"type": "text", "text": "Looking."}]}
    second = request([changed, answer, user("go on")])
    usages = [
        Usage(input_tokens=20, output_tokens=40, cache_creation_input_tokens=3000),
        Usage(input_tokens=3100, output_tokens=10, cache_read_input_tokens=0),
    ]
    stored = None
    for body, usage in zip((first, second), usages, strict=True):
        stored = store.add_exchange(
            Exchange(
                request=body,
                model="claude-sonnet-4-6",
                status=200,
                stream=True,
                usage=usage,
                thread="main",
                response={"role": "assistant", "content": [], "stop_reason": "end_turn"},
            ),
            source="proxy:tui-test",
            title="Fix the failing test",
        )
    assert stored is not None and stored.session_id is not None
    return stored.session_id


async def test_f10_shows_each_request_with_its_layers_diff_and_cost(
    make_app: AppFactory,
) -> None:
    app = make_app()
    session_id = record(app.store)
    app = make_app(resume=session_id)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        screen = await screen_after(pilot, "f10", RequestsScreen)
        await wait_until(pilot, lambda: len(screen.report) == 2)
        table = screen.query_one("#requests-table")
        assert table.row_count == 2  # type: ignore[attr-defined]
        row = [str(c) for c in table.get_row_at(1)]  # type: ignore[attr-defined]
        assert row[1] == "main"
        # Message 0 changed: nothing kept, all three sent from it on are new, the old one gone.
        assert row[9] == "+3 -1"
        assert row[10] == "broke: messages[0]"
        detail = str(screen.query_one("#requests-detail").render())
        assert "request #1" in detail
        assert "cached prefix intact" in detail
        await pilot.press("down")
        await pilot.pause()
        detail = str(screen.query_one("#requests-detail").render())
        assert "cached prefix broke at messages[0]: a system reminder in message 0 changed" in (
            detail
        )
        assert "newest input: go on" in detail
        # The layers add up to what the API reported: 3,100 uncached input tokens.
        assert sum(x["tokens"] for x in screen.report[1]["layers"]) == 3100
        # A proxy still recording: a third request appears without reopening the screen.
        extra = request([user("one more")])
        app.store.add_exchange(
            Exchange(request=extra, model="claude-sonnet-4-6", status=200, thread="main"),
            source="proxy:tui-test",
        )
        await wait_until(pilot, lambda: len(screen.report) == 3)
        await settle(pilot)
        assert table.row_count == 3  # type: ignore[attr-defined]
        await pilot.press("w")
        whatifs = screen.query_one("#requests-whatifs")
        await wait_until(pilot, lambda: "as recorded" in str(whatifs.render()), timeout=60)
        shown = str(whatifs.render())
        for strategy in ("layered", "masking", "mock-user"):
            assert strategy in shown
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RequestsScreen)


async def test_enter_on_a_request_shows_it_as_sent_beside_what_it_changed(
    make_app: AppFactory,
) -> None:
    """Issue 40: Enter on request #2 shows its body (the changed reminder's text, its cache
    markers) and its diff against #1: the reminder's line, before and after."""
    app = make_app()
    session_id = record(app.store)
    app = make_app(resume=session_id)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        screen = await screen_after(pilot, "f10", RequestsScreen)
        await wait_until(pilot, lambda: len(screen.report) == 2)
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailModal))
        body, diff = (area.text for area in app.screen.query(TextArea))
        assert '"text": "go on"' in body and body.count('"cache_control"') == 3
        assert "request #2 against #1" in diff
        assert "-As you answer, use this context: CLAUDE.md says run make test." in diff
        assert "+As you answer, use this context: CLAUDE.md says run pytest -q." in diff
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, RequestsScreen))
