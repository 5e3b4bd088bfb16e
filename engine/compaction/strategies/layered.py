"""Seed 000 (``layered``): keep at least the last ``keep_rounds`` whole rounds.

- checked when a new user input arrives (A6/C7): ``last usage + len(input)//3 >= 0.8 × window``
  and at least ``min_messages`` messages (:func:`engine.messages.tokens.check_budget`);
- archives every closed round before the keep zone; only user/assistant/tool messages go,
  summaries are never re-compacted (they are appended, in system blocks);
- the boundary is a whole round, so tool_use / tool_result pairs are never split;
- when the keep zone alone is already over the threshold, compacting one round per input
  would only pile up one-round summaries without getting under it: the engine warns instead,
  and compacts once ``keep_rounds`` rounds have gathered beyond the keep zone, so that each
  summary covers a worthwhile batch.
"""

from __future__ import annotations

import math

from engine.compaction.policy import (
    CheckPoint,
    CompactionPolicy,
    Lifecycle,
    Measure,
    Plan,
    PolicyView,
    cut_before,
    keep_zone_tokens,
    round_indices,
    step_units,
)
from engine.compaction.summary import A5_SPEC
from engine.messages.tokens import BudgetCheck, check_budget
from engine.models import Message, Placement


def _summary_budget() -> float:
    """:data:`engine.compaction.extractive.SUMMARY_BUDGET`, imported when the last resort
    needs it: planning (``ctxscope context``) does not load the extractive summary."""
    from engine.compaction.extractive import SUMMARY_BUDGET

    return SUMMARY_BUDGET


class LayeredStrategy(CompactionPolicy):
    name = "layered"
    seed = "000_be2100c33498e983.txt"
    checks = frozenset({CheckPoint.BEFORE_ROUND})
    placement = Placement.SYSTEM_BLOCK
    lifecycle = Lifecycle.APPEND
    summary = A5_SPEC
    uses_api_usage = True
    keeps_recent_rounds = True

    @property
    def keep_rounds(self) -> int:
        return self.settings.keep_rounds

    def budget(self, view: PolicyView) -> BudgetCheck:
        """The seed A6/C7 check for ``view.user_input``."""
        return check_budget(
            view.last_usage,
            view.request_tokens,
            view.user_input,
            len(view.history.messages),
            self.settings,
            usage_source=view.last_usage_source,
        )

    def measure(self, view: PolicyView) -> Measure:
        check = self.budget(view)
        return Measure(
            what=(
                "last API usage + input estimate"
                if check.source == "api"
                else "local count + input estimate"
            ),
            value=check.estimated_total,
            threshold=self.settings.threshold_ratio * self.settings.context_window,
            comparison=">=",
            source=check.source,
            extra_condition=check.message_count >= self.settings.min_messages,
        )

    def select(self, view: PolicyView, *, emergency: bool = False) -> list[Message]:
        closed = [r for r in round_indices(view.history) if r != view.in_progress]
        keep = self.keep_rounds
        if emergency and view.excess and view.in_progress is not None:
            # Inside a round, over the window: the oldest closed rounds, just enough of them;
            # when all of them are not enough, the round's own oldest steps too.
            taken = self._rounds_freeing(view, closed, view.excess)
            if taken == len(closed):
                steps = self._round_steps_freeing(view, closed)
                if steps:
                    return steps
            keep = len(closed) - taken
        elif emergency and len(closed) <= keep:
            # The API refused the prompt: go below the keep zone. Keep the newest closed round
            # unless a round is in progress (then that one is the context that must fit).
            keep = 0 if view.in_progress is not None else 1
        chosen = set(closed[: max(0, len(closed) - keep)])
        messages = view.history.messages
        keep_from = next(
            (i for i, m in enumerate(messages) if m.meta.round not in chosen), len(messages)
        )
        return cut_before(messages, keep_from, view.protected())

    def _round_steps_freeing(self, view: PolicyView, closed: list[int]) -> list[Message]:
        """Every closed round and the oldest steps of the round in progress that free what is
        still missing (the last resort of a round longer than the window: a long trajectory
        is one round of hundreds of calls). Never its newest step, nor its own input; [] when
        the closed rounds are enough or no step of the round can go.

        The round's steps go by the room between the threshold and the window at least
        (``1 - threshold_ratio``, 20 %), not just the excess: a long round grows by a step at
        a time, and freeing only the excess would archive (and summarise) at every step."""
        need = math.ceil(view.excess / (1 - _summary_budget()))
        messages = view.history.messages
        gone = set(closed)
        freed = sum(view.tokens_of(m) for m in messages if m.meta.round in gone)
        if freed >= need:
            return []
        room = math.ceil(self.settings.context_window * (1 - self.settings.threshold_ratio))
        need = max(need, freed + room)
        start = next(
            (i for i, m in enumerate(messages) if m.meta.round == view.in_progress), len(messages)
        )
        units = list(step_units(messages[start:]))[:-1]  # the newest step is the one answered
        protected = view.protected()
        keep_from = start
        for unit in units:
            if freed >= need:
                break
            keep_from += len(unit)
            if not any(m.id in protected for m in unit):
                freed += sum(view.tokens_of(m) for m in unit)
        if keep_from == start:
            return []
        return cut_before(messages, keep_from, protected)

    def _rounds_freeing(self, view: PolicyView, closed: list[int], excess: int) -> int:
        """How many of the oldest ``closed`` rounds free ``excess`` tokens, with room for the
        summary that takes their place (an extractive A5 summary aims at ``SUMMARY_BUDGET`` of
        its segment; a longer one leaves the engine's last resort more to do)."""
        need = math.ceil(excess / (1 - _summary_budget()))
        tokens: dict[int | None, int] = {}
        for msg in view.history.messages:
            tokens[msg.meta.round] = tokens.get(msg.meta.round, 0) + view.tokens_of(msg)
        freed = 0
        for count, rnd in enumerate(closed, 1):
            freed += tokens.get(rnd, 0)
            if freed >= need:
                return count
        return len(closed)

    def plan(self, view: PolicyView, *, emergency: bool = False) -> Plan:
        def judge(cut: list[Message]) -> str:
            if not cut:
                keep = self.keep_rounds
                return f"nothing to compact: history holds no rounds beyond the last {keep}"
            crowded = (
                view.fixed_tokens + keep_zone_tokens(view.history, self.keep_rounds)
                >= self.settings.threshold_ratio * self.settings.context_window
            )
            rounds = {m.meta.round for m in cut}
            if crowded and len(rounds) < self.keep_rounds and not emergency:
                return (
                    f"the last {self.keep_rounds} rounds alone are over the threshold; "
                    f"compacting waits until {self.keep_rounds} rounds have gathered beyond them"
                )
            return ""

        select = lambda: self.select(view, emergency=emergency)  # noqa: E731
        return Plan(self.name, self.measure(view), select, judge)
