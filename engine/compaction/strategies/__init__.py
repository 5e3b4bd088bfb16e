"""Compaction strategies: seed 000 (``layered``, the default), seeds 001-004, and masking.

Each is a :class:`~engine.compaction.policy.CompactionPolicy`; :func:`get_strategy` builds one by
the name users select (``--strategy``, ``CTXSCOPE_STRATEGY``, a session's stored strategy).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import get_args

from engine.compaction.policy import CompactionPolicy
from engine.settings.config import Settings
from engine.settings.strategies import StrategyName

_CLASSES = {
    "layered": ("layered", "LayeredStrategy"),
    "reset-hint": ("reset_hint", "ResetHintStrategy"),
    "mock-user": ("mock_user", "MockUserStrategy"),
    "message-window": ("message_window", "MessageWindowStrategy"),
    "head-middle-tail": ("head_middle_tail", "HeadMiddleTailStrategy"),
    "masking": ("masking", "MaskingStrategy"),
}
"""Each strategy's module (in this package) and class, by the name users select."""
assert list(_CLASSES) == list(get_args(StrategyName)), "StrategyName and STRATEGIES differ"


class _Strategies(Mapping[str, type[CompactionPolicy]]):
    """Name → policy class; a strategy's module is imported when its class is first asked for,
    so a command over one session (``ctxscope context``) loads one strategy, not six."""

    def __getitem__(self, name: str) -> type[CompactionPolicy]:
        module, cls = _CLASSES[name]
        found: type[CompactionPolicy] = getattr(
            importlib.import_module(f"{__name__}.{module}"), cls
        )
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(_CLASSES)

    def __len__(self) -> int:
        return len(_CLASSES)


STRATEGIES: Mapping[str, type[CompactionPolicy]] = _Strategies()
"""Every strategy by name, in the order comparisons show them."""


def get_strategy(name: str, settings: Settings) -> CompactionPolicy:
    """The strategy called ``name``; ValueError naming the known ones otherwise."""
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
    return STRATEGIES[name](settings)


__all__ = ["STRATEGIES", "CompactionPolicy", "get_strategy"]
