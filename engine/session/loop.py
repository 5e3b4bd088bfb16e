"""The ReAct loop (seed 000 A2, D3): one round from a user input to the final answer.

``RoundLoop.run`` (``Agent.run``) preprocesses the input (@file), checks the budget and compacts
first when it fires, opens the round, then repeats steps — build the context (earlier rounds from
history, this round from the scratchpad with full observations), call the provider, store the
assistant step at once, run its tools, keep the full result in the scratchpad and the observations
table and the compressed one in history — until the model answers without a tool call.

The agent is headless: it reports through typed events and never prints. ``cancel`` may be
called from another thread (the TUI's Esc) at any time.
"""

from __future__ import annotations

from engine.compaction.execution_log import append_run, run_entry
from engine.compaction.policy import CheckPoint
from engine.context.builder import (
    BuiltContext,
    ScratchResult,
    ScratchStep,
    validate_request,
)
from engine.context.history import (
    INTERRUPTED_RESULT,
)
from engine.events import (
    ErrorEvent,
    RetryWaiting,
    RoundFinished,
    RoundInterrupted,
    RoundStarted,
    StepStored,
    TextDelta,
    ToolFinished,
    ToolStarted,
    UsageUpdated,
)
from engine.llm.base import (
    Cancelled,
    ProviderError,
    ProviderResponse,
    StreamEvent,
    StreamRetry,
    StreamText,
)
from engine.messages.tokens import (
    count_text,
)
from engine.models import (
    Message,
    MessageMeta,
    Observation,
    RoundStatus,
    ToolCall,
    Trigger,
    Usage,
    UsageRecord,
)
from engine.session.core import (
    INTERRUPTED_ANSWER,
    AgentCore,
    InvalidRequest,
    RoundOutcome,
)
from engine.session.fitting import Fitting
from engine.session.steering import Steering
from engine.session.workspace import why_no_workspace
from engine.session.writer import WriterLease
from tools.base import ToolResult


