"""The compaction policy model: one set of parts in which every seed's design can be written.

A strategy is a :class:`CompactionPolicy` with explicit parts (see docs/strategies.md, "One
policy model"):

- **when it checks** (:attr:`CompactionPolicy.checks`): before a round, after a round, before
  every model request;
- **what it measures** (:meth:`CompactionPolicy.measure`): last API usage (with or without the
  seed-000 input estimate), a local count of the request, a message count, with the seed's own
  comparison (``>`` or ``>=``);
- **what it cuts** (:meth:`CompactionPolicy.select`): an ordered list of history *messages*,
  always whole steps (an assistant message and its tool results stay together), never a pinned
  message, never the round in progress' own user input;
- **the summary** (:attr:`CompactionPolicy.summary`, an
:class:`engine.compaction.summary.SummarySpec`),
  its **placement** and the **lifecycle** of earlier summaries (append, replace, re-compact);
- **projection** (:meth:`CompactionPolicy.project`): how older history is sent without being
  archived (seed 002's dropped tool results, observation masking).

A policy decides; :class:`engine.compaction.executor.CompactionExecutor` carries the compaction
out (summary, archive, one transaction) and :class:`engine.session.Agent` asks at the policy's
check points.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import ClassVar, Literal

from engine.compaction.summary import SummarySpec
from engine.messages.request import ProviderRequest
from engine.messages.scratchpad import ScratchStep
from engine.models import History, Message, Placement, Summary
from engine.settings.config import Settings
from tools.base import Tool
from tools.injection import Injections


class CheckPoint(StrEnum):
    BEFORE_ROUND = "before a round"
    AFTER_ROUND = "after a round"
    BEFORE_REQUEST = "before every request"


class ResultForm(StrEnum):
    """The form in which history sends a tool result of an earlier step."""

    COMPRESSED = "compressed"
    """Seed 000 A3: the per-tool compressed form history stores (Grep's first lines, Bash's
    summary)."""
    AS_RETURNED = "as returned"
    """Seeds 001-003: the result as the tool returned it (the observation the model saw);
    the seed's own cut, if any, is its projection's."""


class Lifecycle(StrEnum):
    """What a new summary does to the active summaries before it."""

    APPEND = "append"
    """Seed 000: earlier summaries stay; summaries are never re-compacted."""
    REPLACE = "replace"
    """Seed 001: the new hint replaces the earlier one."""
    RECOMPACT = "re-compact"
    """Seeds 002-004: the earlier summary is part of what the new one summarises."""


@dataclass(frozen=True)
class Measure:
    """What a policy measured at a check point, against what, and whether it fires."""

    what: str
    """In words: ``last API usage + input estimate``, ``request tokens (local count)``, ..."""
    value: int
    threshold: float
    comparison: Literal[">", ">="]
    source: str = "local"
    """``api`` when the value came from the API's usage, ``local`` for ctxscope's count."""
    extra_condition: bool = True
    """A further condition of the seed's rule (seed 000: at least ``min_messages`` messages)."""

    @property
    def fires(self) -> bool:
        over = (
            self.value > self.threshold if self.comparison == ">" else self.value >= self.threshold
        )
        return over and self.extra_condition

    def describe(self) -> str:
        """``last API usage + input estimate 77,334 < 160,000: does not fire``: the comparison
        as it came out, never the rule's own sign for a trigger that did not fire."""
        over = (
            self.value > self.threshold if self.comparison == ">" else self.value >= self.threshold
        )
        sign = self.comparison if over else {">": "<=", ">=": "<"}[self.comparison]
        text = f"{self.what} {self.value:,} {sign} {self.threshold:,.0f}"
        if self.fires:
            return text + ": fires"
        if over:
            return text + ", but the rule's other condition does not hold: does not fire"
        return text + ": does not fire"


