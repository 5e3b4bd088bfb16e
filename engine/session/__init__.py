"""The agent over a session (:mod:`~engine.session.agent`), a small object holding its parts:
its state and request building (:mod:`~engine.session.core`), the writer lease
(:mod:`~engine.session.writer`), steering (:mod:`~engine.session.steering`: plan, compaction,
undo, pins), fitting to the window (:mod:`~engine.session.fitting`) and the ReAct round
(:mod:`~engine.session.loop`)."""

from engine.session.agent import Agent
from engine.session.core import (
    CRASH_ANSWER,
    CRASH_RESULT,
    INTERRUPTED_ANSWER,
    InvalidRequest,
    RoundOutcome,
    fixed_tokens,
)

__all__ = [
    "CRASH_ANSWER",
    "CRASH_RESULT",
    "INTERRUPTED_ANSWER",
    "Agent",
    "InvalidRequest",
    "RoundOutcome",
    "fixed_tokens",
]
