"""A session's figures, computed once: the one record every surface prints.

``sessions``, ``show``, ``context``, ``watch --jsonl``, ``report``, ``statusline`` and the
workbench (header, gauge, watch bar, F2, F11) each print a session's window, auto-compact
point, context, countdown, tokens and cost. They print them from one :class:`SessionFigures`,
made by :func:`figures_from_calls` from the session's billed calls and the rules of the agent
that ran it (:class:`WindowRules`: its window and auto-compact point, each with where it comes
from), so two screens can never disagree about one session.

Two figures that differ by design are kept apart and named:

- ``context_tokens`` is the agent's context **at its last call**, as the call reported it
  (input + cache read + cache write + output): the agent's own truth, exact, the one the
  countdown is measured from (Claude Code's ``/context`` and status line count the same);
- ``history_tokens`` is what ctxscope keeps of the conversation (live messages and active
  summaries, counted locally), which is not what the agent sent: its own system prompt and
  tools are not in it, and a recording's thinking blocks are kept but never counted.

A figure that is not known is ``None`` and printed ``–``; never another session's default.
This module takes the rules as an argument: which agent's rules apply is the recordings'
registry's business (:mod:`engine.recordings.figures` joins the two).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from engine.models import Session, SessionInfo, Usage

if TYPE_CHECKING:
    from engine.figures.spend import Spend


class WindowRules(Protocol):
    """What an agent's rules say of a session's context: the agent's ``ContextRules``."""

    @property
    def window(self) -> int: ...

    @property
    def auto_compact_at(self) -> int | None: ...

    @property
    def window_source(self) -> str: ...

    @property
    def trigger_source(self) -> str: ...

    @property
    def project_files(self) -> tuple[str, ...]:
        """The project's own settings files the rules read (``()``: none)."""
        ...

    @property
    def project_fields(self) -> tuple[str, ...]:
        """What the rules read of them, as dotted paths."""
        ...

    @property
    def times_recorded(self) -> bool:
        """Whether the agent's files say when each step happened."""
        ...


@dataclass(frozen=True)
class Rules:
    """A plain :class:`WindowRules` (ctxscope's own sessions, tests)."""

    window: int
    auto_compact_at: int | None
    window_source: str
    trigger_source: str
    project_files: tuple[str, ...] = ()
    project_fields: tuple[str, ...] = ()
    times_recorded: bool = True


@dataclass(frozen=True)
class Call:
    """One billed model call: what it reported, on which model, when."""

    usage: Usage
    model: str
    created_at: datetime | None = None
    billed: bool = True
    """Counted by the API that billed it; False for ctxscope's own local count (the offline
    provider), which measures the context but costs nothing."""
    input_estimate: int | None = None
    """ctxscope's count of what the call sent, where the agent records no input (Copilot CLI
    records only each response's output): the context then is this estimate + the output."""


@dataclass(frozen=True)
class Tokens:
    """Tokens over a session's billed calls, by kind, as the API billed them."""

    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0

    @property
    def total(self) -> int:
        return self.input + self.cache_read + self.cache_write + self.output


