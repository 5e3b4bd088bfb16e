"""Presenter: engine events applied to the panes, on the UI thread.

The main screen receives :class:`~tui.bridge.EngineBridge` messages and hands each event here;
this class knows which pane each event touches (the chat, the scratchpad, the history, the
gauge, the compaction banner) and turns provider trouble into readable notices. It holds no
engine state of its own: what the agent stored is re-read after the round, in a worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from engine.events import (
    BudgetWarning,
    CompactionFailed,
    CompactionFinished,
    CompactionProgress,
    CompactionStarted,
    ErrorEvent,
    Event,
    Notice,
    RetryWaiting,
    RoundFinished,
    RoundInterrupted,
    RoundStarted,
    StepStored,
    ToolFinished,
    ToolStarted,
    UsageUpdated,
)
from engine.models import TodoItem
from engine.terminal_text import plural
from tui.formatting import compaction_result
from tui.gauge_state import Decision, GaugeState
from tui.widgets.chat_view import ChatEntry, ChatView
from tui.widgets.history_view import HistoryView
from tui.widgets.scratchpad_view import ScratchpadView
from tui.widgets.token_gauge import TokenGauge

Severity = Literal["information", "warning", "error"]
Notify = Callable[[str, str, Severity, float], None]
"""``notify(message, title, severity, timeout)``."""

ERROR_TITLES = {
    "auth": "API key refused",
    "bad_request": "Request refused by the API",
    "prompt_too_long": "Prompt too long",
    "overloaded": "API overloaded",
    "rate_limit": "Rate limited",
    "connection": "Cannot reach the API",
    "server": "API server error",
    "step_limit": "Step limit reached",
    "tool": "Tool failure",
}


@dataclass
class Panes:
    """The widgets events are applied to."""

    chat: ChatView
    scratch: ScratchpadView
    history: HistoryView
    gauge: TokenGauge
    show_todos: Callable[[list[TodoItem]], None]
    show_banner: Callable[[str, bool], None]
    """``(text, in_progress)``: the compaction banner over the history pane."""
    reload_history: Callable[[], None]
    """Redraw the history pane from the agent's history (after a compaction mid-round)."""


