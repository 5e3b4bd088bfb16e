"""The agent over a session: the ReAct loop (:mod:`~engine.session.loop`) on top of steering
(:mod:`~engine.session.steering`: plan, compaction, undo, pins), the writer lease
(:mod:`~engine.session.writer`) and the agent's state and request building
(:mod:`~engine.session.core`)."""

from engine.session.core import (
    CRASH_ANSWER,
    CRASH_RESULT,
    INTERRUPTED_ANSWER,
    InvalidRequest,
    RoundOutcome,
    fixed_tokens,
)
from engine.session.loop import Agent

__all__ = [
    "CRASH_ANSWER",
    "CRASH_RESULT",
    "INTERRUPTED_ANSWER",
    "Agent",
    "InvalidRequest",
    "RoundOutcome",
    "fixed_tokens",
]
