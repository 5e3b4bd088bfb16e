"""The agent over a session (:mod:`~engine.session.agent`), a small object holding its parts:
its state and request building (:mod:`~engine.session.core`), the writer lease
(:mod:`~engine.session.writer`), steering (:mod:`~engine.session.steering`: plan, compaction,
undo, pins), fitting to the window (:mod:`~engine.session.fitting`) and the ReAct round
(:mod:`~engine.session.loop`).

The names below are imported when first asked for (PEP 562), not with the package: a command
that needs only :mod:`engine.session.workspace` (``sessions``, ``show``) does not pay for the
agent loop, the request builder and the store behind them (~0.2 s)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.session.agent import Agent
    from engine.session.core import (
        CRASH_ANSWER,
        CRASH_RESULT,
        INTERRUPTED_ANSWER,
        InvalidRequest,
        RoundOutcome,
        fixed_tokens,
    )

_WHERE = {
    "CRASH_ANSWER": "engine.session.core",
    "CRASH_RESULT": "engine.session.core",
    "INTERRUPTED_ANSWER": "engine.session.core",
    "InvalidRequest": "engine.session.core",
    "RoundOutcome": "engine.session.core",
    "fixed_tokens": "engine.session.core",
    "Agent": "engine.session.agent",
}

__all__ = [
    "CRASH_ANSWER",
    "CRASH_RESULT",
    "INTERRUPTED_ANSWER",
    "Agent",
    "InvalidRequest",
    "RoundOutcome",
    "fixed_tokens",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # asked once
    return value
