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
    InvalidRequest,
    RoundOutcome,
)
from engine.session.fitting import Fitting
from engine.session.workspace import why_no_workspace
from tools.base import ToolResult


class Agent(Fitting):
    """A ReAct coding agent over one stored session."""

    def run(self, user_input: str) -> RoundOutcome:
        """Run one round; returns when the model answers, fails, or is cancelled.

        The round holds the session's writer lease throughout (see :meth:`writing`).
        """
        with self.writing("round"):
            return self._run_round(user_input)

    def _run_round(self, user_input: str) -> RoundOutcome:
        self._cancel.clear()
        self.tool_ctx.cancel.clear()
        pre = self.preprocessor.process(user_input)
        if CheckPoint.BEFORE_ROUND in self.strategy.checks:
            self._check(pre.text)

        rnd, user_msg = self.history.open_round(pre.text)
        self.current_round = rnd.index
        self.current_question = pre.text
        self.scratchpad = []
        self._clear_injections()
        self.events(RoundStarted(round_index=rnd.index, user_message=user_msg))
        try:
            outcome = self._steps(rnd.index)
        finally:
            self.last_scratchpad = self.scratchpad
            self.scratchpad = []
            self.current_round = None
            self._clear_injections()
        if self.strategy.keeps_execution_log:
            self._log_run(outcome, user_input)
        if CheckPoint.AFTER_ROUND in self.strategy.checks:
            self._check()
        return outcome

    def _clear_injections(self) -> None:
        """What tools injected lasts one run (seed 003): none before it, none after."""
        if self.tool_ctx.injections is not None:
            self.tool_ctx.injections.clear()

    def _log_run(self, outcome: RoundOutcome, user_input: str) -> None:
        """Seed 003's execution log: one entry per run (its calls summarised), windowed."""
        calls = []
        for step in self.last_scratchpad:
            failed = {r.tool_use_id for r in step.results if r.is_error}
            answered = {r.tool_use_id for r in step.results}
            for c in step.assistant.tool_calls:
                # a call the run never answered (interrupted) did not succeed either
                calls.append((c.name, c.input, c.id in answered and c.id not in failed))
        entry = run_entry(
            f"{self.session_id}-{outcome.round_index}", user_input, outcome.answer, calls
        )
        window = self.settings.strategies.message_window.log_window
        try:
            append_run(self.execution_log_path, entry, window)
        except OSError as exc:
            self.events(ErrorEvent(message=f"execution log not written: {exc}", kind="log"))

    def _steps(self, index: int) -> RoundOutcome:
        emergency_done = False
        step = 0
        while step < self.settings.max_steps:
            if self._cancel.is_set():
                return self._interrupted(index, step)
            step += 1
            built = self._build(self.current_question)
            if CheckPoint.BEFORE_REQUEST in self.strategy.checks and self._check("", built):
                built = self._build(self.current_question)
            fitted = self._fit(built)
            if fitted is None:
                window = self.settings.context_window
                prefix = self.extra_prefix_tokens  # a replay's recorded agent's hidden prefix
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

    def _call(self, built: BuiltContext, index: int, step: int) -> ProviderResponse:
        if self.settings.validate_requests:
            problems = validate_request(built.request)
            if problems:
                raise InvalidRequest(
                    f"round {index} step {step}: the engine built an invalid request: "
                    + "; ".join(problems)
                )

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
        if response.usage == Usage():
            return  # all zeros is no measurement: it must not become the last API usage
        stored = self.store.add_usage(
            UsageRecord(
                session_id=self.session_id,
                round_index=index,
                step=step,
                usage=response.usage,
                local_estimate=built.total,
                source=response.usage_source,
            )
        )
        self._usage_written(stored)
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
        if not self.registry.needs_workspace:
            result = self.registry.run(call.name, call.input, self.tool_ctx)
        elif self.workspace is None:
            # A recording does not choose where tools run: nothing runs until the user gives
            # the session a workspace (issue 29).
            session = self.store.get_session(self.session_id)
            result = ToolResult.fail("no_workspace", why_no_workspace(session))
        elif self.workspace.is_dir():
            result = self.registry.run(call.name, call.input, self.tool_ctx)
        else:
            # An imported session keeps the folder its agent worked in, often on another
            # machine: no tool may run against a folder that is not there.
            result = ToolResult.fail(
                "no_workspace",
                f"the session's workspace {self.workspace} does not exist on this machine; "
                "point the session at a folder with `ctxscope ask INPUT --session "
                f"{self.session_id} --workspace FOLDER --move-workspace`",
            )
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
