"""GaugeState: every figure the token gauge shows, computed away from the widgets.

The gauge is fed from three places: the per-layer breakdown of a request (``UsageUpdated``
while a round runs, ``Agent.preview()`` when idle), the stored usage records (the sparkline and
the calibration) and the active strategy's decision (``Agent.plan(input)``: what it measures,
whether it would compact before the next request, and why not). Whether "→ compacts first"
shows is that decision, never a rule re-computed here; the seed C7 estimate is shown as a
figure only. This module keeps the maths testable without Textual.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from engine.compaction.policy import Plan
from engine.context.builder import LAYERS
from engine.messages.tokens import BudgetCheck
from engine.models import Compaction, History, Message, ToolCall, Usage, UsageRecord
from engine.recordings.own_agent import OwnAgentView
from engine.terminal_text import cut

Severity = Literal["ok", "near", "over"]

NEAR_RATIO = 0.75
"""From this share of the threshold on, the gauge turns yellow; at the threshold, red."""

LAYER_COLOURS: dict[str, str] = {
    "L1 system": "#5f87d7",
    "L1 tools": "#5fafd7",
    "L2 CODE_LAW": "#af87d7",
    "L3 summaries": "#d787af",
    "L3 history": "#d7af5f",
    "current input": "#87d787",
    "todo recap": "#5fd7af",
    "scratchpad": "#d75f5f",
}
"""One colour per layer of :data:`engine.context.builder.LAYERS`, shared by the bar and its
legend."""

LAYER_LABELS: dict[str, str] = {
    "L1 system": "system prompt",
    "L1 tools": "tool definitions",
    "L2 CODE_LAW": "project rules",
    "L3 summaries": "summaries",
    "L3 history": "history",
    "current input": "your input",
    "todo recap": "todo recap",
    "scratchpad": "this round's steps",
}
"""The layers in plain words on the main screen (the L1–L3 names stay in the inspector)."""

SEVERITY_COLOURS: dict[Severity, str] = {"ok": "green", "near": "yellow", "over": "red"}


def own_layers(own: OwnAgentView, summaries: int) -> dict[str, int]:
    """A recorded session's context split as far as the recording tells: its agent's own
    prompt and tools (the hidden prefix; its tools apart when the recording lists them), the
    summaries, and the rest of the conversation, up to its context as its last call reported
    it."""
    total = own.context_tokens or 0
    layers = dict.fromkeys(LAYERS, 0)
    system, tools = own.prefix_parts  # the tools apart where the recording lists them
    layers["L1 tools"] = min(tools, total)
    layers["L1 system"] = min(system, total - layers["L1 tools"])
    fixed = layers["L1 system"] + layers["L1 tools"]
    layers["L3 summaries"] = min(summaries, total - fixed)
    layers["L3 history"] = total - fixed - layers["L3 summaries"]
    return layers


def severity(total: int, threshold: int) -> Severity:
    """``ok`` below 75 % of the threshold, ``near`` up to it, ``over`` at or beyond it."""
    if threshold <= 0 or total >= threshold:
        return "over"
    return "near" if total >= NEAR_RATIO * threshold else "ok"


@dataclass(frozen=True)
class Heavy:
    """One heavy item of the history: what it is, its tokens, and where it is."""

    label: str
    tokens: int
    key: str
    """``m<message id>`` or ``s<summary id>`` (for the jump to it)."""


def heaviest_items(history: History, count: int = 3) -> tuple[Heavy, ...]:
    """The ``count`` biggest summaries and messages of ``history``, heaviest first."""
    calls: dict[str, ToolCall] = {
        c.id: c for m in history.messages if m.role == "assistant" for c in m.tool_calls
    }
    items: list[Heavy] = []
    for summary in history.summaries:
        span = f"r{summary.first_round}" + (
            f"–{summary.last_round}" if summary.last_round != summary.first_round else ""
        )
        items.append(Heavy(f"summary {span}", summary.tokens or 0, f"s{summary.id}"))
    for msg in history.messages:
        items.append(Heavy(_label(msg, calls), msg.tokens or 0, f"m{msg.id}"))
    items.sort(key=lambda h: -h.tokens)
    return tuple(items[:count])


def _label(msg: Message, calls: dict[str, ToolCall]) -> str:
    where = f" · r{msg.meta.round}" if msg.meta.round is not None else ""
    if msg.role == "tool":
        call = calls.get(msg.meta.tool_use_id or "")
        arg = ""
        if call is not None:
            for name in ("file_path", "path", "pattern", "command"):
                value = call.input.get(name)
                if isinstance(value, str) and value:
                    arg = cut(value, 32)  # a recorded file name: escaped, then cut
                    break
        return f"{msg.meta.tool_name or 'tool'} {arg}".strip() + where
    if msg.role == "user":
        return "user input" + where
    return ("answer" if msg.meta.final else "assistant step") + where


@dataclass(frozen=True)
class Decision:
    """The active strategy's decision for one input (``Agent.plan``), as plain data."""

    strategy: str
    measured: str
    """The measure in words: ``last API usage + input estimate 17,020 >= 16,000``."""
    fires: bool
    """The strategy's measure is over its threshold."""
    compacts: bool
    """The agent will compact before sending this input (the measure fires and a cut is
    allowed)."""
    reason: str = ""
    """Why it will not compact although the measure fires."""
    typed_chars: int = 0
    """Length of the input the decision was made for."""
    what: str = ""
    """What the strategy measures (``messages in history``, ``last API usage + ...``)."""
    value: int = 0
    threshold: float = 0

    @property
    def to_go(self) -> int:
        """How far the measure is below its threshold (in the measure's unit)."""
        return max(0, int(self.threshold) - self.value)

    @classmethod
    def of(cls, plan: Plan, typed_chars: int = 0) -> Decision:
        fires = plan.measure.fires
        return cls(
            strategy=plan.strategy,
            measured=plan.measure.describe(),
            fires=fires,
            compacts=plan.compacts,
            reason=plan.reason if fires and not plan.compacts else "",
            typed_chars=typed_chars,
            what=plan.measure.what,
            value=plan.measure.value,
            threshold=plan.measure.threshold,
        )

    @property
    def warning(self) -> str | None:
        """The gauge's warning when the measure fires and the strategy will not compact."""
        if not self.fires or self.compacts:
            return None
        return f"{self.measured}, but {self.strategy} will not compact: {self.reason}"


