"""The ReAct loop (seed 000 A2, D3): one round from a user input to the final answer.

``Agent.run`` preprocesses the input (@file), checks the budget and compacts first when it
fires, opens the round, then repeats steps — build the context (earlier rounds from history,
this round from the scratchpad with full observations), call the provider, store the assistant
step at once, run its tools, keep the full result in the scratchpad and the observations
table and the compressed one in history — until the model answers without a tool call.

The agent is headless: it reports through typed events and never prints. ``cancel`` may be
called from another thread (the TUI's Esc) at any time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from engine.compress import ToolResultCompressor
from engine.config import Settings
from engine.context import BuiltContext, ContextBuilder, ScratchResult, ScratchStep
from engine.events import (
    BudgetWarning,
    ErrorEvent,
    EventSink,
    RetryWaiting,
    RoundFinished,
    RoundInterrupted,
    RoundStarted,
    StepStored,
    TextDelta,
    ToolFinished,
    ToolStarted,
    UsageUpdated,
    ignore_events,
)
from engine.history import INTERRUPTED_RESULT, CompactionResult, HistoryManager
from engine.llm.base import (
    Cancelled,
    Provider,
    ProviderError,
    ProviderResponse,
    StreamEvent,
    StreamRetry,
    StreamText,
)
from engine.models import (
    History,
    Message,
    MessageMeta,
    Observation,
    RoundStatus,
    Session,
    TodoItem,
    ToolCall,
    Trigger,
    UsageRecord,
)
from engine.preprocess import InputPreprocessor
from engine.store import Store
from engine.strategies.base import Strategy, get_strategy
from engine.summary import SummaryCompressor
from engine.tokens import BudgetCheck, check_budget, count_text
from tools.base import Asker, ToolContext
from tools.registry import ToolRegistry, default_registry
from tools.todo import todo_recap

INTERRUPTED_ANSWER = "(round interrupted by the user)"
CRASH_ANSWER = "(round interrupted: ctxscope stopped before it finished)"
CRASH_RESULT = "ctxscope stopped before this tool returned a result."


@dataclass
class RoundOutcome:
    round_index: int
    status: RoundStatus
    answer: str
    steps: int
    error: str | None = None


class Agent:
    """A ReAct coding agent over one stored session."""

    def __init__(
        self,
        store: Store,
        session: Session,
        settings: Settings,
        provider: Provider,
        workspace: Path,
        events: EventSink = ignore_events,
        registry: ToolRegistry | None = None,
        ask: Asker | None = None,
        strategy: Strategy | None = None,
    ) -> None:
        assert session.id is not None
        self.store = store
        self.session = session
        self.session_id: int = session.id
        self.settings = settings
        self.provider = provider
        self.workspace = workspace
        self.events = events
        self.registry = registry or default_registry()
        self.strategy = strategy or get_strategy(session.strategy or settings.strategy, settings)
        self.history = HistoryManager(store, self.session_id, settings, events)
        self.tool_ctx = ToolContext(
            workspace=workspace,
            settings=settings,
            todos=store.get_todos(self.session_id),
            on_todos=self._save_todos,
            ask=ask,
        )
        self.builder = ContextBuilder(workspace, settings, self.registry.schemas())
        self.compressor = ToolResultCompressor(settings)
        self.preprocessor = InputPreprocessor(settings)
        self.summaries = SummaryCompressor(provider, settings.summary_timeout)
        self.scratchpad: list[ScratchStep] = []
        """The current round's steps with full observations; empty between rounds."""
        self.last_scratchpad: list[ScratchStep] = []
        """The scratchpad of the round that ended last (one key away in the TUI)."""
        self.current_round: int | None = None
        self.current_question = ""
        """The preprocessed input of the round in progress."""
        self._earlier = 0
        """How many history messages precede the round in progress."""
        self._cancel = threading.Event()
        self.recover()

    # ------------------------------------------------------------------ public API
    @property
    def todos(self) -> list[TodoItem]:
        return self.tool_ctx.todos

    def cancel(self) -> None:
        """Interrupt the running round (safe from any thread)."""
        self._cancel.set()
        self.tool_ctx.cancel.set()

    def recover(self) -> list[int]:
        """Mark rounds left open by a crash as interrupted, pairing their tool calls."""
        fixed = []
        for rnd in self.store.open_rounds(self.session_id):
            if rnd.index == self.current_round:
                continue
            self.history.close_dangling(rnd.index, CRASH_RESULT, CRASH_ANSWER)
            self.history.finish_round(rnd.index, RoundStatus.INTERRUPTED, "crashed")
            fixed.append(rnd.index)
        return fixed

    def last_usage(self) -> int | None:
        """Input-side usage of the last API call, or None when it no longer describes history.

        After a compaction the last call's usage is stale (history shrank), so the local count
        stands in until the next call.
        """
        record = self.store.last_usage(self.session_id)
        if record is None:
            return None
        comps = [c for c in self.store.compactions(self.session_id) if c.summary_id is not None]
        if comps and comps[-1].created_at > record.created_at:
            return None
        return record.usage.input_side

    def preview(self, question: str = "") -> BuiltContext:
        """The request the next step would send (context inspector, ``ctxscope context``)."""
        if self.current_round is not None:
            return self._build(self.current_question)
        text = self.preprocessor.process(question).text if question else ""
        return self.builder.build(self.history.history, [], text, self._recap())

    def budget(self, user_input: str = "") -> BudgetCheck:
        """The seed C7 check for ``user_input`` against the current history."""
        return self._budget(user_input)[0]

    def preview_and_budget(self, question: str = "") -> tuple[BuiltContext, BudgetCheck]:
        """:meth:`preview` and :meth:`budget` together, building the context once when idle.

        The C7 check measures the request without the new input; that is the preview itself
        when no round is running and no input is given (the gauge and the inspector).
        """
        if question or self.current_round is not None:
            return self.preview(question), self.budget(question)
        built = self.preview()
        return built, self._budget("", built)[0]

    def _budget(self, user_input: str, idle: BuiltContext | None = None) -> tuple[BudgetCheck, int]:
        """The C7 check, and the tokens every request carries besides L3 (L1, L2, recap).

        ``idle`` is the already built request with no input and no scratchpad, if at hand.
        """
        built = idle or self.builder.build(self.history.history, [], "", self._recap())
        fixed = built.total - built.layers["L3 summaries"] - built.layers["L3 history"]
        check = check_budget(
            self.last_usage(),
            built.total,
            user_input,
            len(self.history.history.messages),
            self.settings,
        )
        return check, fixed

    def compact(
        self, focus: str | None = None, trigger: Trigger = Trigger.MANUAL
    ) -> CompactionResult:
        """Compact now (manual ``compact``, or the budget rule); synchronous, with events."""
        result = self.history.compact(
            self.strategy, self.summaries, trigger, focus, in_progress=self.current_round
        )
        self._warn_if_kept_rounds_exceed(self._budget("")[1])
        return result

    # ------------------------------------------------------------------ the round
    def run(self, user_input: str) -> RoundOutcome:
        """Run one round; returns when the model answers, fails, or is cancelled."""
        self._cancel.clear()
        self.tool_ctx.cancel.clear()
        pre = self.preprocessor.process(user_input)
        budget, fixed = self._budget(pre.text)
        if self.strategy.should_compact(budget, self.history.history, fixed):
            self.compact(trigger=Trigger.AUTO)
        elif budget.fire:
            self._warn_if_kept_rounds_exceed(fixed)

        rnd, user_msg = self.history.open_round(pre.text)
        self.current_round = rnd.index
        self.current_question = pre.text
        self._earlier = len(self.history.history.messages) - 1
        self.scratchpad = []
        self.events(RoundStarted(round_index=rnd.index, user_message=user_msg))
        try:
            return self._steps(rnd.index)
        finally:
            self.last_scratchpad = self.scratchpad
            self.scratchpad = []
            self.current_round = None

    def _steps(self, index: int) -> RoundOutcome:
        emergency_done = False
        step = 0
        while step < self.settings.max_steps:
            if self._cancel.is_set():
                return self._interrupted(index, step)
            step += 1
            built = self._build(self.current_question)
            try:
                response = self._call(built, index, step)
            except Cancelled:
                return self._interrupted(index, step)
            except ProviderError as exc:
                if exc.kind == "prompt_too_long" and not emergency_done:
                    emergency_done = True
                    self.compact(trigger=Trigger.EMERGENCY)
                    step -= 1
                    continue
                return self._failed(index, step, str(exc), exc.kind)
            self._record_usage(response, built, index, step)

            calls = response.tool_calls
            if not calls:
                final = self.history.append(
                    index,
                    Message(
                        role="assistant",
                        content=response.text,
                        meta=MessageMeta(step=step, final=True),
                    ),
                )
                self.events(StepStored(round_index=index, step=step, message=final))
                self.history.finish_round(index, RoundStatus.FINISHED)
                self.events(RoundFinished(round_index=index, answer=response.text, steps=step))
                return RoundOutcome(index, RoundStatus.FINISHED, response.text, step)

            assistant = self.history.append(
                index,
                Message(
                    role="assistant",
                    content=response.text,
                    tool_calls=calls,
                    meta=MessageMeta(step=step),
                ),
            )
            self.events(StepStored(round_index=index, step=step, message=assistant))
            scratch = ScratchStep(assistant=assistant, results=[])
            self.scratchpad.append(scratch)
            for call in calls:
                if self._cancel.is_set():
                    break
                scratch.results.append(self._run_tool(call, index, step))
            if self._cancel.is_set():
                return self._interrupted(index, step)

        message = (
            f"Stopped after {self.settings.max_steps} steps without a final answer "
            "(step limit; raise CTXSCOPE_MAX_STEPS to allow more)."
        )
        return self._failed(index, step, message, "step_limit")

    def _build(self, question: str) -> BuiltContext:
        hist = self.history.history
        earlier = History(summaries=hist.summaries, messages=hist.messages[: self._earlier])
        return self.builder.build(earlier, self.scratchpad, question, self._recap())

    def _call(self, built: BuiltContext, index: int, step: int) -> ProviderResponse:
        def forward(event: StreamEvent) -> None:
            if isinstance(event, StreamText):
                self.events(TextDelta(round_index=index, step=step, text=event.text))
            elif isinstance(event, StreamRetry):
                self.events(
                    RetryWaiting(
                        attempt=event.attempt,
                        max_attempts=event.max_attempts,
                        wait_seconds=event.wait_seconds,
                        reason=event.reason,
                    )
                )

        return self.provider.complete(built.request, forward, self._cancel)

    def _record_usage(
        self, response: ProviderResponse, built: BuiltContext, index: int, step: int
    ) -> None:
        self.store.add_usage(
            UsageRecord(
                session_id=self.session_id,
                round_index=index,
                step=step,
                usage=response.usage,
                local_estimate=built.total,
            )
        )
        self.events(
            UsageUpdated(
                round_index=index,
                step=step,
                usage=response.usage,
                local_estimate=built.total,
                layers=built.layers,
            )
        )

    def _run_tool(self, call: ToolCall, index: int, step: int) -> ScratchResult:
        self.events(ToolStarted(round_index=index, step=step, call=call))
        result = self.registry.run(call.name, call.input, self.tool_ctx)
        compressed = self.compressor.to_json(call.name, result)
        text = result.text or compressed
        tool_msg = self.history.append(
            index,
            Message(
                role="tool",
                content=compressed,
                meta=MessageMeta(
                    step=step,
                    tool_name=call.name,
                    tool_use_id=call.id,
                    is_error=not result.ok,
                ),
            ),
        )
        tokens_full = count_text(text)
        self.store.add_observation(
            Observation(
                session_id=self.session_id,
                round_index=index,
                step=step,
                tool_use_id=call.id,
                tool_name=call.name,
                result=result.model_dump(mode="json"),
                text=text,
                tokens_full=tokens_full,
                tokens_compressed=tool_msg.tokens or 0,
                message_id=tool_msg.id,
            )
        )
        self.events(StepStored(round_index=index, step=step, message=tool_msg))
        self.events(
            ToolFinished(
                round_index=index,
                step=step,
                call=call,
                status=result.status,
                full_text=text,
                compressed=compressed,
                tokens_full=tokens_full,
                tokens_compressed=tool_msg.tokens or 0,
            )
        )
        return ScratchResult(
            tool_use_id=call.id, tool_name=call.name, text=text, is_error=not result.ok
        )

    def _interrupted(self, index: int, step: int) -> RoundOutcome:
        for msg in self.history.close_dangling(index, INTERRUPTED_RESULT, INTERRUPTED_ANSWER):
            self.events(StepStored(round_index=index, step=step, message=msg))
        self.history.finish_round(index, RoundStatus.INTERRUPTED, "interrupted by the user")
        self.events(RoundInterrupted(round_index=index, reason="interrupted by the user"))
        return RoundOutcome(index, RoundStatus.INTERRUPTED, INTERRUPTED_ANSWER, step)

    def _failed(self, index: int, step: int, message: str, kind: str) -> RoundOutcome:
        answer = f"(round ended with an error: {message})"
        for msg in self.history.close_dangling(index, message, answer):
            self.events(StepStored(round_index=index, step=step, message=msg))
        self.history.finish_round(index, RoundStatus.ERROR, message)
        self.events(ErrorEvent(message=message, kind=kind))
        return RoundOutcome(index, RoundStatus.ERROR, answer, step, error=message)

    # ------------------------------------------------------------------ helpers
    def _recap(self) -> str:
        return todo_recap(self.tool_ctx.todos) if self.tool_ctx.todos else ""

    def _save_todos(self, todos: list[TodoItem]) -> None:
        self.store.set_todos(self.session_id, todos)

    def _warn_if_kept_rounds_exceed(self, fixed_tokens: int) -> None:
        """Say so when the keep zone alone (with L1/L2) is at or over the threshold.

        Compaction never goes below the last ``keep_rounds`` rounds, so it cannot help then.
        """
        kept = fixed_tokens + self.history.kept_tokens()
        threshold = self.settings.threshold_tokens
        if kept < threshold:
            return
        keep = self.settings.keep_rounds
        self.events(
            BudgetWarning(
                kept_tokens=kept,
                threshold=threshold,
                message=(
                    f"The last {keep} rounds alone need {kept:,} tokens, over the compaction "
                    f"threshold of {threshold:,}; compaction never archives them. Lower "
                    "CTXSCOPE_KEEP_ROUNDS or raise CTXSCOPE_CONTEXT_WINDOW."
                ),
            )
        )
