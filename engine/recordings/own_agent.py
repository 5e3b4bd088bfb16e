"""A recorded session through its own agent's numbers: its model, window, auto-compact point,
context as its last API call reported it, its recorded compactions and what its calls cost.

A recorded session (imported or watched) is another agent's. What it shows first is what that
agent did and would do — its window and auto-compact point by its own rule
(:func:`engine.recordings.agents.context_rules_for_session`: Claude Code 200 000 → 167 000,
or 1 000 000 → 967 000 on the 1M window; Codex 90 % of its raw window) —, never ctxscope's own
strategy thresholds, which are what-ifs beside it. ``watch`` and the stored session go by the
same rules. The agent is the one the registry names for the session
(:func:`engine.recordings.agents.agent_of`).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config import Settings
from engine.models import Session, Usage
from engine.prices import price_for
from engine.recordings import agents
from engine.recordings.hidden import hidden_prefix
from engine.store import Store


def context_of(usage: Usage) -> int:
    """The agent's context after a call, as the call reported it: everything it sent (input,
    cache read, cache write) and the answer, which the next request carries."""
    return usage.input_side + usage.output_tokens


@dataclass(frozen=True)
class OwnAgentView:
    """A recorded session's figures as its own agent had them."""

    agent: str
    """``Claude Code``, ``Codex``, or ``""`` when the agent is not known."""
    model: str
    context_window: int
    compact_at: int | None
    """The agent's own auto-compact point (None: not known for this agent)."""
    context_tokens: int | None
    """Its context after its last API call as recorded (:func:`context_of`); None without
    recorded usage."""
    hidden_prefix: int
    """What the agent sent around the conversation (its own system prompt, tools), estimated
    (:mod:`engine.recordings.hidden`)."""
    compactions: int
    """The compactions the agent made, as recorded."""
    cost: float | None
    """Its recorded calls at list price (``engine.prices``); None: no price for the model."""
    cost_note: str

    @property
    def until_compact(self) -> int | None:
        if self.compact_at is None or self.context_tokens is None:
            return None
        return max(0, self.compact_at - self.context_tokens)

    @property
    def who(self) -> str:
        """The agent in words: ``Claude Code`` or ``the recorded agent``."""
        return self.agent or "the recorded agent"

    @property
    def cost_text(self) -> str:
        """``$11.85``, or ``–`` for a model without a price."""
        return "–" if self.cost is None else f"${self.cost:,.2f}"


def own_agent_view(store: Store, session: Session, settings: Settings) -> OwnAgentView | None:
    """The figures of a recorded session through its own agent (None: not a recording)."""
    if not session.recorded or session.id is None:
        return None
    sid = session.id
    rules = agents.context_rules_for_session(store, session, settings)
    usages = store.usages(sid)
    last = store.last_usage(sid)
    price = price_for(settings, session.model or settings.model)
    hidden = hidden_prefix(store, sid)
    compactions = [
        c
        for c in store.compactions(sid)
        if c.stats.get("recorded") and c.outcome in ("success", "fallback")
    ]
    return OwnAgentView(
        agent=agents.label_of(agents.agent_of(session)),
        model=session.model,
        context_window=rules.window,
        compact_at=rules.auto_compact_at,
        context_tokens=None if last is None else context_of(last.usage),
        hidden_prefix=0 if hidden is None else hidden.tokens,
        compactions=len(compactions),
        cost=price.total_cost(usages) if usages else None,
        cost_note=price.note,
    )