@dataclass(frozen=True)
class GaugeState:
    """A snapshot of the gauge's figures."""

    context_window: int
    threshold: int
    chars_per_token: int = 3
    min_messages: int = 3
    layers: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LAYERS, 0))
    layers_source: str = "next request"
    """``next request`` (a preview) or ``request sent, round N step M``."""
    last_usage: Usage | None = None
    usage_source: str = "api"
    """Who counted ``last_usage``: ``api`` (the API's answer), ``local`` (ctxscope's own count:
    the offline provider's usage) or ``import`` (recorded by the agent an imported session
    comes from)."""
    local_estimate: int | None = None
    """Our count of the request that ``last_usage`` answered (for the calibration)."""
    budget: BudgetCheck | None = None
    typed_chars: int = 0
    """Characters in the input box now: the estimate grows as the user types."""
    steps: tuple[int, ...] = ()
    """Input-side tokens of every API call of the session, in order (the sparkline)."""
    compactions_at: tuple[int, ...] = ()
    """For each successful compaction, how many steps preceded it."""
    warning: str | None = None
    """The strategy's warning: its measure fires but it will not compact (and why)."""
    decision: Decision | None = None
    """The strategy's decision for the input as typed (refreshed in a worker as one types)."""
    offline: bool = False
    """The offline provider now (its usage, stored as ``local``, is ctxscope's own count)."""
    heaviest: tuple[Heavy, ...] = ()
    thinking: int = 0
    """Tokens of thinking blocks kept in history (imported sessions): never re-sent, so not
    part of the bar or the total; shown beside the layers."""
    own: OwnAgentView | None = None
    """A recorded session's figures through its own agent: then the bar is its context as its
    last call reported it, the marker its own auto-compact point (``threshold``), and
    ctxscope's strategy a labelled what-if (``what_if_threshold``)."""
    what_if_threshold: int = 0
    """For a recorded session: where ctxscope's own strategy would compact."""
    """The biggest items of L3, heaviest first (each one key away in the history pane)."""

    @property
    def free(self) -> int:
        """The window's room left after this request."""
        return max(0, self.context_window - self.total)

    @property
    def buffer(self) -> int:
        """The part of the window above the compaction threshold (Claude Code's "autocompact
        buffer"): compaction is meant to fire before a request reaches into it."""
        return max(0, self.context_window - self.threshold)

    @property
    def total(self) -> int:
        return sum(self.layers.values())

    @property
    def calibration(self) -> float | None:
        """API input side ÷ local estimate of the same request (None without both)."""
        if self.last_usage is None or not self.local_estimate:
            return None
        return self.last_usage.input_side / self.local_estimate

    @property
    def next_estimate(self) -> int | None:
        """Seed C7: ``last_usage + len(input) // 3`` with what is typed now."""
        if self.budget is None:
            return None
        return self.budget.last_usage + self.typed_chars // self.chars_per_token

    @property
    def fires(self) -> bool:
        """Whether sending the typed input compacts first: the strategy's decision."""
        return self.decision is not None and self.decision.compacts

    @property
    def severity(self) -> Severity:
        return severity(max(self.total, self.next_estimate or 0), self.threshold)

    def typing(self, chars: int) -> GaugeState:
        return replace(self, typed_chars=chars)


def steps_and_marks(
    usages: list[UsageRecord], compactions: list[Compaction]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The sparkline series and where compactions fall between its steps."""
    steps = tuple(u.usage.input_side for u in usages)
    marks: list[int] = []
    done = [c for c in compactions if c.outcome in ("success", "fallback")]
    for comp in done:
        before = sum(1 for u in usages if u.created_at <= comp.created_at)
        marks.append(before)
    return steps, tuple(marks)