@dataclass
class PolicyView:
    """What a policy looks at: history as stored, the round in progress and the request's size."""

    history: History
    in_progress: int | None = None
    """The round being worked on (its user input is never archived), or None between rounds."""
    request_tokens: int = 0
    """Local count of the request as it would be sent now (projection applied)."""
    fixed_tokens: int = 0
    """What every request carries besides L3: L1, L2, the todo recap."""
    last_usage: int | None = None
    """Input side of the last API call, None when absent or stale (after a compaction)."""
    last_usage_source: str = "api"
    """Who counted ``last_usage``: ``api``, ``import`` (an API's figures) or ``local`` (the
    offline provider's own count)."""
    user_input: str = ""
    """A new input about to open a round (checks before a round)."""
    sent_tokens: Callable[[Message], int] | None = None
    """What a history message costs as sent now (the round in progress sends full observations);
    defaults to its stored count."""
    pinned: frozenset[int] = frozenset()
    """Message ids no policy may archive."""
    excess: int = 0
    """Tokens the request is over the window by, when the engine's last resort asks for an
    emergency cut inside a round (a strategy may then cut just enough); 0 otherwise."""
    count_request: Callable[[History], int] | None = None
    """The local count of the request another history would send now (the count
    ``request_tokens`` is): a compaction's figures after, in the trigger's own count; None
    when there is no request to build (a store without a session)."""

    head_messages: int = 1
    """Seed 004's head, "消息列表开头连续的 ``role: "system"`` 消息": the system messages that
    lead every request and never leave it (L1, and L2 when there is a CODE_LAW.md)."""

    def tokens_of(self, msg: Message) -> int:
        if self.sent_tokens is not None:
            return self.sent_tokens(msg)
        return msg.tokens or 0

    def protected(self) -> set[int]:
        """Ids that never leave history: pins and the round in progress' own user input."""
        ids = set(self.pinned)
        if self.in_progress is not None:
            # The round in progress is the newest: look back only as far as its start.
            for msg in reversed(self.history.messages):
                if msg.meta.round != self.in_progress:
                    break
                if msg.role == "user" and msg.id:
                    ids.add(msg.id)
        return ids


class Plan:
    """One decision of a policy: what it measured, whether it fires, and what it would cut.

    The cut is worked out on first use: a check point that does not fire costs only the
    measure, so checking before every request stays cheap on long sessions.
    """

    def __init__(
        self,
        strategy: str,
        measure: Measure,
        select: Callable[[], list[Message]],
        judge: Callable[[list[Message]], str] | None = None,
    ) -> None:
        self.strategy = strategy
        self.measure = measure
        self._select = select
        self._judge = judge

    @cached_property
    def cut(self) -> list[Message]:
        """The messages a compaction would archive now, in order (whole steps)."""
        return self._select()

    @cached_property
    def reason(self) -> str:
        """Why it does not compact although the measure fires (nothing may go, pins, ...)."""
        if self._judge is not None:
            return self._judge(self.cut)
        return "" if self.cut else "nothing outside what this strategy always keeps"

    @property
    def compacts(self) -> bool:
        """Whether the agent compacts at this check point."""
        return self.measure.fires and bool(self.cut) and not self.reason

    @property
    def cut_rounds(self) -> list[int]:
        """The rounds the cut touches, in order."""
        seen: dict[int, None] = {}
        for msg in self.cut:
            if msg.meta.round is not None:
                seen.setdefault(msg.meta.round)
        return list(seen)


def last_units_start(messages: list[Message], count: int) -> int:
    """Index where the newest whole steps covering at least ``count`` messages begin (walks
    back from the end only as far as needed)."""
    i = len(messages)
    while i > 0 and count > 0:
        j = i - 1
        while j > 0 and messages[j].role == "tool":
            j -= 1
        count -= i - j
        i = j
    return i


