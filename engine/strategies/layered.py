"""Seed 000's compaction strategy: keep at least the last ``keep_rounds`` whole rounds.

- fires on the budget rule of A6/C7 (``BudgetCheck.fire``);
- archives every round before the keep zone; only user/assistant/tool messages go, summaries
  are never re-compacted (they are not rounds);
- the boundary is a whole round, so tool_use / tool_result pairs are never split;
- when the keep zone alone is already over the threshold, compacting one round per input
  would only pile up one-round summaries without getting under it: the engine warns instead,
  and compacts once ``keep_rounds`` rounds have gathered beyond the keep zone, so that each
  summary covers a worthwhile batch.
"""

from __future__ import annotations

from engine.config import Settings
from engine.models import History
from engine.strategies.base import keep_zone_tokens, round_indices
from engine.tokens import BudgetCheck


class LayeredStrategy:
    name = "layered"

    def __init__(self, settings: Settings) -> None:
        self.keep_rounds = settings.keep_rounds

    def should_compact(self, budget: BudgetCheck, history: History, fixed_tokens: int) -> bool:
        if not budget.fire:
            return False
        selected = self.select_rounds(history)
        if not selected:
            return False
        crowded = fixed_tokens + keep_zone_tokens(history, self.keep_rounds) >= budget.threshold
        return not crowded or len(selected) >= self.keep_rounds

    def select_rounds(
        self, history: History, *, in_progress: int | None = None, emergency: bool = False
    ) -> list[int]:
        closed = [r for r in round_indices(history) if r != in_progress]
        keep = self.keep_rounds
        if emergency and len(closed) <= keep:
            # The API refused the prompt: go below the keep zone. Keep the newest closed round
            # unless a round is in progress (then that one is the context that must fit).
            keep = 0 if in_progress is not None else 1
        cut = max(0, len(closed) - keep)
        return closed[:cut]
