"""Counterfactual replay: a stored session run again under another strategy.

The recorded model outputs and tool results are held fixed; at each recorded model call the
*same* agent loop the live sessions use (:class:`engine.session.Agent`, its strategy, its context
builder) builds the request that strategy would have sent — projection, triggers and
compactions included — so a replay under the session's own strategy reproduces its requests.

How: a scratch database (a temporary file) gets a new session; the agent runs each recorded
round's input with a provider that answers with the recorded assistant messages, in order, and a
tool registry that answers each call with its recorded result (the full observation). The
original database is only read.

What comes back per step: the request's local token count, its prompt-cache use (read, write,
uncached, :mod:`engine.replay.cache_model`), its output tokens, the compactions that fired before
it, and — at compactions, at the end and every :data:`RECALL_EVERY` steps — how much of the
session's artifact ledger the request still holds (:mod:`engine.replay.recall`). Summaries are
written by the strategies' extractive summarisers (a replay calls no model).

A recorded session (an imported one) is planned as its own agent would send it: ctxscope's
request carries ctxscope's system prompt and tools, the recorded agent's carried its own, much
larger hidden prefix (:mod:`engine.recordings.hidden`). So every strategy's budget — its
trigger, its view's counts, the engine's fit to the window — counts each request with that
difference added (:attr:`engine.session.core.AgentCore.extra_prefix_tokens`), and a strategy
triggers at the same real context size as the recorded agent's requests reached. A step's
``tokens`` stay ctxscope's own count (what the cache model and cost price); ``original`` is the
request as the recorded agent would send it. A window the recorded prefix does not fit in
(``--window 8000`` on a Claude Code session of a 21 000-token prefix) plans ctxscope's own
request, as before.
"""

from __future__ import annotations

import tempfile
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.compaction.ledger import KINDS, extract_ledger
from engine.events import CompactionFailed, CompactionFinished, Event
from engine.figures.prices import Pricing, price_for
from engine.llm.base import ProviderRequest
from engine.messages.tokens import count_blocks
from engine.models import Compaction, Message, Usage
from engine.recordings.hidden import hidden_prefix
from engine.replay.cache_model import BlockCounter, CacheUse, PromptCache
from engine.replay.recall import LedgerRecall
from engine.replay.recorded import RecordedProvider, RecordedTools, recorded_rounds
from engine.settings.config import Settings
from engine.store import Store

if TYPE_CHECKING:
    from engine.session import Agent

RECALL_EVERY = 10
"""Ledger recall is measured at every compaction, at the last step and every this many steps
(it scans the whole request for every item: measuring it at each step would dominate)."""


def call_cost(price: Pricing, use: CacheUse, output: int, lifetime: str = "5m") -> float | None:
    """Dollars for one call at list price: uncached input, cache writes (at ``lifetime``'s
    price) and reads, output; None for a model without a price."""
    usage = Usage(
        input_tokens=use.uncached,
        cache_read_input_tokens=use.read,
        cache_creation_input_tokens=use.write,
        cache_creation_1h_input_tokens=use.write if lifetime == "1h" else 0,
        output_tokens=output,
    )
    return price.usage_cost(usage)


@dataclass
class StepFigures:
    """One recorded model call as the strategy would have sent it."""

    step: int
    round: int
    tokens: int
    cache: CacheUse
    output: int
    cost: float | None
    """Dollars at list price; None for a model without a price (:mod:`engine.figures.prices`)."""
    compactions: int = 0
    """Compactions that fired just before this request."""
    recall: dict[str, float | None] | None = None
    original: int | None = None
    """An imported session: the request as the original agent would have sent it — its hidden
    prefix (:mod:`engine.recordings.hidden`) plus this request's conversation part."""


@dataclass
class CompactionFigures:
    step: int
    trigger: str
    tokens_before: int
    tokens_after: int
    outcome: str


@dataclass
class Stop:
    """A recorded round the replay could not play to its end."""

    step: int
    """The last step played (the request that was sent last)."""
    round: int
    left: int
    """Recorded model calls of the round that were not replayed."""
    reason: str

    def describe(self, strategy: str, total: int) -> str:
        return (
            f"{strategy} stopped at step {self.step:,} of {total:,} (round {self.round}): "
            f"{self.reason}; {self.left:,} recorded calls of the round not replayed"
        )