@dataclass
class Prefix:
    """Work already done on the first ``length`` messages of a history, reusable while those
    messages stay the same (history only grows between compactions, and ids only increase, so
    equal first and last ids at equal positions mean an equal prefix)."""

    first_id: int | None
    length: int
    last_id: int | None

    @classmethod
    def of(cls, messages: list[Message], length: int) -> Prefix:
        return cls(
            messages[0].id if length else None, length, messages[length - 1].id if length else None
        )

    def holds_for(self, messages: list[Message]) -> bool:
        n = self.length
        if n == 0:
            return True
        return (
            len(messages) >= n
            and messages[0].id == self.first_id
            and messages[n - 1].id == self.last_id
        )


def step_units(messages: list[Message]) -> Iterator[list[Message]]:
    """History as the units a cut may not split: a user message alone, or an assistant message
    with the tool messages that answer it."""
    unit: list[Message] = []
    for msg in messages:
        if msg.role == "tool" and unit:
            unit.append(msg)
            continue
        if unit:
            yield unit
        unit = [msg]
    if unit:
        yield unit


def cut_before(messages: list[Message], keep_from: int, protected: set[int]) -> list[Message]:
    """The messages before index ``keep_from``, moved back to a step boundary, without the
    ``protected`` ones (a protected message keeps its whole step)."""
    out: list[Message] = []
    pos = 0
    for unit in step_units(messages):
        if pos + len(unit) > keep_from:
            break
        pos += len(unit)
        if any(m.id in protected for m in unit):
            continue
        out.extend(unit)
    return out


def before_last_rounds(view: PolicyView, keep: int) -> list[Message]:
    """A compaction asked for by hand: every closed round but the last ``keep``, as whole
    steps, without the protected messages (pins keep their step)."""
    closed = [r for r in round_indices(view.history) if r != view.in_progress]
    chosen = set(closed[: max(0, len(closed) - keep)])
    messages = view.history.messages
    keep_from = next(
        (i for i, m in enumerate(messages) if m.meta.round not in chosen), len(messages)
    )
    return cut_before(messages, keep_from, view.protected())


def keep_zone_tokens(history: History, keep_rounds: int) -> int:
    """Tokens of the active summaries plus the last ``keep_rounds`` rounds (cached counts)."""
    groups = history.rounds()[-keep_rounds:]
    return sum(s.tokens or 0 for s in history.summaries) + sum(
        m.tokens or 0 for g in groups for m in g
    )


def round_indices(history: History) -> list[int]:
    """The round indices present in history, in order (messages carry ``meta.round``)."""
    seen: dict[int, None] = {}
    for msg in history.messages:
        if msg.meta.round is not None:
            seen.setdefault(msg.meta.round)
    return list(seen)


