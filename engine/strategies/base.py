"""The compaction strategy interface: when to compact, and which whole rounds to archive.

A strategy decides; :class:`engine.history.HistoryManager` carries out (summary, archive,
one transaction). Seed 000's ``layered`` strategy lives next to this file; the other seeds'
designs are added as further strategies with the same two methods.
"""

from __future__ import annotations

from typing import Protocol

from engine.config import Settings
from engine.models import History
from engine.tokens import BudgetCheck


class Strategy(Protocol):
    name: str
    """The name users select (``--strategy``, ``CTXSCOPE_STRATEGY``)."""

    def should_compact(self, budget: BudgetCheck, history: History, fixed_tokens: int) -> bool:
        """Whether a new user input must wait for a compaction first.

        ``fixed_tokens`` is what every request carries besides L3 (system, tools, CODE_LAW),
        so a strategy can tell whether compacting can bring the request under the threshold.
        """
        ...

    def select_rounds(
        self, history: History, *, in_progress: int | None = None, emergency: bool = False
    ) -> list[int]:
        """Indices of the whole rounds to archive (oldest first); empty when none may go.

        ``in_progress`` is the round being worked on, never archived. ``emergency`` is set
        when the API refused the prompt as too long: the strategy may then go below its
        usual keep zone, but still never archives the round in progress.
        """
        ...


def round_indices(history: History) -> list[int]:
    """The round indices present in history, in order (messages carry ``meta.round``)."""
    seen: dict[int, None] = {}
    for msg in history.messages:
        if msg.meta.round is not None:
            seen.setdefault(msg.meta.round)
    return list(seen)


def keep_zone_tokens(history: History, keep_rounds: int) -> int:
    """Tokens of the summaries plus the last ``keep_rounds`` rounds (cached counts)."""
    groups = history.rounds()[-keep_rounds:]
    return sum(s.tokens or 0 for s in history.summaries) + sum(
        m.tokens or 0 for g in groups for m in g
    )


def get_strategy(name: str, settings: Settings) -> Strategy:
    """The strategy called ``name``; ValueError naming the known ones otherwise."""
    from engine.strategies.layered import LayeredStrategy

    known: dict[str, type] = {LayeredStrategy.name: LayeredStrategy}
    if name not in known:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(sorted(known))}")
    strategy: Strategy = known[name](settings)
    return strategy
