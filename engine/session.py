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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from engine.compaction.execution_log import append_run
from engine.compaction.placement import MOCK_USER_PROMPT
from engine.compaction.policy import CheckPoint, CompactionPolicy, Plan, PolicyView
from engine.compaction.strategies import get_strategy
from engine.compaction.strategies.layered import LayeredStrategy
from engine.compaction.summary import SummaryCompressor
from engine.compaction.summary_call import ProviderSummariser
from engine.compaction.tool_results import ToolResultCompressor
from engine.config import Settings
from engine.context.builder import (
    BuiltContext,
    ContextBuilder,
    ScratchResult,
    ScratchStep,
    validate_request,
)
from engine.context.history import (
    INTERRUPTED_RESULT,
    CompactionDraft,
    CompactionResult,
    HistoryManager,
)
from engine.context.preprocess import InputPreprocessor
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
from engine.llm.base import (
    Cancelled,
    Provider,
    ProviderError,
    ProviderResponse,
    StreamEvent,
    StreamRetry,
    StreamText,
)
from engine.messages.tokens import (
    BLOCK_OVERHEAD,
    BudgetCheck,
    check_budget,
    count_repeated,
    count_text,
    remember,
    text_digest,
)
from engine.models import (
    Compaction,
    History,
    Message,
    MessageMeta,
    Observation,
    RoundStatus,
    Session,
    TodoItem,
    ToolCall,
    Trigger,
    Usage,
    UsageRecord,
)
from engine.store import Lease, SessionBusy, Store
from tools.base import Asker, ToolContext
from tools.registry import ToolRegistry, default_registry
from tools.todo import todo_recap

INTERRUPTED_ANSWER = "(round interrupted by the user)"
CRASH_ANSWER = "(round interrupted: ctxscope stopped before it finished)"
CRASH_RESULT = "ctxscope stopped before this tool returned a result."


def fixed_tokens(built: BuiltContext) -> int:
    """What every request carries besides L3: L1, L2 and the todo recap."""
    return built.total - built.layers["L3 summaries"] - built.layers["L3 history"]


