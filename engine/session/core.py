"""What an agent over one session holds and sees: its parts (store, provider, history, tools,
builder), the round in progress, and the request it would send next (preview, budget, the
history as sent). The writer lease, steering, fitting and the round loop are each passed it
(:class:`~engine.session.agent.Agent` holds them all)."""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.compaction.policy import CompactionPolicy, PolicyView
from engine.compaction.strategies import get_strategy
from engine.context.builder import (
    BuiltContext,
    ContextBuilder,
    ScratchStep,
)
from engine.context.history import (
    HistoryManager,
)
from engine.context.preprocess import REMINDER_CLOSE, REMINDER_OPEN, InputPreprocessor
from engine.context.session_files import session_file
from engine.figures import call_input
from engine.messages.tokens import (
    BLOCK_OVERHEAD,
    BudgetCheck,
    check_budget,
    count_text,
    remember,
)
from engine.models import (
    History,
    Message,
    RoundStatus,
    Session,
    Summary,
    TodoItem,
    UsageRecord,
)
from engine.recordings.own_agent import planning_settings
from engine.session.workspace import NO_FOLDER
from engine.settings.config import Settings, data_folder
from engine.store import Store
from engine.validation import workspace_refusal
from tools.base import Asker, RecallHit, ToolContext
from tools.definitions import tool_definitions

if TYPE_CHECKING:
    from engine.compaction.summary import SummaryCompressor
    from engine.compaction.tool_results import ToolResultCompressor
    from engine.events import EventSink
    from engine.llm.base import Provider
    from tools.registry import ToolRegistry

INTERRUPTED_ANSWER = "(round interrupted by the user)"
CRASH_ANSWER = "(round interrupted: ctxscope stopped before it finished)"
CRASH_RESULT = "ctxscope stopped before this tool returned a result."


def _ignore_events(event: object) -> None:
    """The default :data:`~engine.events.EventSink` (as ``engine.events.ignore_events``, whose
    module a look at the request does not import)."""


def fixed_tokens(built: BuiltContext) -> int:
    """What every request carries besides L3: L1, L2 and the todo recap."""
    return built.total - built.layers["L3 summaries"] - built.layers["L3 history"]


def typed_input(stored: str) -> str:
    """A stored user input as it was typed: without the @file reminder appended to it."""
    head, sep, tail = stored.rpartition(f"\n\n{REMINDER_OPEN}")
    return head if sep and tail.rstrip().endswith(REMINDER_CLOSE) else stored


def _history(summaries: list[Summary], messages: list[Message]) -> History:
    """A :class:`History` of stored (validated) parts, as it is sent: built without pydantic's
    walk over every message, and holding ``messages`` as given (a list no one changes)."""
    return History.model_construct(summaries=list(summaries), messages=messages)


class InvalidRequest(AssertionError):
    """Debug mode (``validate_requests``): the engine built a request the API would refuse.

    An engine bug, never a provider error: it is not caught by the round's error handling."""


@dataclass
class RoundOutcome:
    round_index: int
    status: RoundStatus
    answer: str
    steps: int
    error: str | None = None


@dataclass
class Known:
    """What the agent knows of its session while it holds the writer lease (no one else writes
    the session then): each figure asked of the store once, kept until the lease is released."""

    usage: tuple[UsageRecord | None] | None = None
    """The session's last measured usage record, once asked for (:meth:`AgentCore.usage_written`
    follows this agent's own)."""
    compaction: tuple[History, datetime | None] | None = None
    """When the newest summary-writing compaction was made, for the history it was asked with
    (storing or undoing a compaction reloads history)."""


