"""Steering the context: the strategy's plan, compaction (automatic at the strategy's check
points, by hand, previewed and edited), undo, pins, and the warnings when compaction cannot
help. Strategy-specific behaviour comes from the policy's attributes; no strategy is named."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from engine.compaction.policy import Plan, PolicyView
from engine.compaction.records import CompactionDraft, CompactionResult
from engine.context.builder import (
    BuiltContext,
)
from engine.events import (
    BudgetWarning,
    Notice,
)
from engine.llm.base import (
    ProviderError,
)
from engine.models import (
    Compaction,
    Trigger,
)
from engine.session.core import AgentCore, fixed_tokens
from engine.session.writer import WriterLease


class Steering:
    """Compaction, undo and pins, on the policy's decision."""

    def __init__(self, core: AgentCore, lease: WriterLease) -> None:
        self.core = core
        self.lease = lease
        self.excess = 0
        """While the engine's last resort runs (:class:`~engine.session.fitting.Fitting`): how
        far over the window the request is (the strategy's emergency cut may take just
        enough); 0 otherwise."""
        self._window_told = ""
        """The strategy's window notice last said (each is said once)."""

    @contextmanager
    def over_by(self, excess: int) -> Iterator[None]:
        """The strategy's views say the request is ``excess`` tokens over the window."""
        self.excess = excess
        try:
            yield
        finally:
            self.excess = 0

    def plan(self, user_input: str = "", built: BuiltContext | None = None) -> Plan:
        """The active strategy's decision now: what it measures, whether it would compact
        before the next request, and what it would cut. The gauge, the warnings and the agent
        all act on this one decision."""
        return self.core.strategy.plan(self.view(user_input, built))

    def compact(
        self,
        focus: str | None = None,
        trigger: Trigger = Trigger.MANUAL,
        keep_rounds: int | None = None,
        user_input: str = "",
    ) -> CompactionResult:
        """Compact now (manual ``compact``, or the strategy's rule); synchronous, with events.
        ``keep_rounds``: a cut chosen by hand (see
        :meth:`engine.compaction.executor.CompactionExecutor.prepare`);
        ``user_input``: the input the rule measured with, when it fired on it."""
        with self.lease.writing("compaction"):
            draft = self.prepare_compaction(
                focus, trigger, keep_rounds=keep_rounds, user_input=user_input
            )
            if isinstance(draft, CompactionResult):
                return draft
            return self.commit_compaction(draft, trigger=trigger)

    def prepare_compaction(
        self,
        focus: str | None = None,
        trigger: Trigger = Trigger.MANUAL,
        dry_run: bool = False,
        keep_rounds: int | None = None,
        user_input: str = "",
    ) -> CompactionDraft | CompactionResult:
        """What compacting now would do, stored nowhere (``compact --dry-run``, the F5 preview):
        the messages it archives, the draft summary, the figures after. ``keep_rounds``: a cut
        chosen by hand, every closed round but the last ``keep_rounds``. ``user_input``: the
        input the rule's measure counted (its record then says the measure that fired, not one
        taken again without the input: issue 39, ``"7,000 >= 8,000", fired: false``)."""
        built = self.core.build(self.core.current_question) if self.core.current_round else None
        view = self.view(user_input, built)
        asks_live = self.core.strategy.live_summary_prompt is not None
        live = self._live_summary_call(built) if asks_live else None
        return self.core.history.compactions.prepare(
            self.core.strategy,
            self.core.summaries,
            trigger,
            focus,
            view,
            live,
            dry_run=dry_run,
            keep_rounds=keep_rounds,
        )

    def commit_compaction(
        self,
        draft: CompactionDraft,
        content: str | None = None,
        trigger: Trigger = Trigger.MANUAL,
    ) -> CompactionResult:
        """Store a prepared compaction; ``content`` is the user's edit of the draft summary."""
        with self.lease.writing("compaction"):
            result = self.core.history.compactions.commit(draft, content)
        if result.segment is not None and self.core.current_round is not None:
            gone = {m.id for m in result.segment.messages}
            self.core.scratchpad = [s for s in self.core.scratchpad if s.assistant.id not in gone]
        if trigger != Trigger.EMERGENCY:
            self._warn_if_stuck(self.plan())
        return result

    def uncompact(self, compaction_id: int | None = None) -> Compaction:
        """Reverse the latest compaction: its messages return to history (``ctxscope
        uncompact``); refused for any compaction but the latest one not yet undone."""
        with self.lease.writing("uncompact"):
            return self.core.history.undo(compaction_id)

    def pin(self, message_ids: list[int], pinned: bool = True) -> int:
        """Pin (or unpin) messages: no strategy archives a pinned message or its step."""
        with self.lease.writing("pin"):
            changed = self.core.history.pin(message_ids, pinned)
        self._warn_if_pins_crowd()
        return changed

    def _warn_if_pins_crowd(self) -> None:
        """Say so when the pinned messages alone (with L1/L2) reach the threshold."""
        pinned = self.core.history.pinned_ids
        if not pinned:
            return
        built = self.core.build_idle()
        tokens = fixed_tokens(built) + sum(
            m.tokens or 0 for m in self.core.history.history.messages if m.id in pinned
        )
        measure = self.plan().measure
        token_based = measure.source != "count"
        threshold = int(measure.threshold) if token_based else self.core.settings.threshold_tokens
        if tokens >= threshold:
            self.core.events(
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

    def view(self, user_input: str, built: BuiltContext | None) -> PolicyView:
        """What the strategy sees now (:meth:`AgentCore.policy_view`), over the window by
        :attr:`excess` while the engine's last resort runs."""
        return self.core.policy_view(user_input, built, self.excess)

    def _live_summary_call(self, built: BuiltContext | None) -> Callable[[float], str]:
        """Seed 002: the live conversation plus the strategy's (mock) user message, as the
        strategy asks it (:meth:`~engine.compaction.policy.CompactionPolicy.live_summary_request`),
        answered by the model."""
        live = self.core.strategy.live_summary_request((built or self.core.build_idle()).request)

        def call(timeout: float) -> str:
            response = self.core.provider.complete(live, lambda _event: None, self.core.cancelled)
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
        if self.core.strategy.summary is None:
            return
        if self.core.strategy.keeps_recent_rounds:
            self._warn_if_kept_rounds_exceed()
            return
        self.core.events(
            BudgetWarning(
                kept_tokens=self.core.history.tokens(),
                threshold=int(plan.measure.threshold),
                message=f"{plan.measure.describe()}, but {self.core.strategy.name} will not "
                f"compact: {plan.reason}.",
            )
        )

    def check(self, user_input: str = "", built: BuiltContext | None = None) -> bool:
        """Ask the strategy at one of its check points; compact when it says so."""
        told = self.core.strategy.window_notice(self.core.settings.context_window)
        if told and told != self._window_told:
            self.core.events(Notice(message=told))
        self._window_told = told
        plan = self.core.strategy.plan(self.view(user_input, built))
        if plan.compacts:
            self.compact(trigger=Trigger.AUTO, user_input=user_input)
            return True
        self._warn_if_stuck(plan)
        return False

    def _warn_if_kept_rounds_exceed(self) -> None:
        """Seed 000: the keep zone alone (with L1/L2) is at or over the threshold.

        Compaction never goes below the last ``keep_rounds`` rounds, so it cannot help then.
        """
        kept = fixed_tokens(self.core.build_idle()) + self.core.history.kept_tokens()
        threshold = self.core.settings.threshold_tokens
        if kept < threshold:
            return
        keep = self.core.settings.keep_rounds
        self.core.events(
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
