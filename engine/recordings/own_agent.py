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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.figures import SessionFigures
from engine.models import Message, Session
from engine.recordings.base import PROMPT_ROLES
from engine.recordings.hidden import hidden_prefix
from engine.settings.config import Settings
from engine.settings.params import in_window, session_settings
from engine.store import Store
from engine.terminal_text import plural


@dataclass(frozen=True)
class RecordedPrompt:
    """The system prompt and tools a recording holds (``meta.origin["hidden_prefix"]`` of its
    first message: Claude Code's prompt snapshot), as local counts made at import."""

    line: int
    """The line of the record they come from."""
    system_tokens: int
    tool_tokens: int
    tools: tuple[str, ...]
    """The tools' names, in the order the agent sent them."""


def _origin(first: Message | None) -> dict[str, Any]:
    """What a recording's first message keeps of it beyond the conversation."""
    return (first.meta.origin if first is not None else None) or {}


def recorded_prompt(first: Message | None) -> RecordedPrompt | None:
    """The system prompt and tools the session's first message keeps (None: none kept, or
    kept before their counts were)."""
    entries = _origin(first).get("hidden_prefix")
    if not isinstance(entries, list):
        return None
    kept = [
        e
        for e in entries
        if isinstance(e, dict) and e.get("role") in PROMPT_ROLES
        and isinstance(e.get("tokens"), int)
    ]  # fmt: skip
    if not kept:
        return None
    return RecordedPrompt(
        line=int(kept[0].get("line") or 0),
        system_tokens=sum(e["tokens"] for e in kept if e["role"] == "system"),
        tool_tokens=sum(e["tokens"] for e in kept if e["role"] == "tool"),
        tools=tuple(str(e.get("name") or "") for e in kept if e["role"] == "tool"),
    )


def recorded_totals(first: Message | None) -> dict[str, float | int]:
    """What a recording says of its calls in total only (SWE-agent's ``info.model_stats``,
    kept at import with its first message: ``api_calls``, ``tokens_sent``,
    ``tokens_received``, ``recorded_cost``); empty for one that records none."""
    facts = _origin(first).get("recorded")
    if not isinstance(facts, dict):
        return {}
    keys = ("api_calls", "tokens_sent", "tokens_received", "recorded_cost")
    return {
        k: facts[k]
        for k in keys
        if isinstance(facts.get(k), (int, float)) and not isinstance(facts.get(k), bool)
    }


def totals_line(agent: str, totals: Mapping[str, float | int]) -> str:
    """``SWE-agent's own totals (no call recorded one by one): 5 calls, 52,861 tokens sent,
    326 received, $0.54``: a run's own figures, said as its own."""
    parts = []
    if "api_calls" in totals:
        parts.append(plural(int(totals["api_calls"]), "call"))
    if "tokens_sent" in totals:
        parts.append(f"{int(totals['tokens_sent']):,} tokens sent")
    if "tokens_received" in totals:
        parts.append(f"{int(totals['tokens_received']):,} received")
    if "recorded_cost" in totals:
        parts.append(f"${float(totals['recorded_cost']):,.2f}")
    return f"{agent}'s own totals (no call recorded one by one): " + ", ".join(parts)