@dataclass(frozen=True)
class SessionFigures:
    """A session's figures, as every surface prints them."""

    agent: str
    """Who ran it in words: ``Claude Code``, ``Codex``, ``ctxscope``, or ``""`` when not
    known."""
    model: str
    """The model of its last billed call (the session's model without one)."""
    models: tuple[str, ...]
    """Every model its calls were billed on, in order of first use."""
    window: int
    window_source: str
    auto_compact_at: int | None
    """Where the agent compacts by itself; None: no such point is known for this agent."""
    trigger_source: str
    context_tokens: int | None
    """The context at the agent's last call, as that call reported it (None: no call)."""
    history_tokens: int
    """What ctxscope keeps of the conversation, counted locally (a different figure)."""
    compactions: int
    requests: int
    tokens: Tokens
    cost: float | None
    """Every billed call at list price, at its model's price of its day and tier; None when
    no call has a price."""
    cost_note: str
    unpriced_requests: int = 0
    """Billed calls on a model without a price (not in ``cost``)."""
    context_source: str = field(
        default="the agent's last API call as recorded (input + cache read + cache write + output)"
    )
    times_recorded: bool = True
    """Whether the recording says when its steps happened (False: SWE-agent's trajectories,
    whose stored times are the import's; :func:`session_times`)."""

    @property
    def until_auto_compact(self) -> int | None:
        """Tokens left before the agent compacts by itself (0 once past it)."""
        if self.auto_compact_at is None or self.context_tokens is None:
            return None
        return max(0, self.auto_compact_at - self.context_tokens)

    @property
    def context_estimated(self) -> bool:
        """The context's input side is ctxscope's own count: the agent records none."""
        return self.context_source == ESTIMATED_CONTEXT

    @property
    def percent(self) -> float | None:
        """The context as a share of the window, in percent (one decimal)."""
        if self.context_tokens is None or self.window <= 0:
            return None
        return round(100 * self.context_tokens / self.window, 1)

    @property
    def cost_text(self) -> str:
        """``$11.85``, or ``–`` without a price."""
        return "–" if self.cost is None else f"${self.cost:,.2f}"

    def to_json(self) -> dict[str, Any]:
        """The record as every ``--json`` output carries it (``figures``)."""
        return {
            "agent": self.agent or None,
            "model": self.model,
            "models": list(self.models),
            "context_window": self.window,
            "window_source": self.window_source,
            "auto_compact_at": self.auto_compact_at,
            "trigger_source": self.trigger_source,
            "context_tokens": self.context_tokens,
            "context_source": self.context_source,
            "until_auto_compact": self.until_auto_compact,
            "percent": self.percent,
            "history_tokens": self.history_tokens,
            "compactions": self.compactions,
            "requests": self.requests,
            "tokens": {
                "input": self.tokens.input,
                "cache_read": self.tokens.cache_read,
                "cache_write": self.tokens.cache_write,
                "output": self.tokens.output,
                "total": self.tokens.total,
            },
            "cost": None if self.cost is None else round(self.cost, 6),
            "cost_note": self.cost_note,
            "unpriced_requests": self.unpriced_requests,
            "times_recorded": self.times_recorded,
        }

    def stored(self) -> dict[str, Any]:
        """What the store keeps of these figures (:meth:`Store.keep_figures`): all but
        ``history_tokens`` and ``compactions``, which the store sums as it lists sessions."""
        kept = {f.name: getattr(self, f.name) for f in fields(self)}
        del kept["history_tokens"], kept["compactions"]
        kept["models"] = list(self.models)
        kept["tokens"] = {f.name: getattr(self.tokens, f.name) for f in fields(Tokens)}
        return kept

    @classmethod
    def from_stored(
        cls, kept: Mapping[str, Any], *, history_tokens: int, compactions: int
    ) -> SessionFigures:
        """The figures :meth:`stored` kept, with the two the store sums. Raises ``KeyError``
        or ``TypeError`` for a record of another shape (made by another version)."""
        values = dict(kept)
        values["models"] = tuple(values["models"])
        values["tokens"] = Tokens(**values["tokens"])
        return cls(**values, history_tokens=history_tokens, compactions=compactions)

    def context_line(self) -> str:
        """``context 54,242 / 1,000,000 (5.4%) · 912,758 until auto-compact at 967,000``: the
        words every surface uses for the context and its countdown."""
        if self.context_tokens is None:
            line = f"context – / {self.window:,}"
        else:
            line = f"context {self.context_tokens:,} / {self.window:,} ({self.percent}%)"
        if self.auto_compact_at is None:
            return line + " · auto-compact point not known"
        until = self.until_auto_compact
        return (
            line
            + f" · {'–' if until is None else f'{until:,}'} until auto-compact at "
            + f"{self.auto_compact_at:,}"
        )

    def line(self) -> str:
        """The one line a status line prints: who, context, countdown, cost."""
        who = " · ".join(p for p in (self.agent, self.model) if p)
        return " · ".join(p for p in (who, self.context_line(), self.cost_text) if p)


def session_times(
    figures: SessionFigures, session: Session, started_at: datetime | None, last_at: datetime | None
) -> tuple[datetime | None, datetime | None]:
    """When a session began and last ran, as every surface shows it: its own first and last
    rounds' times (``started_at``, ``last_at``: a recording's as it recorded them), before
    its first round when it was made; ``(None, None)`` for a recording whose agent writes no
    time (``figures.times_recorded``: the times stored are the import's, not the run's)."""
    if not figures.times_recorded:
        return None, None
    return started_at or session.created_at, last_at or session.updated_at


def by_last_active(
    infos: Sequence[SessionInfo], figures: Mapping[int, SessionFigures]
) -> list[SessionInfo]:
    """``infos`` (each with its ``figures``, by id) as ``sessions`` and F2 list them: most
    recently active first by their own times (:func:`session_times`), so an imported history
    reads in the order its sessions ran, not the order they were imported; a recording that
    says no time last; the newer session first where two ran at the same moment."""

    def key(info: SessionInfo) -> tuple[bool, datetime, int]:
        fig = figures[info.session.id or 0]
        _, last = session_times(fig, info.session, info.started_at, info.last_at)
        return last is not None, last or datetime.min.replace(tzinfo=UTC), info.session.id or 0

    return sorted(infos, key=key, reverse=True)


