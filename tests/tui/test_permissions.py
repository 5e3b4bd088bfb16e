"""Permission prompts for Bash and file changes (policy ``ask``), and interrupting a round.

The agent's worker blocks in the asker until the dialog answers; Esc on the main screen while
the dialog is up cancels the round, which must close the dialog and deny — never leave the
worker waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.llm.base import ProviderRequest, ProviderResponse, StreamEvent
from engine.llm.offline import OfflineProvider
from engine.models import RoundStatus, Usage
from engine.store import Store
from tests.tui.conftest import AppFactory
from tests.tui.helpers import ask, main_screen, offline_settings, opened, settle, wait_until
from tools.base import PermissionRequest
from tui.bridge import PermissionGate
from tui.screens.permission_modal import PermissionModal
from tui.widgets.chat_view import ChatEntry, ChatView
from tui.widgets.scratchpad_view import ScratchpadView

pytestmark = pytest.mark.anyio


def observations(db_path: Path, session_id: int = 1) -> list[str]:
    store = Store.open(db_path)
    try:
        return [o.text for o in store.observations(session_id)]
    finally:
        store.close()


async def test_allow_once_runs_the_command(make_app: AppFactory, db_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await ask(pilot, "run `echo hello-from-bash`", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal))
        modal = app.screen
        assert isinstance(modal, PermissionModal)
        assert modal.request.kind == "bash"
        assert "echo hello-from-bash" in str(modal.query_one("#permission-summary").render())
        await pilot.press("a")
        await settle(pilot)
        assert app.screen is main_screen(app)
    assert any("hello-from-bash" in text for text in observations(db_path))


async def test_always_stops_asking_for_the_session(make_app: AppFactory) -> None:
    app = make_app()
    asked: list[PermissionRequest] = []
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "run `echo one`", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal))
        assert isinstance(app.screen, PermissionModal)
        asked.append(app.screen.request)
        await pilot.press("s")
        await settle(pilot)
        await ask(pilot, "run `echo two`")
        assert app.screen is screen
        assert len(asked) == 1
        answer = [b.data for b in screen.query_one(ChatView).blocks][-1]
        assert isinstance(answer, ChatEntry) and "echo two" in answer.text


async def test_deny_tells_the_agent(make_app: AppFactory, db_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await ask(pilot, "run `echo nope`", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal))
        await pilot.press("escape")
        await settle(pilot)
    texts = observations(db_path)
    assert texts and "denied" in texts[-1]


async def test_interrupt_while_the_dialog_is_up_denies_and_closes_it(
    make_app: AppFactory, db_path: Path
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "run `echo never`", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal))
        # Esc in the dialog means deny; interrupting comes from the main screen's action.
        await screen.run_action("interrupt")
        await settle(pilot)
        assert app.screen is screen
        assert screen.busy is None
        assert list(screen.query_one(ScratchpadView).blocks) == []
        last = [b.data for b in screen.query_one(ChatView).blocks][-1]
        assert isinstance(last, ChatEntry) and last.interrupted
    store = Store.open(db_path)
    try:
        assert [r.status for r in store.rounds(1)] == [RoundStatus.INTERRUPTED]
    finally:
        store.close()
    assert not any("never" in text and "denied" not in text for text in observations(db_path))


class WritingProvider(OfflineProvider):
    """Asks to create a file once, then answers."""

    def complete(
        self,
        request: ProviderRequest,
        on_event: Callable[[StreamEvent], None],
        cancel: Any = None,
    ) -> ProviderResponse:
        last = request.messages[-1]["content"]
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last):
            content: list[dict[str, Any]] = [{"type": "text", "text": "Written."}]
            return ProviderResponse(content=content, stop_reason="end_turn", usage=Usage())
        call = {
            "type": "tool_use",
            "id": "toolu_write_1",
            "name": "Write",
            "input": {"file_path": "src/mul.py", "content": "def mul(a, b):\n    return a * b\n"},
        }
        return ProviderResponse(content=[call], stop_reason="tool_use", usage=Usage())


async def test_file_change_shows_the_diff(make_app: AppFactory, workspace: Path) -> None:
    settings = offline_settings()
    app = make_app(settings=settings, provider=WritingProvider(settings))
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await ask(pilot, "add mul", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal))
        modal = app.screen
        assert isinstance(modal, PermissionModal) and modal.request.kind == "edit"
        detail = modal.request.detail
        assert "+def mul(a, b):" in detail and "+    return a * b" in detail
        shown = str(modal.query_one("#permission-detail Static").render())
        assert "+    return a * b" in shown
        await pilot.press("d")
        await settle(pilot)
    assert not (workspace / "src" / "mul.py").exists()


def test_gate_denies_when_cancelled_and_never_blocks() -> None:
    posted: list[object] = []

    class Target:
        def post_message(self, message: object) -> bool:
            posted.append(message)
            return True

    gate = PermissionGate(Target())  # type: ignore[arg-type]
    request = PermissionRequest("Bash", "bash", "ls", "ls")
    result: list[str] = []
    worker = threading.Thread(target=lambda: result.append(gate(request)))
    worker.start()
    # The question is posted; nobody answers; cancelling must release the worker.
    for _ in range(200):
        if posted:
            break
        threading.Event().wait(0.01)
    gate.cancel()
    worker.join(2)
    assert not worker.is_alive()
    assert result == ["deny"]
    assert [type(m).__name__ for m in posted] == ["PermissionRequested", "PermissionWithdrawn"]
    assert gate(request) == "deny"  # still cancelled: no new question is posted
    assert len(posted) == 2