class CompactionPolicy:
    """Base of every strategy: the parts, with the defaults most seeds share."""

    name: ClassVar[str]
    """The name users select (``--strategy``, ``CTXSCOPE_STRATEGY``)."""
    seed: ClassVar[str]
    """The seed file the strategy implements (or the literature it comes from)."""
    checks: ClassVar[frozenset[CheckPoint]]
    placement: ClassVar[Placement | None]
    lifecycle: ClassVar[Lifecycle]
    summary: SummarySpec | None
    """None for a strategy without summaries (masking)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    # -- the decision -----------------------------------------------------------------------
    def measure(self, view: PolicyView) -> Measure:
        raise NotImplementedError

    def execution_log_window(self) -> int | None:
        """Entries of the session's execution log kept (seed 003: an entry per run in the
        session's ``agent-context.jsonl``); None: this strategy keeps no log."""
        return None

    def injections(self) -> Injections | None:
        """Where this strategy's tools (:attr:`extra_tools`) put the texts they inject into a
        run, with its limits (seed 003's loading tools); None: no tool of it injects."""
        return None

    def select(self, view: PolicyView, *, emergency: bool = False) -> list[Message]:
        """The messages a compaction archives now (whole steps, oldest first)."""
        raise NotImplementedError

    uses_api_usage: ClassVar[bool] = False
    """Whether the measure reads the last API usage (the agent looks it up only then)."""
    extra_tools: ClassVar[tuple[type[Tool], ...]] = ()
    """Tools the agent offers, after its own, while this strategy is on (seed 003: the two
    loading tools, ``chat_load_history`` and ``agent_load_context``)."""
    writes_raw_middle: ClassVar[bool] = False
    """Seed 004 F-006: the archived messages also go to a JSON file beside the database."""
    live_summary_prompt: ClassVar[str | None] = None
    """Seed 002: the summary is asked of the live conversation, this text as the (mock) user
    turn after it, instead of a separate summary call; None: a separate call."""
    tool_results: ClassVar[ResultForm] = ResultForm.COMPRESSED
    """How history sends earlier steps' tool results: seed 000's compressed form, or as the
    tools returned them (seeds 001-003 keep no compressed copy)."""
    keeps_recent_rounds: ClassVar[bool] = False
    """Seed 000: the last ``keep_rounds`` rounds are never archived, so when they alone reach
    the threshold no compaction can help, and the warning says that instead."""

    def plan(self, view: PolicyView, *, emergency: bool = False) -> Plan:
        """Measure, and say (on demand) what a compaction would cut."""
        return Plan(self.name, self.measure(view), lambda: self.select(view, emergency=emergency))

    def emergency_cut(self, view: PolicyView) -> list[Message]:
        """After "prompt is too long": everything but the last step and the protected ones."""
        messages = view.history.messages
        units = list(step_units(messages))
        keep_from = len(messages) - len(units[-1]) if units else 0
        return cut_before(messages, keep_from, view.protected())

    def live_summary_request(self, request: ProviderRequest) -> ProviderRequest:
        """Seed 002: the request that asks the live conversation for the summary, from the
        ``request`` the next step would send (called only when :attr:`live_summary_prompt`
        is set)."""
        raise NotImplementedError

    stores_only_shrinking: ClassVar[bool] = False
    """An automatic or emergency compaction that would not make the request smaller is said
    and not stored (seed 004); False: stored as it comes."""

    def refuses_summary(
        self, view: PolicyView, cut: list[Message], summary: Summary, retired: list[int]
    ) -> str:
        """Why an automatic compaction archiving ``cut`` for ``summary`` (retiring the
        ``retired`` summaries) should be skipped, nothing stored; '' to store it."""
        return ""

    def window_notice(self, window: int) -> str:
        """Why this strategy's own numbers cannot work in a ``window``-token context window
        (said once to the user); '' when they can."""
        return ""

    # -- what is sent -----------------------------------------------------------------------
    def project(
        self, messages: list[Message], scratchpad: list[ScratchStep], in_progress: int | None
    ) -> tuple[list[Message], list[ScratchStep]]:
        """History and scratchpad as this strategy sends them (unchanged by default)."""
        return messages, scratchpad

    def supersedes(self, history: History) -> list[int]:
        """Ids of the active summaries a new summary retires (its lifecycle)."""
        if self.lifecycle == Lifecycle.APPEND:
            return []
        return [s.id for s in history.summaries if s.id is not None]

    def recompacted(self, history: History) -> list[Message]:
        """The earlier summaries as messages, when the new summary re-compacts them."""
        if self.lifecycle != Lifecycle.RECOMPACT:
            return []
        return [
            Message(role="assistant", content=s.content, created_at=s.created_at)
            for s in history.summaries
        ]

    def describe(self) -> dict[str, str]:
        """The policy's parts in words (README table, ``show --json``, the TUI)."""
        return {
            "name": self.name,
            "seed": self.seed,
            "checks": ", ".join(sorted(c.value for c in self.checks)),
            "summary": self.summary.form if self.summary else "none",
            "placement": self.placement.value if self.placement else "none",
            "lifecycle": self.lifecycle.value,
            "tool_results": self.tool_results.value,
        }