class InvalidRequest(AssertionError):
    """Debug mode (``validate_requests``): the engine built a request the API would refuse.

    An engine bug, never a provider error: it is not caught by the round's error handling."""


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
        strategy: CompactionPolicy | None = None,
        lease_wait: float = 0.0,
    ) -> None:
        assert session.id is not None
        self.store = store
        self.session = session
        self.session_id: int = session.id
        self._stored_counts = store.token_counts()
        """Counts of repeated texts the database holds (L1, tools, CODE_LAW, summaries)."""
        remember(self._stored_counts)
        self.settings = settings
        self.provider = provider
        self.workspace = workspace
        self.events = events
        self.registry = registry or default_registry()
        self.strategy = strategy or get_strategy(session.strategy or settings.strategy, settings)
        self.data_dir = settings.data_dir or store.path.parent / "data"
        """Files of this app beside the database; the session's own are in ``<id>/``."""
        self.history = HistoryManager(store, self.session_id, settings, events, self.data_dir)
        self.tool_ctx = ToolContext(
            workspace=workspace,
            settings=settings,
            todos=store.get_todos(self.session_id),
            on_todos=self._save_todos,
            ask=ask,
            recall=lambda query, limit: store.search_archive(self.session_id, query, limit),
        )
        self.builder = ContextBuilder(workspace, settings, self.registry.schemas())
        self.compressor = ToolResultCompressor(settings)
        self.preprocessor = InputPreprocessor(settings)
        self.summaries = SummaryCompressor(
            ProviderSummariser(provider, settings), settings.summary_timeout
        )
        self.scratchpad: list[ScratchStep] = []
        """The current round's steps with full observations; empty between rounds."""
        self.last_scratchpad: list[ScratchStep] = []
        """The scratchpad of the round that ended last (one key away in the TUI)."""
        self.current_round: int | None = None
        self.current_question = ""
        """The preprocessed input of the round in progress."""
        self._cancel = threading.Event()
        self.lease_wait = lease_wait
        """Seconds ``run`` and ``compact`` wait for another writer of the session (0: refuse)."""
        self._lease: Lease | None = None
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
        """Close rounds left open by a crash — only when no live process writes the session.

        An open round whose writer still runs is live, not crashed: it is left alone. A
        read-only store never writes.
        """
        if self._lease is not None:
            return self._close_crashed_rounds()
        if self.store.read_only:
            return []
        try:
            lease = self.store.acquire_lease(self.session_id, "recovery")
        except SessionBusy:
            return []
        with lease:
            return self._close_crashed_rounds()

    def _catch_up(self) -> None:
        """Reload what another process wrote while this agent was not the writer."""
        hist = self.history.history
        seen = (
            max((m.id or 0 for m in hist.messages), default=0),
            len(hist.messages),
            max((s.id or 0 for s in hist.summaries), default=0),
        )
        if self.store.history_marker(self.session_id) != seen:
            self.history.reload()
        self.tool_ctx.todos = self.store.get_todos(self.session_id)

    def _close_crashed_rounds(self) -> list[int]:
        """Mark open rounds as interrupted, pairing their tool calls (the lease is held)."""
        fixed = []
        for rnd in self.store.open_rounds(self.session_id):
            if rnd.index == self.current_round:
                continue
            self.history.close_dangling(rnd.index, CRASH_RESULT, CRASH_ANSWER)
            self.history.finish_round(rnd.index, RoundStatus.INTERRUPTED, "crashed")
            fixed.append(rnd.index)
        if fixed:
            self.history.reload()
        return fixed

    @contextmanager
    def writing(self, purpose: str = "round") -> Iterator[None]:
        """Hold the session's writer lease (one writer at a time; re-entrant).

        Raises :class:`~engine.store.SessionBusy` when another live process writes the
        session and ``lease_wait`` runs out. On entry, rounds a dead writer left open are
        closed as crashed.
        """
        if self._lease is not None:
            yield
            return
        self._lease = self.store.acquire_lease(self.session_id, purpose, wait=self.lease_wait)
        try:
            self._catch_up()
            self._close_crashed_rounds()
            yield
        finally:
            lease, self._lease = self._lease, None
            try:
                self._keep_token_counts()
            finally:
                lease.release()

    def _keep_token_counts(self) -> None:
        """Store the counts of the texts every request repeats that the database lacks, so
        the next ``context`` or workbench need not load the tokenizer."""
        texts = [t for t in self.builder.repeated_texts() if t]
        counts = {text_digest(t): count_repeated(t) for t in texts}
        new = {d: n for d, n in counts.items() if d not in self._stored_counts}
        if new:
            self.store.remember_token_counts(new)
            self._stored_counts.update(new)

    def last_usage(self) -> int | None:
        """Input-side usage of the last API call, or None when it no longer describes history.

        After a compaction the last call's usage is stale (history shrank), so the local count
        stands in until the next call.
        """
        return self._fresh_usage(self.store.last_usage(self.session_id))

    def _fresh_usage(self, record: UsageRecord | None) -> int | None:
        """``record``'s input side, unless a compaction that wrote a summary came after it."""
        if record is None:
            return None
        compacted = self.store.last_summary_compaction_at(self.session_id)
        if compacted is not None and compacted > record.created_at:
            return None
        return record.usage.input_side

    def preview(self, question: str = "") -> BuiltContext:
        """The request the next step would send (context inspector, ``ctxscope context``)."""
        if self.current_round is not None:
            return self._build(self.current_question)
        text = self.preprocessor.process(question).text if question else ""
        return self._build_idle(text)

    def budget(self, user_input: str = "") -> BudgetCheck:
        """The seed C7 check for ``user_input`` against the current history (seed 000's rule;
        :meth:`plan` is the active strategy's decision)."""
        return self._budget_of(self._build_idle(), user_input)

    def preview_and_budget(self, question: str = "") -> tuple[BuiltContext, BudgetCheck]:
        """:meth:`preview` and :meth:`budget` together, building the context once when idle."""
        if question or self.current_round is not None:
            return self.preview(question), self.budget(question)
        built = self.preview()
        return built, self._budget_of(built, "")

    def _budget_of(self, idle: BuiltContext, user_input: str) -> BudgetCheck:
        """The C7 check with ``idle`` (the request without input) as the local stand-in."""
        messages = len(self.history.history.messages)
        return check_budget(self.last_usage(), idle.total, user_input, messages, self.settings)

    def sent_history(self) -> History:
        """L3 as the strategy sends it: its summaries, and history after its projection (seed
        002's projected rounds, masked observations); the round in progress as stored."""
        hist = self.history.history
        round_msgs = self._round_messages() if self.current_round is not None else []
        earlier = hist.messages[: len(hist.messages) - len(round_msgs)]
        messages, _ = self.strategy.project(earlier, [], None)
        return History(summaries=list(hist.summaries), messages=[*messages, *round_msgs])

    def plan(self, user_input: str = "", built: BuiltContext | None = None) -> Plan:
        """The active strategy's decision now: what it measures, whether it would compact
        before the next request, and what it would cut. The gauge, the warnings and the agent
        all act on this one decision."""
        return self.strategy.plan(self._view(user_input, built))

    def compact(
        self, focus: str | None = None, trigger: Trigger = Trigger.MANUAL
    ) -> CompactionResult:
        """Compact now (manual ``compact``, or the strategy's rule); synchronous, with events."""
        with self.writing("compaction"):
            draft = self.prepare_compaction(focus, trigger)
            if isinstance(draft, CompactionResult):
                return draft
            return self.commit_compaction(draft, trigger=trigger)

    def prepare_compaction(
        self, focus: str | None = None, trigger: Trigger = Trigger.MANUAL, dry_run: bool = False
    ) -> CompactionDraft | CompactionResult:
        """What compacting now would do, stored nowhere (``compact --dry-run``, the F5 preview):
        the messages it archives, the draft summary, the figures after."""
        built = self._build(self.current_question) if self.current_round else None
        view = self._view("", built)
        live = self._live_summary_call(built) if self.strategy.name == "mock-user" else None
        return self.history.prepare(
            self.strategy, self.summaries, trigger, focus, view, live, dry_run=dry_run
        )

    def commit_compaction(
        self,
        draft: CompactionDraft,
        content: str | None = None,
        trigger: Trigger = Trigger.MANUAL,
    ) -> CompactionResult:
        """Store a prepared compaction; ``content`` is the user's edit of the draft summary."""
        with self.writing("compaction"):
            result = self.history.commit(draft, content)
        if result.segment is not None and self.current_round is not None:
            gone = {m.id for m in result.segment.messages}
            self.scratchpad = [s for s in self.scratchpad if s.assistant.id not in gone]
        if trigger != Trigger.EMERGENCY:
            self._warn_if_stuck(self.plan())
        return result

    def uncompact(self, compaction_id: int | None = None) -> Compaction:
        """Reverse the latest compaction: its messages return to history (``ctxscope
        uncompact``); refused for any compaction but the latest one not yet undone."""
        with self.writing("uncompact"):
            return self.history.undo(compaction_id)

    def pin(self, message_ids: list[int], pinned: bool = True) -> int:
        """Pin (or unpin) messages: no strategy archives a pinned message or its step."""
        with self.writing("pin"):
            changed = self.history.pin(message_ids, pinned)
        self._warn_if_pins_crowd()
        return changed

    def _warn_if_pins_crowd(self) -> None:
        """Say so when the pinned messages alone (with L1/L2) reach the threshold."""
        pinned = self.history.pinned_ids
        if not pinned:
            return
        built = self._build_idle()
        tokens = fixed_tokens(built) + sum(
            m.tokens or 0 for m in self.history.history.messages if m.id in pinned
        )
        measure = self.plan().measure
        token_based = measure.source != "count"
        threshold = int(measure.threshold) if token_based else self.settings.threshold_tokens
        if tokens >= threshold:
            self.events(
                BudgetWarning(
                    kept_tokens=tokens,
                    threshold=threshold,
                    message=(
                        f"The {len(pinned)} pinned messages alone need {tokens:,} tokens with "
                        f"the system prompt, over the threshold of {threshold:,}; no strategy "
                        "archives them. Unpin some (ctxscope pin ID MSG --unpin)."
                    ),
                )
            )

    def _view(self, user_input: str, built: BuiltContext | None) -> PolicyView:
        built = built or self._build_idle()
        sent: dict[int, int] = {}
        if self.current_round is not None:
            # The round in progress sends full observations, not history's compressed copies.
            full = {r.tool_use_id: r for step in self.scratchpad for r in step.results}
            for msg in self._round_messages():
                result = full.get(msg.meta.tool_use_id or "")
                if msg.id is not None and result is not None:
                    sent[msg.id] = result.tokens or BLOCK_OVERHEAD + count_text(result.text)
        uses_api = self.strategy.uses_api_usage
        record = self.store.last_usage(self.session_id) if uses_api else None
        return PolicyView(
            history=self.history.history,
            in_progress=self.current_round,
            request_tokens=built.total,
            fixed_tokens=fixed_tokens(built),
            last_usage=self._fresh_usage(record) if uses_api else None,
            last_usage_source=record.source if record else "api",
            user_input=user_input,
            sent_tokens=(lambda m: sent.get(m.id or 0, m.tokens or 0)) if sent else None,
            pinned=self.history.pinned_ids,
        )

    def _live_summary_call(self, built: BuiltContext | None) -> Callable[[float], str]:
        """Seed 002: the live conversation plus the mock user message, answered by the model."""
        request = (built or self._build_idle()).request
        messages = [*request.messages, {"role": "user", "content": MOCK_USER_PROMPT}]
        if messages[-2]["role"] == "user":
            last = messages.pop()
            messages[-1] = {
                "role": "user",
                "content": [*messages[-1]["content"], {"type": "text", "text": last["content"]}],
            }
        live = request.model_copy(update={"messages": messages})

        def call(timeout: float) -> str:
            response = self.provider.complete(live, lambda _event: None, self._cancel)
            if response.tool_calls:
                raise ProviderError("bad_request", "the model answered with a tool call")
            return response.text

        return call

    def _warn_if_stuck(self, plan: Plan) -> None:
        """Say so when the strategy's measure fires but it will not compact (and why).

        Masking's measure firing is its normal state (older observations are masked), not a
        compaction that cannot happen."""
        if not plan.measure.fires or plan.compacts or not plan.reason:
            return
        if self.strategy.summary is None:
            return
        if isinstance(self.strategy, LayeredStrategy):
            self._warn_if_kept_rounds_exceed()
            return
        self.events(
            BudgetWarning(
                kept_tokens=self.history.tokens(),
                threshold=int(plan.measure.threshold),
                message=f"{plan.measure.describe()}, but {self.strategy.name} will not compact: "
                f"{plan.reason}.",
            )
        )

    # ------------------------------------------------------------------ the round
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
        self.events(RoundStarted(round_index=rnd.index, user_message=user_msg))
        try:
            outcome = self._steps(rnd.index)
        finally:
            self.last_scratchpad = self.scratchpad
            self.scratchpad = []
            self.current_round = None
        if self.strategy.keeps_execution_log:
            self._log_run(outcome, user_input)
        if CheckPoint.AFTER_ROUND in self.strategy.checks:
            self._check()
        return outcome

    def _check(self, user_input: str = "", built: BuiltContext | None = None) -> bool:
        """Ask the strategy at one of its check points; compact when it says so."""
        plan = self.strategy.plan(self._view(user_input, built))
        if plan.compacts:
            self.compact(trigger=Trigger.AUTO)
            return True
        self._warn_if_stuck(plan)
        return False

    def _log_run(self, outcome: RoundOutcome, user_input: str) -> None:
        """Seed 003's execution log: one entry per run, windowed."""
        calls = [
            {"tool": c.name, "input": c.input}
            for step in self.last_scratchpad
            for c in step.assistant.tool_calls
        ]
        entry = {
            "requestId": f"{self.session_id}-{outcome.round_index}",
            "userPreview": user_input[:200],
            "outputPreview": outcome.answer[:200],
            "toolCalls": calls,
        }
        window = self.settings.strategies.message_window.log_window
        try:
            append_run(self.execution_log_path, entry, window)
        except OSError as exc:
            self.events(ErrorEvent(message=f"execution log not written: {exc}", kind="log"))

    @property
    def execution_log_path(self) -> Path:
        """Seed 003's ``.ship/memory/agent-context/<chatKey>.jsonl``, under the data folder."""
        return self.data_dir / str(self.session_id) / "agent-context.jsonl"

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

    def _round_messages(self) -> list[Message]:
        """The stored messages of the round in progress (always the newest in history)."""
        messages = self.history.history.messages
        start = len(messages)
        while start > 0 and messages[start - 1].meta.round == self.current_round:
            start -= 1
        return messages[start:]

    def _build(self, question: str) -> BuiltContext:
        """The request of the next step: earlier history as the strategy sends it, then this
        round's input and its scratchpad (full observations)."""
        hist = self.history.history
        earlier = hist.messages[: len(hist.messages) - len(self._round_messages())]
        messages, scratchpad = self.strategy.project(earlier, self.scratchpad, self.current_round)
        return self.builder.build(
            History(summaries=hist.summaries, messages=messages),
            scratchpad,
            question,
            self._recap(),
        )

    def _build_idle(self, question: str = "") -> BuiltContext:
        """The request with no round running: history as the strategy sends it, and ``question``."""
        hist = self.history.history
        messages, _ = self.strategy.project(hist.messages, [], None)
        return self.builder.build(
            History(summaries=hist.summaries, messages=messages), [], question, self._recap()
        )

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

    def _warn_if_kept_rounds_exceed(self) -> None:
        """Seed 000: the keep zone alone (with L1/L2) is at or over the threshold.

        Compaction never goes below the last ``keep_rounds`` rounds, so it cannot help then.
        """
        kept = fixed_tokens(self._build_idle()) + self.history.kept_tokens()
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