class Presenter:
    """Applies engine events to :class:`Panes`."""

    def __init__(
        self,
        panes: Panes,
        notify: Notify,
        take_text: Callable[[int, int], str],
        forget_text: Callable[[int, int], None],
        todos: Callable[[], list[TodoItem]],
    ) -> None:
        self.panes = panes
        self.notify = notify
        self.take_text = take_text
        self.forget_text = forget_text
        self.todos = todos
        self.compacting = False
        """True between CompactionStarted and its end (the input stays blocked)."""
        self.last_compaction: str | None = None

    # ------------------------------------------------------------------ text
    def text_streamed(self, round_index: int, step: int) -> None:
        text = self.take_text(round_index, step)
        if not text:
            return
        self.panes.scratch.stream(step, text)
        self.panes.chat.stream(text)

    # ------------------------------------------------------------------ events
    def apply(self, event: Event) -> None:
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:
            handler(event)

    def _on_round_started(self, event: RoundStarted) -> None:
        msg = event.user_message
        self.panes.chat.add(ChatEntry("user", msg.content, event.round_index))
        self.panes.scratch.start_round()
        self.panes.history.append_message(msg, new_round=True)

    def _on_step_stored(self, event: StepStored) -> None:
        msg = event.message
        self.panes.history.append_message(msg, new_round=False)
        self.panes.scratch.step_stored(msg)
        if msg.role != "assistant":
            return
        self.forget_text(event.round_index, event.step)
        if msg.meta.final:
            entry = ChatEntry(
                "answer", msg.content, event.round_index, interrupted=msg.meta.interrupted
            )
            self.panes.chat.finish_stream(entry)
        else:
            self.panes.chat.finish_stream(None)

    def _on_tool_started(self, event: ToolStarted) -> None:
        self.panes.scratch.tool_started(event.call)

    def _on_tool_finished(self, event: ToolFinished) -> None:
        self.panes.scratch.tool_finished(event)
        if event.call.name == "TodoWrite":
            self.panes.show_todos(self.todos())

    def _on_usage_updated(self, event: UsageUpdated) -> None:
        state = self.panes.gauge.state
        if state is None:
            return
        self.panes.gauge.state = replace(
            state,
            layers=dict(event.layers),
            layers_source=f"request sent · round {event.round_index} step {event.step}",
            last_usage=event.usage,
            local_estimate=event.local_estimate,
            steps=(*state.steps, event.usage.input_side),
        )

    def _on_round_finished(self, event: RoundFinished) -> None:
        self.panes.scratch.end_round()

    def _on_round_interrupted(self, event: RoundInterrupted) -> None:
        self.panes.scratch.end_round()
        if self.panes.chat.streaming:
            self.panes.chat.finish_stream(None)
        self.notify(f"Round {event.round_index}: {event.reason}.", "Interrupted", "warning", 4)

    def _on_compaction_started(self, event: CompactionStarted) -> None:
        self.compacting = True
        self.panes.show_banner(
            f"✂ {event.trigger} compaction: archiving {plural(event.rounds, 'round')}"
            f" ({event.tokens_before:,} tokens of history)…",
            True,
        )

    def _on_compaction_progress(self, event: CompactionProgress) -> None:
        detail = f" ({event.done}/{event.total} messages)" if event.total else ""
        self.panes.show_banner(f"✂ compacting: {event.stage}{detail}…", True)

    def _on_compaction_finished(self, event: CompactionFinished) -> None:
        self.compacting = False
        text = compaction_result(event.compaction, event.summary)
        self.last_compaction = text
        self.panes.show_banner(text, False)
        self.panes.chat.add(ChatEntry("notice", text))
        self.panes.reload_history()

    def _on_compaction_failed(self, event: CompactionFailed) -> None:
        self.compacting = False
        skipped = event.compaction.outcome == "skipped"
        self.panes.show_banner(
            f"✂ {event.error}" if skipped else f"✂ compaction failed: {event.error}", False
        )
        self.notify(
            event.error,
            "Nothing to compact" if skipped else "Compaction failed",
            "warning" if skipped else "error",
            6,
        )

    def _on_budget_warning(self, event: BudgetWarning) -> None:
        state = self.panes.gauge.state
        if state is not None:
            self.panes.gauge.state = replace(state, warning=event.message)
        self.notify(event.message, "Context budget", "warning", 8)

    def _on_notice(self, event: Notice) -> None:
        self.notify(event.message, "Notice", "information", 6)

    def _on_retry_waiting(self, event: RetryWaiting) -> None:
        self.notify(
            f"{event.reason}; retrying in {event.wait_seconds:.0f} s "
            f"(attempt {event.attempt} of {event.max_attempts}).",
            "Waiting for the API",
            "warning",
            max(3.0, event.wait_seconds),
        )

    def _on_error(self, event: ErrorEvent) -> None:
        title = ERROR_TITLES.get(event.kind, "Error")
        self.notify(event.message, title, "error", 10)
        if self.panes.chat.streaming:
            self.panes.chat.finish_stream(None)

    # ------------------------------------------------------------------ gauge
    def typing(self, chars: int) -> None:
        state = self.panes.gauge.state
        if state is not None:
            self.panes.gauge.state = state.typing(chars)

    def set_gauge(self, state: GaugeState) -> None:
        current = self.panes.gauge.state
        typed = current.typed_chars if current is not None else 0
        self.panes.gauge.state = replace(state, typed_chars=typed)

    def decided(self, decision: Decision) -> None:
        """The strategy's decision for the input as typed now (from the decide worker)."""
        state = self.panes.gauge.state
        if state is not None and decision.typed_chars == state.typed_chars:
            self.panes.gauge.state = replace(state, decision=decision, warning=decision.warning)
