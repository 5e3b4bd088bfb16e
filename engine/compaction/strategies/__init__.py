"""Compaction strategies: seed 000 (``layered``, the default), seeds 001-004, and masking.

Each is a :class:`~engine.compaction.policy.CompactionPolicy`; :func:`get_strategy` builds one by
the name users select (``--strategy``, ``CTXSCOPE_STRATEGY``, a session's stored strategy).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple, get_args

from engine.compaction.policy import CompactionPolicy
from engine.settings.config import Settings
from engine.settings.strategies import StrategyName


class _Entry(NamedTuple):
    """One strategy in the registry."""

    module: str
    """Its module, in this package."""
    cls: str
    """Its policy class there."""
    slow_to_replay: bool = False
    """Among the slowest to replay per step (docs/benchmarks.md#replay: message-window 3.9 and
    masking 3.0 ms against 2.0–2.5 for the others on 2 000 calls): :func:`replay_order`
    hands it to a worker first."""


_CLASSES = {
    "layered": _Entry("layered", "LayeredStrategy"),
    "reset-hint": _Entry("reset_hint", "ResetHintStrategy"),
    "mock-user": _Entry("mock_user", "MockUserStrategy"),
    "message-window": _Entry("message_window", "MessageWindowStrategy", slow_to_replay=True),
    "head-middle-tail": _Entry("head_middle_tail", "HeadMiddleTailStrategy"),
    "masking": _Entry("masking", "MaskingStrategy", slow_to_replay=True),
}
"""Each strategy by the name users select."""
assert list(_CLASSES) == list(get_args(StrategyName)), "StrategyName and STRATEGIES differ"


class _Strategies(Mapping[str, type[CompactionPolicy]]):
    """Name → policy class; a strategy's module is imported when its class is first asked for,
    so a command over one session (``ctxscope context``) loads one strategy, not six."""

    def __getitem__(self, name: str) -> type[CompactionPolicy]:
        module, cls, _ = _CLASSES[name]
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


def replay_order(names: Sequence[str]) -> list[str]:
    """``names`` in the order to hand them to replay workers: the strategies slowest to replay
    first (:attr:`_Entry.slow_to_replay`), so the others fill in around them; otherwise in the
    order given. It changes a side-by-side replay's wall time, never a result."""
    return sorted(names, key=lambda n: not (n in _CLASSES and _CLASSES[n].slow_to_replay))


__all__ = ["STRATEGIES", "CompactionPolicy", "get_strategy", "replay_order"]