class RoundLoop:
    """The ReAct round: steps from a user input to the final answer, each request fitted to
    the window, compacting where the strategy checks."""

    def __init__(
        self, core: AgentCore, lease: WriterLease, steering: Steering, fitting: Fitting
    ) -> None:
        self.core = core
        self.lease = lease
        self.steering = steering
        self.fitting = fitting

    def run(self, user_input: str) -> RoundOutcome:
        """Run one round; returns when the model answers, fails, or is cancelled.

        The round holds the session's writer lease throughout (see :meth:`writing`).
        """
        with self.lease.writing("round"):
            return self._run_round(user_input)

    def _run_round(self, user_input: str) -> RoundOutcome:
        self.core.cancelled.clear()
        self.core.tool_ctx.cancel.clear()
        pre = self.core.preprocessor.process(user_input)
        if CheckPoint.BEFORE_ROUND in self.core.strategy.checks:
            self.steering.check(pre.text)

        rnd, user_msg = self.core.history.open_round(pre.text)
        self.core.current_round = rnd.index
        self.core.current_question = pre.text
        self.core.scratchpad = []
        self._clear_injections()
        self.core.events(RoundStarted(round_index=rnd.index, user_message=user_msg))
        try:
            outcome = self._steps(rnd.index)
        finally:
            self.core.last_scratchpad = self.core.scratchpad
            self.core.scratchpad = []
            self.core.current_round = None
            self._clear_injections()
        log_window = self.core.strategy.execution_log_window()
        if log_window is not None:
            self._log_run(outcome, user_input, log_window)
        if CheckPoint.AFTER_ROUND in self.core.strategy.checks:
            self.steering.check()
        return outcome

    def _clear_injections(self) -> None:
        """What tools injected lasts one run (seed 003): none before it, none after."""
        if self.core.tool_ctx.injections is not None:
            self.core.tool_ctx.injections.clear()

    def _log_run(self, outcome: RoundOutcome, user_input: str, window: int) -> None:
        """Seed 003's execution log: one entry per run (its calls summarised), windowed."""
        calls = []
        for step in self.core.last_scratchpad:
            failed = {r.tool_use_id for r in step.results if r.is_error}
            answered = {r.tool_use_id for r in step.results}
            for c in step.assistant.tool_calls:
                # a call the run never answered (interrupted) did not succeed either
                calls.append((c.name, c.input, c.id in answered and c.id not in failed))
        entry = run_entry(
            f"{self.core.session_id}-{outcome.round_index}", user_input, outcome.answer, calls
        )
        try:
            append_run(self.core.execution_log_path, entry, window)
        except OSError as exc:
            self.core.events(ErrorEvent(message=f"execution log not written: {exc}", kind="log"))

    def _steps(self, index: int) -> RoundOutcome:
        emergency_done = False
        step = 0
        while step < self.core.settings.max_steps:
            if self.core.cancelled.is_set():
                return self._interrupted(index, step)
            step += 1
            built = self.core.build(self.core.current_question)
            if CheckPoint.BEFORE_REQUEST in self.core.strategy.checks and self.steering.check(
                "", built
            ):
                built = self.core.build(self.core.current_question)
            fitted = self.fitting.fit(built)
            if fitted is None:
                window = self.core.settings.context_window
                prefix = self.core.extra_prefix_tokens  # a replay's recorded agent's hidden prefix
                with_prefix = (
                    f" (the recorded agent's {prefix:,}-token prefix included)" if prefix else ""
                )
                message = (
                    f"the request needs {built.total + prefix:,} tokens{with_prefix} even with "
                    "every observation of this round set aside and earlier history archived, "
                    f"over the {window:,}-token window"
                )
                return self._failed(index, step, message, "too_long")
            built = fitted
            try:
                response = self._call(built, index, step)
            except Cancelled:
                return self._interrupted(index, step)
            except ProviderError as exc:
                if exc.kind == "prompt_too_long" and not emergency_done:
                    emergency_done = True
                    self.steering.compact(trigger=Trigger.EMERGENCY)
                    step -= 1
                    continue
                return self._failed(index, step, str(exc), exc.kind)
            self._record_usage(response, built, index, step)

            calls = response.tool_calls
            if not calls:
                final = self.core.history.append(
                    index,
                    Message(
                        role="assistant",
                        content=response.text,
                        meta=MessageMeta(step=step, final=True),
                    ),
                )
                self.core.events(StepStored(round_index=index, step=step, message=final))
                self.core.history.finish_round(index, RoundStatus.FINISHED)
                self.core.events(RoundFinished(round_index=index, answer=response.text, steps=step))
                return RoundOutcome(index, RoundStatus.FINISHED, response.text, step)

            assistant = self.core.history.append(
                index,
                Message(
                    role="assistant",
                    content=response.text,
                    tool_calls=calls,
                    meta=MessageMeta(step=step),
                ),
            )
            self.core.events(StepStored(round_index=index, step=step, message=assistant))
            scratch = ScratchStep(assistant=assistant, results=[])
            self.core.scratchpad.append(scratch)
            for call in calls:
                if self.core.cancelled.is_set():
                    break
                scratch.results.append(self.run_tool(call, index, step))
            if self.core.cancelled.is_set():
                return self._interrupted(index, step)

        message = (
            f"Stopped after {self.core.settings.max_steps} steps without a final answer "
            "(step limit; raise CTXSCOPE_MAX_STEPS to allow more)."
        )
        return self._failed(index, step, message, "step_limit")

    def _call(self, built: BuiltContext, index: int, step: int) -> ProviderResponse:
        if self.core.settings.validate_requests:
            problems = validate_request(built.request)
            if problems:
                raise InvalidRequest(
                    f"round {index} step {step}: the engine built an invalid request: "
                    + "; ".join(problems)
                )

        def forward(event: StreamEvent) -> None:
            if isinstance(event, StreamText):
                self.core.events(TextDelta(round_index=index, step=step, text=event.text))
            elif isinstance(event, StreamRetry):
                self.core.events(
                    RetryWaiting(
                        attempt=event.attempt,
                        max_attempts=event.max_attempts,
                        wait_seconds=event.wait_seconds,
                        reason=event.reason,
                    )
                )

        return self.core.provider.complete(built.request, forward, self.core.cancelled)

    def _record_usage(
        self, response: ProviderResponse, built: BuiltContext, index: int, step: int
    ) -> None:
        if response.usage == Usage():
            return  # all zeros is no measurement: it must not become the last API usage
        stored = self.core.store.add_usage(
            UsageRecord(
                session_id=self.core.session_id,
                round_index=index,
                step=step,
                usage=response.usage,
                local_estimate=built.total,
                source=response.usage_source,
            )
        )
        self.core.usage_written(stored)
        self.core.events(
            UsageUpdated(
                round_index=index,
                step=step,
                usage=response.usage,
                local_estimate=built.total,
                layers=built.layers,
            )
        )

    def run_tool(self, call: ToolCall, index: int, step: int) -> ScratchResult:
        """Run ``call`` (the one place tools run) and store its result twice: compressed in
        history, in full as an observation; the full text goes to the scratchpad."""
        self.core.events(ToolStarted(round_index=index, step=step, call=call))
        if not self.core.registry.needs_workspace:
            result = self.core.registry.run(call.name, call.input, self.core.tool_ctx)
        elif self.core.workspace is None:
            # A recording does not choose where tools run: nothing runs until the user gives
            # the session a workspace (issue 29).
            session = self.core.store.get_session(self.core.session_id)
            result = ToolResult.fail("no_workspace", why_no_workspace(session))
        elif self.core.workspace.is_dir():
            result = self.core.registry.run(call.name, call.input, self.core.tool_ctx)
        else:
            # An imported session keeps the folder its agent worked in, often on another
            # machine: no tool may run against a folder that is not there.
            result = ToolResult.fail(
                "no_workspace",
                f"the session's workspace {self.core.workspace} does not exist on this machine; "
                "point the session at a folder with `ctxscope ask INPUT --session "
                f"{self.core.session_id} --workspace FOLDER --move-workspace`",
            )
        compressed = self.core.compressor.to_json(call.name, result)
        text = result.text or compressed
        tool_msg = self.core.history.append(
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
        self.core.store.add_observation(
            Observation(
                session_id=self.core.session_id,
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
        self.core.events(StepStored(round_index=index, step=step, message=tool_msg))
        self.core.events(
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
        for msg in self.core.history.close_dangling(index, INTERRUPTED_RESULT, INTERRUPTED_ANSWER):
            self.core.events(StepStored(round_index=index, step=step, message=msg))
        self.core.history.finish_round(index, RoundStatus.INTERRUPTED, "interrupted by the user")
        self.core.events(RoundInterrupted(round_index=index, reason="interrupted by the user"))
        return RoundOutcome(index, RoundStatus.INTERRUPTED, INTERRUPTED_ANSWER, step)

    def _failed(self, index: int, step: int, message: str, kind: str) -> RoundOutcome:
        answer = f"(round ended with an error: {message})"
        for msg in self.core.history.close_dangling(index, message, answer):
            self.core.events(StepStored(round_index=index, step=step, message=msg))
        self.core.history.finish_round(index, RoundStatus.ERROR, message)
        self.core.events(ErrorEvent(message=message, kind=kind))
        return RoundOutcome(index, RoundStatus.ERROR, answer, step, error=message)