@dataclass(frozen=True)
class OwnAgentView:
    """A recorded session's figures as its own agent had them: its
    :class:`~engine.figures.SessionFigures` (the record every surface prints) and the hidden
    prefix the gauge draws as its L1."""

    figures: SessionFigures
    hidden_prefix: int
    """What the agent sent around the conversation (its own system prompt, tools), estimated
    (:mod:`engine.recordings.hidden`)."""
    prompt: RecordedPrompt | None = None
    """Its system prompt and tools as the recording holds them (Claude Code 2.1.28x's prompt
    snapshot), counted locally at import; None: the recording does not hold them."""
    totals: Mapping[str, float | int] = field(default_factory=dict)
    """Its own totals where it records no call one by one (:func:`recorded_totals`); empty
    when its calls are recorded (their figures are the session's) or it records none."""

    @property
    def totals_line(self) -> str:
        """The line every surface prints of :attr:`totals` (``""``: none)."""
        return totals_line(self.who, self.totals) if self.totals else ""

    @property
    def prefix_parts(self) -> tuple[int, int]:
        """The hidden prefix as (system prompt and the rest, tool definitions): the tools as
        recorded, within the prefix; ``(hidden_prefix, 0)`` when the recording does not tell
        them apart."""
        if self.prompt is None or not self.prompt.tools:
            return self.hidden_prefix, 0
        tools = min(self.prompt.tool_tokens, self.hidden_prefix)
        return self.hidden_prefix - tools, tools

    @property
    def agent(self) -> str:
        """``Claude Code``, ``Codex``, …, or ``""`` when the agent is not known."""
        return self.figures.agent

    @property
    def model(self) -> str:
        return self.figures.model

    @property
    def context_window(self) -> int:
        return self.figures.window

    @property
    def compact_at(self) -> int | None:
        """The agent's own auto-compact point (None: not known for this agent)."""
        return self.figures.auto_compact_at

    @property
    def context_tokens(self) -> int | None:
        """Its context after its last API call as recorded; None without recorded usage."""
        return self.figures.context_tokens

    @property
    def compactions(self) -> int:
        return self.figures.compactions

    @property
    def cost(self) -> float | None:
        return self.figures.cost

    @property
    def cost_note(self) -> str:
        return self.figures.cost_note

    @property
    def until_compact(self) -> int | None:
        return self.figures.until_auto_compact

    @property
    def who(self) -> str:
        """The agent in words: ``Claude Code`` or ``the recorded agent``."""
        return self.agent or "the recorded agent"

    @property
    def cost_text(self) -> str:
        """``$11.85``, or ``–`` for a model without a price."""
        return self.figures.cost_text


def own_agent_view(
    store: Store, session: Session, settings: Settings, messages: Sequence[Message] | None = None
) -> OwnAgentView | None:
    """The figures of a recorded session through its own agent (None: not a recording).
    ``messages``: the session's, archived or not, when the caller has read them (for the
    hidden prefix: :func:`~engine.recordings.hidden.hidden_prefix`)."""
    if not session.recorded or session.id is None:
        return None
    from engine.recordings.figures import session_figures

    hidden = hidden_prefix(store, session.id, messages=messages)
    first = messages[0] if messages else store.first_message(session.id)
    return own_view(
        session_figures(store, session, settings), 0 if hidden is None else hidden.tokens, first
    )


def own_view(figures: SessionFigures, hidden_prefix: int, first: Message | None) -> OwnAgentView:
    """A recording's view from its figures, its hidden prefix and its first message (what it
    keeps of the recording: the prompt snapshot, the run's own totals, read only where its
    calls are not recorded one by one)."""
    return OwnAgentView(
        figures=figures,
        hidden_prefix=hidden_prefix,
        prompt=recorded_prompt(first),
        totals=recorded_totals(first) if figures.requests == 0 else {},
    )


def planning_settings(
    store: Store, session: Session, settings: Settings, window: int | None = None
) -> Settings:
    """The settings ctxscope's own agent and strategies plan ``session`` with — ``context``'s
    request and what-ifs, the workbench, ``ask --session``, ``replay``: the numbers the
    session stores, in ``window`` when one is given (``replay --window``), else, for a
    recording, in its own agent's window as its figures print it (a Claude Code session on
    the 1M window is planned in 1,000,000, not in ctxscope's default 200,000: one window per
    session on every surface)."""
    settings = session_settings(settings, session)
    if window is None:
        from engine.recordings.figures import recorded_window

        window = recorded_window(store, session, settings)
    return settings if window is None else in_window(settings, window)