class AgentCore:
    """The state of an agent over one stored session, and how it builds its next request."""

    extra_prefix_tokens = 0
    """Tokens every request is taken to carry beyond what ctxscope builds, for the budget only
    (the strategy's trigger, its view's counts, the fit to the window): a replay of a recorded
    session sets it to the recorded agent's hidden prefix less ctxscope's own L1 + L2
    (:func:`engine.replay.runner.replay`), so a strategy plans with the request as the recorded
    agent's would be. 0 everywhere else."""

    def __init__(
        self,
        store: Store,
        session: Session,
        settings: Settings,
        provider: Provider,
        workspace: Path | None,
        events: EventSink | None = None,
        registry: ToolRegistry | None = None,
        ask: Asker | None = None,
        strategy: CompactionPolicy | None = None,
        *,
        stored_history: History | None = None,
    ) -> None:
        """``stored_history``: the session's history just read from ``store``, when the caller
        has it (:class:`HistoryManager`'s ``stored``)."""
        assert session.id is not None
        self.store = store
        self.session = session
        self.session_id: int = session.id
        self.stored_counts = store.token_counts()
        """Counts of repeated texts the database holds (L1, tools, CODE_LAW, summaries)."""
        remember(self.stored_counts)
        settings = planning_settings(store, session, settings)
        self.settings = settings
        """The process' settings with the numbers the session stores in place, a recording in
        its own agent's window (:func:`engine.recordings.own_agent.planning_settings`)."""
        self.provider = provider
        self.workspace = workspace
        """The folder its tools work in; None: the session has none it may use (recorded by
        another agent and not given one, :mod:`engine.session.workspace`): no tool runs and
        no workspace file is read."""
        self.events: EventSink = events if events is not None else _ignore_events
        self.strategy = strategy or get_strategy(session.strategy or settings.strategy, settings)
        self._given_registry = registry
        self.data_dir = data_folder(settings, store.path)
        """Files of this app beside the database; the session's own are in
        ``<database key>/<id>/`` (:mod:`engine.context.session_files`)."""
        self.history = HistoryManager(
            store, self.session_id, settings, events, self.data_dir, stored=stored_history
        )
        self.tool_ctx = ToolContext(
            # Without a workspace no tool runs (the loop refuses first); the tools still need
            # a path, and one that is no folder fails any tool that got to it.
            workspace=workspace or NO_FOLDER,
            settings=settings,
            todos=store.get_todos(self.session_id),
            on_todos=self._save_todos,
            ask=ask,
            recall=self.recall_archive,  # Agent hands it Fitting.recall, which adds the set-aside
            chat_transcript=self.chat_transcript,
            execution_log=self._execution_log,
            injections=self.strategy.injections(),
        )
        self._injected: dict[str, Message] = {}
        """The assistant messages made of injected texts, by text (counted once per run)."""
        self.builder = ContextBuilder(workspace, settings, self._tool_definitions())
        self.preprocessor = InputPreprocessor(settings)
        self.scratchpad: list[ScratchStep] = []
        """The current round's steps with full observations; empty between rounds."""
        self.last_scratchpad: list[ScratchStep] = []
        """The scratchpad of the round that ended last (one key away in the TUI)."""
        self.current_round: int | None = None
        self.current_question = ""
        """The preprocessed input of the round in progress."""
        self.cancelled = threading.Event()
        """Set by :meth:`cancel` (from any thread): the round in progress stops."""
        self.known: Known | None = None
        """While the writer lease is held (:class:`~engine.session.writer.WriterLease`): what
        the agent knows of its session; None: every figure is asked of the store."""

    # The parts only a running round or a compaction uses, made when first asked: a look at
    # the next request (``ctxscope context``) imports none of them (issue 44).

    @functools.cached_property
    def registry(self) -> ToolRegistry:
        """The tools the model is offered: the agent's own, then the strategy's."""
        from tools.registry import default_registry

        base = self._given_registry or default_registry()
        return base.extended([tool() for tool in self.strategy.extra_tools])

    def _tool_definitions(self) -> list[dict[str, Any]]:
        """:attr:`registry`'s definitions; the default tools' without importing them
        (:mod:`tools.definitions`)."""
        if self._given_registry is not None:
            return self.registry.schemas()
        return tool_definitions(self.strategy.extra_tools)

    @functools.cached_property
    def compressor(self) -> ToolResultCompressor:
        """A3: each tool result's form in history."""
        from engine.compaction.tool_results import ToolResultCompressor

        return ToolResultCompressor(self.settings)

    @functools.cached_property
    def summaries(self) -> SummaryCompressor:
        """The summary of a compaction: the model's, or the extractive fallback."""
        from engine.compaction.summary import SummaryCompressor
        from engine.compaction.summary_call import ProviderSummariser

        return SummaryCompressor(
            ProviderSummariser(self.provider, self.settings),
            self.settings.summary_timeout,
            send=self._ask_summary,
        )

    def _execution_log(self) -> list[dict[str, Any]]:
        from engine.compaction.execution_log import read_log

        return read_log(self.execution_log_path)

    def _ask_summary(
        self, system: str, text: str, timeout: float, *, retries: int | None = None
    ) -> str:
        """A separate summary call sent as it is (seed 001's ``compressHistory``), to the
        ``summary_model`` when one is set."""
        return self.provider.ask_text(
            system, text, timeout, model=self.settings.summary_model, retries=retries
        )

    @property
    def todos(self) -> list[TodoItem]:
        return self.tool_ctx.todos

    def cancel(self) -> None:
        """Interrupt the running round (safe from any thread)."""
        self.cancelled.set()
        self.tool_ctx.cancel.set()

    def last_usage(self) -> int | None:
        """Input-side usage of the last API call, or None when it no longer describes history.

        After a compaction the last call's usage is stale (history shrank), so the local count
        stands in until the next call.
        """
        return self.fresh_usage(self.last_record())

    def fresh_usage(self, record: UsageRecord | None) -> int | None:
        """``record``'s input side, unless a compaction that wrote a summary came after it."""
        if record is None:
            return None
        compacted = self._last_summary_compaction()
        if compacted is not None and compacted > record.created_at:
            return None
        # the agent's own count, or ours where it records none (the figures' rule)
        return call_input(record.usage, record.local_estimate)

    def last_record(self) -> UsageRecord | None:
        """The session's last measured usage record (:meth:`Store.last_usage`); asked for once
        while this agent holds the writer lease, which asks before every round."""
        known = self.known
        if known is None:
            return self.store.last_usage(self.session_id)
        if known.usage is None:
            known.usage = (self.store.last_usage(self.session_id),)
        return known.usage[0]

    def usage_written(self, record: UsageRecord) -> None:
        """This agent stored ``record``: the last measured one now, if it is a measurement
        (as :meth:`Store.last_usage` counts one: any of its four figures above 0)."""
        u = record.usage
        measured = (
            u.input_tokens
            + u.output_tokens
            + u.cache_read_input_tokens
            + u.cache_creation_input_tokens
        ) > 0
        if self.known is not None and measured:
            self.known.usage = (record,)

    def _last_summary_compaction(self) -> datetime | None:
        """:meth:`Store.last_summary_compaction_at`, asked for once per history while this agent
        holds the writer lease."""
        known = self.known
        if known is None:
            return self.store.last_summary_compaction_at(self.session_id)
        hist, seen = self.history.history, known.compaction
        if seen is None or seen[0] is not hist:
            at = self.store.last_summary_compaction_at(self.session_id)
            seen = known.compaction = (hist, at)
        return seen[1]

    def preview(self, question: str = "") -> BuiltContext:
        """The request the next step would send (context inspector, ``ctxscope context``)."""
        if self.current_round is not None:
            return self.build(self.current_question)
        text = self.preprocessor.process(question).text if question else ""
        return self.build_idle(text)

    def budget(self, user_input: str = "") -> BudgetCheck:
        """The seed C7 check for ``user_input`` against the current history (seed 000's rule;
        :meth:`plan` is the active strategy's decision)."""
        return self._budget_of(self.build_idle(), user_input)

    def preview_and_budget(self, question: str = "") -> tuple[BuiltContext, BudgetCheck]:
        """:meth:`preview` and :meth:`budget` together, building the context once when idle."""
        if question or self.current_round is not None:
            return self.preview(question), self.budget(question)
        built = self.preview()
        return built, self._budget_of(built, "")

    def _budget_of(self, idle: BuiltContext, user_input: str) -> BudgetCheck:
        """The C7 check with ``idle`` (the request without input) as the local stand-in."""
        messages = len(self.history.history.messages)
        record = self.last_record()
        return check_budget(
            self.fresh_usage(record),
            idle.total + self.extra_prefix_tokens,
            user_input,
            messages,
            self.settings,
            usage_source=record.source if record else "api",
        )

    def policy_view(
        self, user_input: str = "", built: BuiltContext | None = None, excess: int = 0
    ) -> PolicyView:
        """What the strategy sees now: the history as sent, the request's counts, the pins;
        ``excess``: how far over the window the request is while the engine's last resort runs
        (:meth:`Steering.view <engine.session.steering.Steering.view>`), else 0."""
        built = built or self.build_idle()
        sent: dict[int, int] = {}
        if self.current_round is not None:
            # The round in progress sends full observations, not history's compressed copies.
            full = {r.tool_use_id: r for step in self.scratchpad for r in step.results}
            for msg in self.round_messages():
                result = full.get(msg.meta.tool_use_id or "")
                if msg.id is not None and result is not None:
                    sent[msg.id] = result.tokens or BLOCK_OVERHEAD + count_text(result.text)
        uses_api = self.strategy.uses_api_usage
        record = self.last_record() if uses_api else None
        return PolicyView(
            history=self.history.sent_form(self.strategy),
            in_progress=self.current_round,
            request_tokens=built.total + self.extra_prefix_tokens,
            fixed_tokens=fixed_tokens(built) + self.extra_prefix_tokens,
            last_usage=self.fresh_usage(record) if uses_api else None,
            last_usage_source=record.source if record else "api",
            user_input=user_input,
            sent_tokens=(lambda m: sent.get(m.id or 0, m.tokens or 0)) if sent else None,
            pinned=self.history.pinned_ids,
            count_request=self._request_tokens,
            head_messages=1 + bool(built.layers.get("L2 CODE_LAW")),
            excess=excess,
        )

    def _request_tokens(self, hist: History) -> int:
        """The local count of the request ``hist`` would send now (as ``request_tokens``)."""
        if self.current_round is not None:
            return self.build(self.current_question, hist).total + self.extra_prefix_tokens
        return self.build_idle("", hist).total + self.extra_prefix_tokens

    def sent_history(self) -> History:
        """L3 as the strategy sends it: its summaries, and history after its projection (seed
        002's projected rounds, masked observations); the round in progress as stored."""
        hist = self.history.sent_form(self.strategy)
        round_msgs = self.round_messages(hist) if self.current_round is not None else []
        earlier = hist.messages[: len(hist.messages) - len(round_msgs)]
        messages, _ = self.strategy.project(earlier, [], None)
        return _history(hist.summaries, [*messages, *round_msgs])

    @property
    def execution_log_path(self) -> Path:
        """Seed 003's ``.ship/memory/agent-context/<chatKey>.jsonl``, in the session's folder."""
        return self.session_file("agent-context.jsonl")

    def session_file(self, name: str) -> Path:
        """The session's file ``name`` beside the database, in its folder keyed by database
        and session (:func:`engine.context.session_files.session_file`)."""
        return session_file(
            self.data_dir,
            self.store.path,
            self.session_id,
            name,
            writable=not self.store.read_only,
        )

    def chat_transcript(self) -> list[tuple[str, str]]:
        """The chat as its user saw it (seed 003's ChatStore transcript): each earlier round's
        input (as typed) and final answer, archived rounds included, the round in progress
        left out."""
        out: list[tuple[str, str]] = []
        for msg in self.store.all_messages(self.session_id):
            if msg.meta.round is not None and msg.meta.round == self.current_round:
                continue
            if msg.role == "user":
                out.append(("user", typed_input(msg.content)))
            elif msg.role == "assistant" and msg.meta.final:
                out.append(("assistant", msg.content))
        return out

    def _injected_turn(self) -> list[Message]:
        """What tools injected as assistant text in this run, as one assistant message for the
        end of earlier history, just before the current input (seed 003: never changing the
        user's message; the wire merges it into a preceding assistant turn, as the Messages API
        allows no two in a row)."""
        injections = self.tool_ctx.injections
        texts = injections.assistant if injections is not None else []
        if not texts:
            self._injected.clear()
            return []
        text = "\n\n".join(texts)
        if text not in self._injected:
            self._injected = {text: Message(role="assistant", content=text)}
        return [self._injected[text]]

    def round_messages(self, hist: History | None = None) -> list[Message]:
        """The stored messages of the round in progress (always the newest in history)."""
        messages = (hist if hist is not None else self.history.history).messages
        start = len(messages)
        while start > 0 and messages[start - 1].meta.round == self.current_round:
            start -= 1
        return messages[start:]

    def build(self, question: str, hist: History | None = None) -> BuiltContext:
        """The request of the next step: earlier history as the strategy sends it, then this
        round's input and its scratchpad (full observations). ``hist``: another history than
        the stored one (what a compaction would leave; its steps alone stay in the
        scratchpad)."""
        pad = self.scratchpad
        if hist is None:
            hist = self.history.sent_form(self.strategy)
        else:
            kept = {m.id for m in hist.messages}
            pad = [s for s in pad if s.assistant.id in kept]
        earlier = hist.messages[: len(hist.messages) - len(self.round_messages(hist))]
        messages, scratchpad = self.strategy.project(earlier, pad, self.current_round)
        turn = self._injected_turn()
        if turn or messages is not earlier:  # not a list of this build's own: a copy
            messages = [*messages, *turn]
        injected = self.tool_ctx.injections
        return self.builder.build(
            _history(hist.summaries, messages),
            scratchpad,
            question,
            self._recap(),
            injected_system=injected.system if injected is not None else (),
        )

    def build_idle(self, question: str = "", hist: History | None = None) -> BuiltContext:
        """The request with no round running: history as the strategy sends it, and ``question``."""
        hist = hist if hist is not None else self.history.sent_form(self.strategy)
        messages, _ = self.strategy.project(hist.messages, [], None)
        return self.builder.build(
            _history(hist.summaries, list(messages)), [], question, self._recap()
        )

    def recall_archive(self, query: str, limit: int) -> list[RecallHit]:
        """What the Recall tool searches in the session's archive (the agent's
        :meth:`Fitting.recall <engine.session.fitting.Fitting.recall>` adds the observations
        it set aside in the round in progress)."""
        return self.store.search_archive(self.session_id, query, limit)

    def _recap(self) -> str:
        if not self.tool_ctx.todos:
            return ""
        from tools.todo import todo_recap  # only a session with todos needs the tool's module

        return todo_recap(self.tool_ctx.todos)

    def give_workspace(self, folder: Path) -> None:
        """The folder the user gives a session that had none it may use (recorded by another
        agent): stored with the session, and used from the next build and tool call on."""
        refused = workspace_refusal(folder)
        if refused:
            raise ValueError(f"{folder} cannot be a workspace: {refused}")
        self.session = self.store.update_session(self.session_id, workspace=str(folder))
        self.workspace = folder
        self.builder.workspace = folder
        self.tool_ctx.workspace = folder

    def _save_todos(self, todos: list[TodoItem]) -> None:
        self.store.set_todos(self.session_id, todos)