def context_of(usage: Usage) -> int:
    """The agent's context after a call, as the call reported it: everything it sent (input,
    cache read, cache write) and the answer, which the next request carries."""
    return usage.input_side + usage.output_tokens


def _measured(usage: Usage) -> bool:
    """A real measurement: a record of all zeros (a provider fault) is not one."""
    return usage.input_side + usage.output_tokens > 0


def figures_from_calls(
    calls: Sequence[Call],
    rules: WindowRules,
    spend: Spend,
    cost_note: str,
    *,
    agent: str,
    model: str,
    history_tokens: int,
    compactions: int,
) -> SessionFigures:
    """The figures of a session whose calls are ``calls`` (in order), run by ``agent`` under
    ``rules``; ``spend`` is what its billed calls cost (:mod:`engine.figures.spend`, the sums
    the report card prices the same way)."""
    tally = CallTally()
    for call in calls:
        tally.add(call)
    return tally.figures(
        rules,
        spend,
        cost_note,
        agent=agent,
        model=model,
        history_tokens=history_tokens,
        compactions=compactions,
    )


@dataclass
class CallTally:
    """What :func:`figures_from_calls` reads of a session's calls, summed as they are added
    in order: the last measured call, the models billed calls ran on, the tokens billed. One
    computation whether the calls are all read at once (:func:`figures_from_calls`) or added
    as they come (``watch``: :mod:`engine.recordings.followed_figures`)."""

    last: Call | None = None
    """The last call that measured something (a record of all zeros is not one)."""
    models: dict[str, None] = field(default_factory=dict)
    """The models of the measured billed calls, in order of first use."""
    billed: int = 0
    """Measured calls that were billed."""
    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0

    def add(self, call: Call) -> None:
        if not _measured(call.usage):
            return
        self.last = call
        if not call.billed:
            return
        self.billed += 1
        if call.model:
            self.models[call.model] = None
        usage = call.usage
        self.input += usage.input_tokens
        self.cache_read += usage.cache_read_input_tokens
        self.cache_write += usage.cache_creation_input_tokens
        self.output += usage.output_tokens

    def copy(self) -> CallTally:
        return replace(self, models=dict(self.models))

    def figures(
        self,
        rules: WindowRules,
        spend: Spend,
        cost_note: str,
        *,
        agent: str,
        model: str,
        history_tokens: int,
        compactions: int,
    ) -> SessionFigures:
        """The figures of the calls added so far (:func:`figures_from_calls`)."""
        last = self.last
        cost = spend.total_cost if spend.requests else None
        context = None if last is None else call_context(last.usage, last.input_estimate)
        estimated = last is not None and context != context_of(last.usage)
        return SessionFigures(
            agent=agent,
            model=(last.model if last is not None and last.model else model),
            models=tuple(self.models),
            window=rules.window,
            window_source=rules.window_source,
            auto_compact_at=rules.auto_compact_at,
            trigger_source=rules.trigger_source,
            context_tokens=context,
            history_tokens=history_tokens,
            compactions=compactions,
            requests=spend.requests,
            tokens=Tokens(
                input=self.input,
                cache_read=self.cache_read,
                cache_write=self.cache_write,
                output=self.output,
            ),
            cost=cost,
            cost_note=cost_note if self.billed else "no billed calls",
            unpriced_requests=spend.unpriced_requests,
            **({"context_source": ESTIMATED_CONTEXT} if estimated else {}),
            times_recorded=rules.times_recorded,
        )


def call_input(usage: Usage, input_estimate: int | None = None) -> int:
    """What one call sent, as the API counted it (input, cache read, cache write); where the
    agent records no input (Copilot CLI records only each response's output), ctxscope's own
    count of what it sent (``input_estimate``)."""
    if usage.input_side == 0 and input_estimate is not None:
        return input_estimate
    return usage.input_side


def call_context(usage: Usage, input_estimate: int | None = None) -> int:
    """The context of one call: what it sent (:func:`call_input`) and what it answered."""
    return call_input(usage, input_estimate) + usage.output_tokens


ESTIMATED_CONTEXT = (
    "ctxscope's estimate of the last API call's input (the agent records none) + its "
    "recorded output"
)