@dataclass
class ReplayResult:
    """A strategy's replay of one session."""

    strategy: str
    steps: list[StepFigures] = field(default_factory=list)
    compactions: list[CompactionFigures] = field(default_factory=list)
    threshold: float | None = None
    """The strategy's compaction threshold in tokens at the end (None when it measures
    something else: messages, observations)."""
    window: int = 0
    """The context window the replay ran in (tokens)."""
    price_note: str = ""
    """Where the steps' prices come from, or why they have none."""
    total_steps: int = 0
    """The recorded model calls the replay meant to play."""
    stops: list[Stop] = field(default_factory=list)
    agent_prefix: int | None = None
    """A recorded session replayed with its agent's prefix: the tokens every request was taken
    to carry beyond ctxscope's own (its hidden prefix less ctxscope's L1 + L2), which the
    strategy's budget counted; None when the replay planned with ctxscope's request alone (a
    session of ctxscope's own, or a window too small for the recorded agent's prefix)."""
    """Rounds that ended before their recorded calls did (a request that could not be made
    to fit, a recorded answer mid-round), each with where and why; empty when every
    recorded step was replayed."""

    @property
    def peak(self) -> int:
        return max((s.tokens for s in self.steps), default=0)

    @property
    def total_original(self) -> int | None:
        """Total input in the original agent's terms (imported sessions), else None."""
        if not self.steps or self.steps[0].original is None:
            return None
        return sum(s.original or 0 for s in self.steps)

    @property
    def total_input(self) -> int:
        return sum(s.tokens for s in self.steps)

    @property
    def cost(self) -> float | None:
        """Dollars at list price; None when the model has no price."""
        if any(s.cost is None for s in self.steps):
            return None
        return sum(s.cost or 0.0 for s in self.steps)

    @property
    def complete(self) -> bool:
        """Every recorded step played (a row that stopped early compares only per step)."""
        return len(self.steps) >= self.total_steps

    def up_to(self, step: int) -> dict[str, Any]:
        """Input tokens, cache read and write, and dollars of the steps up to ``step``:
        replays compared on the steps every one of them played, never on totals of different
        lengths (issue 39: 115 of 153 steps at $2.40 against the whole recording's $11.85)."""
        played = [s for s in self.steps if s.step <= step]
        cost = None if any(s.cost is None for s in played) else sum(s.cost or 0.0 for s in played)
        return {
            "steps": step,
            "total_input": sum(s.tokens for s in played),
            "cache_read": sum(s.cache.read for s in played),
            "cache_write": sum(s.cache.write for s in played),
            "cost": None if cost is None else round(cost, 4),
        }

    def recall_last(self) -> dict[str, float | None]:
        for s in reversed(self.steps):
            if s.recall is not None:
                return s.recall
        return {}

    def recall_min(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for kind in KINDS:
            seen = [s.recall[kind] for s in self.steps if s.recall and s.recall[kind] is not None]
            out[kind] = min(v for v in seen if v is not None) if seen else None
        return out

    def row(self) -> dict[str, Any]:
        """The comparison table's row."""
        return {
            "strategy": self.strategy,
            "window": self.window,
            "steps": len(self.steps),
            "total_steps": self.total_steps,
            "complete": self.complete,
            "compactions": len([c for c in self.compactions if c.outcome != "skipped"]),
            "peak": self.peak,
            "total_input": self.total_input,
            "cache_read": sum(s.cache.read for s in self.steps),
            "cache_write": sum(s.cache.write for s in self.steps),
            "cost": None if self.cost is None else round(self.cost, 4),
            "total_input_original": self.total_original,
            "recall_last": self.recall_last(),
            "recall_min": self.recall_min(),
        } | (
            {"agent_prefix_tokens": self.agent_prefix} if self.agent_prefix is not None else {}
        ) | (
            {"stopped": [vars(s) | {"said": s.describe(self.strategy, self.total_steps)}
                         for s in self.stops]}
            if self.stops
            else {}
        )  # fmt: skip


def compared_steps(results: Sequence[ReplayResult]) -> int | None:
    """The steps every replay played, when one stopped early (its row is then compared with
    the others on these steps only, :meth:`ReplayResult.up_to`); None when all played all."""
    if all(r.complete for r in results):
        return None
    return min(len(r.steps) for r in results)


def replay(
    store: Store,
    session_id: int,
    strategy: str,
    settings: Settings,
    workspace: Path | None = None,
    price: Pricing | None = None,
    on_step: Callable[[int, int], None] | None = None,
    at_step: Callable[[int, Agent], bool] | None = None,
) -> ReplayResult:
    """Replay ``session_id`` of ``store`` (read only) under ``strategy``, every recorded call
    (the live agent's ``max_steps`` guard is raised to the longest recorded round), in
    ``settings.context_window``.

    ``at_step(step, agent)`` is called as each request is sent, with the agent whose
    :meth:`~engine.session.Agent.preview` is that request (the workbench opens it in the context
    inspector); returning True stops the replay there.
    """
    run = _Replay(store, session_id, strategy, settings, price, on_step, at_step)
    with tempfile.TemporaryDirectory(prefix="ctxscope-replay-") as tmp:
        # A scratch file, thrown away at the end: no need to flush each step to the disk.
        scratch = Store.open(Path(tmp) / "replay.db", durable=False)
        try:
            agent = run.start(scratch, workspace or Path(run.workspace or "."), Path(tmp))
            # The replay is the scratch session's only writer from start to end: one lease
            # (rounds would each take it, and reload what no other process wrote).
            with agent.writing("replay"):
                run.play_rounds(agent)
            measure = agent.plan().measure
            if measure.source != "count":
                run.result.threshold = measure.threshold
        finally:
            scratch.close()
    return run.result


class _Replay:
    """One replay's recorded material, its running figures and its phases: :meth:`start` the
    scratch agent, :meth:`play_rounds` (each request measured by :meth:`on_request`)."""

    def __init__(
        self,
        store: Store,
        session_id: int,
        strategy: str,
        settings: Settings,
        price: Pricing | None,
        on_step: Callable[[int, int], None] | None,
        at_step: Callable[[int, Agent], bool] | None,
    ) -> None:
        messages, observations = store.all_messages(session_id), store.observations(session_id)
        self.rounds = recorded_rounds(messages, observations)
        self.strategy = strategy
        self.settings = settings
        original = store.get_session(session_id)
        self.workspace = original.workspace
        """The recorded session's workspace: the scratch agent's, unless the caller names one."""
        self.price = price or price_for(settings, original.model or settings.model)
        self.on_step = on_step
        self.at_step = at_step
        self.result = ReplayResult(
            strategy, window=settings.context_window, price_note=self.price.note
        )
        self.cache = PromptCache(self.price.min_cacheable)
        self.counter = BlockCounter()
        self.recall = LedgerRecall(extract_ledger(messages, observations).items)
        self.total_steps = sum(max(1, len(r.assistants)) for r in self.rounds)
        self.result.total_steps = self.total_steps
        self.hidden = hidden_prefix(store, session_id)
        self.pending: list[Compaction] = []
        """Compactions reported since the last request."""
        self.step = 0
        self.round = 0
        self.upto = 0
        """The last recorded message of the round being played."""
        self.fixed = 0
        """L1 + L2: what every request carries around the conversation."""
        self.provider = RecordedProvider(self.on_request)
        self.tools = RecordedTools()
        self.agent: Agent | None = None

    def on_event(self, event: Event) -> None:
        if isinstance(event, CompactionFinished | CompactionFailed):
            self.pending.append(event.compaction)

    def start(self, scratch: Store, workspace: Path, tmp: Path) -> Agent:
        """The agent of a new scratch session under the replayed strategy."""
        from engine.session import Agent  # the agent imports strategies; keep this module light

        # The scratch session's files (seed 004's raw middles, seed 003's execution log) go
        # to the scratch folder too, whatever data_dir the user set: there they would land
        # among the user's own sessions' files, under the scratch session's id.
        # Every recorded call is replayed: the runaway guard must not cut a long round.
        longest = max((len(r.assistants) for r in self.rounds), default=0) + 1
        scratch_settings = self.settings.model_copy(
            update={
                "data_dir": tmp / "data",
                "max_steps": max(self.settings.max_steps, longest),
            }
        )
        session = scratch.create_session(str(workspace), "replay", strategy=self.strategy)
        agent = Agent(
            scratch,
            session,
            scratch_settings,
            self.provider,
            workspace,
            events=self.on_event,
            registry=self.tools,
        )
        self.agent = agent
        # L1 + L2: what every request carries around the conversation (the empty request)
        self.fixed = agent.preview().total
        hidden = self.hidden
        if hidden is not None and hidden.tokens < self.settings.context_window:
            # A recorded session: every strategy plans with the request as the recorded
            # agent's would be (its hidden prefix in place of ctxscope's own L1 + L2), so
            # it triggers at the same real context size. A prefix the window cannot hold
            # would leave no request that fits: then ctxscope's own request is planned.
            agent.extra_prefix_tokens = hidden.tokens - self.fixed
            self.result.agent_prefix = agent.extra_prefix_tokens
        agent.preprocessor.process = _as_recorded  # type: ignore[method-assign]
        return agent

    def play_rounds(self, agent: Agent) -> None:
        """Each recorded round's input, answered with its recorded outputs and results."""
        provider, result = self.provider, self.result
        for number, rnd in enumerate(self.rounds, 1):
            self.round = number
            provider.queue = deque(rnd.assistants)
            self.tools.queue = deque(
                rnd.results[c.id]
                for a in rnd.assistants
                for c in a.tool_calls
                if c.id in rnd.results
            )
            self.upto = rnd.last_id
            before = len(result.steps)
            try:
                outcome = agent.run(rnd.text)
            except _Stopped:
                break
            if provider.queue:  # the round ended before its recorded calls did
                reason = outcome.error or (
                    f"the round ended ({outcome.status.value}) at a recorded answer "
                    "without a tool call"
                )
                result.stops.append(Stop(self.step, number, len(provider.queue), reason))
            for figures, msg in zip(result.steps[before:], rnd.assistants, strict=False):
                figures.output = _output_tokens(msg)
                figures.cost = call_cost(
                    self.price, figures.cache, figures.output, self.settings.cache_lifetime
                )

    def on_request(self, request: ProviderRequest) -> int:
        """One request as the strategy sends it: its figures recorded; returns the usage the
        recorded agent's API would report (its budget's last API usage)."""
        assert self.agent is not None
        self.step += 1
        use = self.cache.use(self.counter.blocks(request), self.counter.kept)
        tokens = use.total  # the blocks' tokens: = count_request, new blocks only
        fired = self._compactions_fired()
        original = None
        if self.hidden is not None:
            original = self.hidden.tokens + tokens - self.fixed
        figures = StepFigures(
            original=original,
            step=self.step,
            round=self.round,
            tokens=tokens,
            cache=use,
            output=0,
            cost=0.0 if self.price.known else None,
            compactions=fired,
        )
        last = self.step == self.total_steps
        if fired or last or self.step % RECALL_EVERY == 0:
            # what this request can hold: every message before the output it asks for
            queue = self.provider.queue
            upcoming = queue[0].id if queue else None
            upto = upcoming - 1 if upcoming else self.upto
            figures.recall = self.recall.measure(upto, self.agent)
        self.result.steps.append(figures)
        if self.on_step is not None:
            self.on_step(self.step, self.total_steps)
        if self.at_step is not None and self.at_step(self.step, self.agent):
            raise _Stopped
        return tokens + int(self.agent.extra_prefix_tokens)

    def _compactions_fired(self) -> int:
        """Compactions since the last request, as the agent reported them (events, not a
        query of every compaction at every step), added to the result."""
        fired = len(self.pending)
        for comp in self.pending:
            self.result.compactions.append(
                CompactionFigures(
                    self.step, comp.trigger, comp.tokens_before, comp.tokens_after, comp.outcome
                )
            )
        self.pending.clear()
        return fired


def _output_tokens(msg: Message) -> int:
    """A recorded answer's output tokens: its text and tool calls, counted as blocks."""
    return count_blocks(
        [{"type": "text", "text": msg.content or " "}]
        + [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.input}
            for c in msg.tool_calls
        ]
    )


class _Stopped(Exception):
    """``at_step`` asked to stop the replay."""


def _as_recorded(text: str) -> Any:
    """The stored input already carries its @file reminder: take it as it is."""
    from engine.context.preprocess import Preprocessed

    return Preprocessed(text=text, original=text)
