"""The as-recorded row of a replay: what a recorded session's real requests were.

Beside each strategy's replay, ``replay`` shows the session as its own agent ran it: every
recorded API call's tokens as the API reported them (input, cache read, cache write, output),
its cost at list price by the lifetime of each cache write and the price of its day
(:mod:`engine.figures.prices`), and the compactions the agent made, where they fell. Nothing is
replayed: the figures are the stored usage, so a strategy is compared with what really
happened.
"""

from __future__ import annotations

from datetime import datetime

from engine.figures.prices import price_for
from engine.models import UsageRecord
from engine.replay.cache_model import CacheUse
from engine.replay.runner import CompactionFigures, ReplayResult, StepFigures
from engine.settings.config import Settings
from engine.store import Store

AS_RECORDED = "as-recorded"
"""The row's name (``"strategy": "as-recorded"`` in ``replay --json``)."""


def as_recorded(
    store: Store, session_id: int, settings: Settings, window: int
) -> ReplayResult | None:
    """The recorded session's real requests, in its agent's ``window``, as a replay result
    (None: not a recording, or no usage recorded)."""
    session = store.get_session(session_id)
    usages = store.usages(session_id)
    if not session.recorded or not usages:
        return None
    price = price_for(settings, session.model or settings.model)
    recorded = [
        c
        for c in store.compactions(session_id)
        if c.stats.get("recorded") and c.outcome in ("success", "fallback")
    ]
    result = ReplayResult(
        AS_RECORDED, window=window, price_note=price.note, total_steps=len(usages)
    )
    for step, record in enumerate(usages, 1):
        usage = record.usage
        fired = [c for c in recorded if _step_of(c.created_at, usages) == step]
        result.steps.append(
            StepFigures(
                step=step,
                round=record.round_index or 0,
                tokens=usage.input_side,
                cache=CacheUse(
                    read=usage.cache_read_input_tokens,
                    write=usage.cache_creation_input_tokens,
                    uncached=usage.input_tokens,
                ),
                output=usage.output_tokens,
                cost=price.usage_cost(usage, record.created_at),
                compactions=len(fired),
                original=usage.input_side,
            )
        )
        for c in fired:
            result.compactions.append(
                CompactionFigures(
                    step=step,
                    trigger=c.trigger,
                    tokens_before=int(c.stats.get("recorded_pre_tokens") or c.tokens_before),
                    tokens_after=c.tokens_after,
                    outcome=c.outcome,
                )
            )
    return result


def _step_of(at: datetime, usages: list[UsageRecord]) -> int:
    """The first call made after a compaction (the request it shrank); the last call for a
    compaction recorded after every call."""
    return min(len(usages), 1 + sum(1 for u in usages if u.created_at <= at))
