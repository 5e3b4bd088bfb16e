"""Compaction strategies: seed 000 (``layered``, the default), seeds 001-004, and masking.

Each is a :class:`~engine.compaction.policy.CompactionPolicy`; :func:`get_strategy` builds one by
the name users select (``--strategy``, ``CTXSCOPE_STRATEGY``, a session's stored strategy).
"""

from __future__ import annotations

from typing import get_args

from engine.compaction.policy import CompactionPolicy
from engine.compaction.strategies.head_middle_tail import HeadMiddleTailStrategy
from engine.compaction.strategies.layered import LayeredStrategy
from engine.compaction.strategies.masking import MaskingStrategy
from engine.compaction.strategies.message_window import MessageWindowStrategy
from engine.compaction.strategies.mock_user import MockUserStrategy
from engine.compaction.strategies.reset_hint import ResetHintStrategy
from engine.config import Settings, StrategyName

STRATEGIES: dict[str, type[CompactionPolicy]] = {
    cls.name: cls
    for cls in (
        LayeredStrategy,
        ResetHintStrategy,
        MockUserStrategy,
        MessageWindowStrategy,
        HeadMiddleTailStrategy,
        MaskingStrategy,
    )
}
assert set(STRATEGIES) == set(get_args(StrategyName)), "config.StrategyName and STRATEGIES differ"


def get_strategy(name: str, settings: Settings) -> CompactionPolicy:
    """The strategy called ``name``; ValueError naming the known ones otherwise."""
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
    return STRATEGIES[name](settings)


__all__ = ["STRATEGIES", "CompactionPolicy", "get_strategy"]
