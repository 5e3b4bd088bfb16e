"""A stored session's figures (:mod:`engine.figures`) with the rules of the agent that ran it.

The one door every surface goes through: ``session_figures(store, session, settings)``. A
recording is measured by its own agent's rules (the agents' registry:
:func:`engine.recordings.agents.context_rules_for_session`); ctxscope's own session by seed
000's (its ``context_window``, compacting at ``threshold_ratio`` of it).
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.figures import Call, Rules, SessionFigures, WindowRules, figures_from_calls
from engine.figures.spend import Spend, priced, prices
from engine.models import Compaction, Outcome, Session
from engine.settings.config import Settings
from engine.settings.params import session_settings
from engine.store import Store


def own_rules(settings: Settings) -> Rules:
    """ctxscope's own agent: its session's window, and seed 000's trigger in it."""
    return Rules(
        window=settings.context_window,
        auto_compact_at=settings.threshold_tokens,
        window_source="the session's context_window",
        trigger_source=f"seed 000: threshold_ratio {settings.threshold_ratio} × context_window",
    )


def rules_for(
    store: Store, session: Session, settings: Settings, env: Mapping[str, str] | None = None
) -> WindowRules:
    """The rules a session is measured by: its own agent's for a recording, seed 000's for
    ctxscope's own."""
    if not session.recorded:
        return own_rules(session_settings(settings, session))
    from engine.recordings.agents import context_rules_for_session

    return context_rules_for_session(store, session, settings, env)


def counted(compaction: Compaction) -> bool:
    """A compaction that holds: it succeeded (or fell back to a summary) and was not undone."""
    return (
        compaction.outcome in (Outcome.SUCCESS, Outcome.FALLBACK) and compaction.undone_at is None
    )


def session_figures(
    store: Store,
    session: Session,
    settings: Settings,
    env: Mapping[str, str] | None = None,
    rules: WindowRules | None = None,
) -> SessionFigures:
    """The figures of a stored session, as every surface prints them."""
    assert session.id is not None
    sid = session.id
    model = session.model or ("" if session.recorded else settings.model)
    calls = [
        Call(
            usage=u.usage,
            model=_normal(getattr(u, "model", None) or model),
            created_at=u.created_at,
            billed=u.source != "local",
            input_estimate=u.local_estimate,
        )
        for u in store.usages(sid)
    ]
    history_tokens = store.history_tokens(sid)
    spend, note = session_spend(store, sid, session.model, settings)
    return figures_from_calls(
        calls,
        rules if rules is not None else rules_for(store, session, settings, env),
        spend,
        note,
        agent=agent_label(session),
        model=model,
        history_tokens=history_tokens,
        compactions=sum(1 for c in store.compactions(sid) if counted(c)),
    )


def session_spend(store: Store, sid: int, model: str, settings: Settings) -> tuple[Spend, str]:
    """What a session's billed calls cost, summed and priced as the report card does: each
    request at the model that answered it (one that names none: the session's ``model``)."""
    known = prices(settings)
    spend = Spend()
    used: dict[str, None] = {}
    for group in store.usage_groups(session=sid):
        answered = group.model or model
        used[answered] = None
        spend.add(priced(group, known.rates_for(answered, group.day, group.long)))
    notes = "; ".join(known.of(m).note for m in used) if used else known.of(model).note
    return spend, notes


def agent_label(session: Session) -> str:
    """Who ran the session in words, as stored with it."""
    if not session.recorded:
        return "ctxscope"
    from engine.recordings.agents import agent_of, label_of

    return label_of(agent_of(session))


def _normal(model: str) -> str:
    """A model id as the price data names it: a provider prefix (``anthropic/``) dropped."""
    return model.rsplit("/", 1)[-1] if "/" in model else model
