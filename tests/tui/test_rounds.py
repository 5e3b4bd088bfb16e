"""End-to-end rounds in the workbench with the offline provider.

A question with an @file mention fills the live scratchpad (full observations), which empties
when the round closes; history gains the compressed steps; the gauge moves; errors from the
provider become notices; a fast text stream reaches the chat without flooding the queue.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from engine.llm.base import (
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    StreamEvent,
    StreamRetry,
    StreamText,
)
from engine.llm.offline import OfflineProvider
from engine.models import RoundStatus, Usage
from engine.settings.config import Settings
from engine.store import Store
from tests.tui.conftest import AppFactory
from tests.tui.helpers import (
    GatedProvider,
    ask,
    main_screen,
    messages_in,
    offline_settings,
    opened,
    settle,
    wait_until,
)
from tui.widgets.chat_view import ChatEntry, ChatView
from tui.widgets.scratchpad_view import ScratchpadView
from tui.widgets.token_gauge import TokenGauge

pytestmark = pytest.mark.anyio


async def test_round_fills_then_empties_the_scratchpad(make_app: AppFactory) -> None:
    settings = offline_settings()
    # Call 1 reads the mentioned file; the test holds call 2 to look at the round mid-way.
    provider = GatedProvider(settings, stop_at=2)
    app = make_app(settings=settings, provider=provider)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        gauge = screen.query_one(TokenGauge)
        before = gauge.state
        assert before is not None and before.steps == ()
        await ask(pilot, "read @src/calc.py then ls src", wait=False)
        await wait_until(pilot, provider.waiting.is_set)
        scratch = screen.query_one(ScratchpadView)
        await wait_until(pilot, lambda: any("def add" in b.body for b in scratch.blocks))

        # Mid-round: the scratchpad holds the thought, the action and the FULL observation.
        bodies = [b.body for b in scratch.blocks]
        assert any("must read it first" in body for body in bodies)
        assert any(body.startswith("Read ") and "src/calc.py" in body for body in bodies)
        assert any("def sub(a, b)" in body for body in bodies)
        # History already holds the compressed steps of this round.
        roles = [m.role for m in messages_in(app)]
        assert roles[:3] == ["user", "assistant", "tool"]
        assert "<system-reminder>" in messages_in(app)[0].content

        provider.release.set()
        await settle(pilot)

        assert list(scratch.blocks) == []
        stored = messages_in(app)
        assert stored[-1].role == "assistant" and stored[-1].meta.final
        assert [m.meta.tool_name for m in stored if m.role == "tool"] == ["Read", "LS"]
        chat = screen.query_one(ChatView)
        entries = [b.data for b in chat.blocks if isinstance(b.data, ChatEntry)]
        assert [e.role for e in entries] == ["user", "answer"]
        assert entries[0].text.startswith("read @src/calc.py")
        assert "Read src/calc.py" in entries[1].text
        after = gauge.state
        assert after is not None
        assert len(after.steps) == 3
        assert after.layers["L3 history"] > before.layers["L3 history"]
        assert after.last_usage is not None and after.calibration is not None
        # F6 brings the round's scratchpad back, one key away.
        await pilot.press("f6")
        assert any("def add" in b.body for b in scratch.blocks)
        assert scratch.showing_last
        await pilot.press("f6")
        assert list(scratch.blocks) == [] and not scratch.showing_last


async def test_mention_completion_from_workspace_files(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        box = main_screen(app).query_one("#input", Input)
        box.focus()
        await pilot.press("r", "e", "a", "d", "space", "@", "s", "r", "c", "/", "p")
        await settle(pilot)  # the suggestion is worked out in a worker
        await pilot.press("right")
        assert box.value == "read @src/parser.py"


class FailingProvider(OfflineProvider):
    """Refuses every call the way a bad API key does."""

    def complete(
        self,
        request: ProviderRequest,
        on_event: Callable[[StreamEvent], None],
        cancel: Any = None,
    ) -> ProviderResponse:
        raise ProviderError("auth", "invalid x-api-key: check ANTHROPIC_API_KEY", status=401)


async def test_provider_error_is_a_notice_not_a_traceback(
    make_app: AppFactory, db_path: Path
) -> None:
    app = make_app(provider=FailingProvider(offline_settings()))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await opened(pilot)
        await ask(pilot, "ls")
        toasts = [str(t.render()) for t in app.screen.query("Toast")]
        assert any("invalid x-api-key" in text for text in toasts)
        assert app.is_running
        assert main_screen(app).busy is None
    store = Store.open(db_path)
    try:
        assert [r.status for r in store.rounds(1)] == [RoundStatus.ERROR]
    finally:
        store.close()


class StreamingProvider(OfflineProvider):
    """Answers in many tiny pieces, as fast as it can."""

    PIECES = 3000

    def complete(
        self,
        request: ProviderRequest,
        on_event: Callable[[StreamEvent], None],
        cancel: Any = None,
    ) -> ProviderResponse:
        for i in range(self.PIECES):
            on_event(StreamText(text=f"{i % 10}"))
        text = "".join(f"{i % 10}" for i in range(self.PIECES))
        return ProviderResponse(
            content=[{"type": "text", "text": text}],
            stop_reason="end_turn",
            usage=Usage(input_tokens=100, output_tokens=self.PIECES),
        )


async def test_fast_stream_is_coalesced(make_app: AppFactory) -> None:
    settings: Settings = offline_settings()
    app = make_app(settings=settings, provider=StreamingProvider(settings))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        posted_before = screen.bridge.posted
        await ask(pilot, "stream please")
        posted = screen.bridge.posted - posted_before
        # 3000 deltas, but at most one text message is queued per step at a time.
        assert posted < StreamingProvider.PIECES // 3
        chat = screen.query_one(ChatView)
        answer = chat.blocks[-1].data
        assert isinstance(answer, ChatEntry)
        assert answer.text == "".join(f"{i % 10}" for i in range(StreamingProvider.PIECES))


class RetryingProvider(OfflineProvider):
    """Reports one overloaded-and-waiting retry, then answers like the offline provider."""

    def complete(
        self,
        request: ProviderRequest,
        on_event: Callable[[StreamEvent], None],
        cancel: Any = None,
    ) -> ProviderResponse:
        on_event(
            StreamRetry(attempt=1, max_attempts=4, wait_seconds=2.0, reason="API overloaded (529)")
        )
        return super().complete(request, on_event, cancel)


async def test_retry_wait_is_a_notice(make_app: AppFactory) -> None:
    settings = offline_settings()
    app = make_app(settings=settings, provider=RetryingProvider(settings))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await opened(pilot)
        await ask(pilot, "ls")
        toasts = [str(t.render()) for t in app.screen.query("Toast")]
        assert any("API overloaded (529); retrying in 2 s (attempt 1 of 4)" in t for t in toasts)


async def test_new_session_and_quit(make_app: AppFactory, db_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "ls")
        assert screen.session_id == 1
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert screen.session_id == 2
        assert screen.query_one(ChatView).showing_intro  # no conversation, the intro
        assert messages_in(app) == []
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert app.return_code == 0
    store = Store.open(db_path)
    try:
        # Session 2 never got an input: it is not kept.
        assert [info.session.id for info in store.list_sessions()] == [1]
    finally:
        store.close()
