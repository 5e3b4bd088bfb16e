"""The agent over one stored session: a small object holding its parts, each passed what it
needs.

- :class:`~engine.session.core.AgentCore` — its state (store, session, settings, provider,
  history, tools, builder, the round in progress) and the request it would send next;
- :class:`~engine.session.writer.WriterLease` — one writer per session, crashed rounds closed;
- :class:`~engine.session.steering.Steering` — the strategy's plan, compaction, undo, pins;
- :class:`~engine.session.fitting.Fitting` — no request larger than the window;
- :class:`~engine.session.loop.RoundLoop` — the ReAct round.

``Agent``'s methods are the interface the rest of ctxscope uses; each hands the call to the
part that does it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from engine.compaction.policy import CompactionPolicy, Plan
from engine.compaction.records import CompactionDraft, CompactionResult
from engine.compaction.summary import SummaryCompressor
from engine.context.builder import BuiltContext, ContextBuilder, ScratchStep
from engine.context.history import HistoryManager
from engine.context.preprocess import InputPreprocessor
from engine.events import EventSink, ignore_events
from engine.llm.base import Provider
from engine.messages.tokens import BudgetCheck
from engine.models import Compaction, History, Session, TodoItem, Trigger
from engine.session.core import AgentCore, RoundOutcome
from engine.session.fitting import Fitting
from engine.session.loop import RoundLoop
from engine.session.steering import Steering
from engine.session.writer import WriterLease
from engine.settings.config import Settings
from engine.store import Store
from tools.base import Asker, ToolContext
from tools.registry import ToolRegistry


class Agent:
    """A ReAct coding agent over one stored session."""

    def __init__(
        self,
        store: Store,
        session: Session,
        settings: Settings,
        provider: Provider,
        workspace: Path | None,
        events: EventSink = ignore_events,
        registry: ToolRegistry | None = None,
        ask: Asker | None = None,
        strategy: CompactionPolicy | None = None,
        lease_wait: float = 0.0,
    ) -> None:
        self.core = AgentCore(
            store, session, settings, provider, workspace, events, registry, ask, strategy
        )
        self.lease = WriterLease(self.core, lease_wait)
        self.steering = Steering(self.core, self.lease)
        self.fitting = Fitting(self.core, self.steering, self.lease)
        self.loop = RoundLoop(self.core, self.lease, self.steering, self.fitting)
        # Recall finds what fitting set aside in the round in progress, then the archive.
        self.core.tool_ctx.recall = self.fitting.recall
        self.lease.recover()

    # The round (RoundLoop)

    def run(self, user_input: str) -> RoundOutcome:
        """Run one round; returns when the model answers, fails, or is cancelled.

        The round holds the session's writer lease throughout (see :meth:`writing`).
        """
        return self.loop.run(user_input)

    def cancel(self) -> None:
        """Interrupt the running round (safe from any thread)."""
        self.core.cancel()

    # The writer lease

    def writing(self, purpose: str = "round") -> AbstractContextManager[None]:
        """Hold the session's writer lease (:meth:`WriterLease.writing`)."""
        return self.lease.writing(purpose)

    def recover(self) -> list[int]:
        """Close rounds left open by a crash (:meth:`WriterLease.recover`)."""
        return self.lease.recover()

    # Steering

    def plan(self, user_input: str = "", built: BuiltContext | None = None) -> Plan:
        """The active strategy's decision now (:meth:`Steering.plan`)."""
        return self.steering.plan(user_input, built)

    def compact(
        self,
        focus: str | None = None,
        trigger: Trigger = Trigger.MANUAL,
        keep_rounds: int | None = None,
        user_input: str = "",
    ) -> CompactionResult:
        """Compact now (:meth:`Steering.compact`)."""
        return self.steering.compact(focus, trigger, keep_rounds, user_input)

    def prepare_compaction(
        self,
        focus: str | None = None,
        trigger: Trigger = Trigger.MANUAL,
        dry_run: bool = False,
        keep_rounds: int | None = None,
        user_input: str = "",
    ) -> CompactionDraft | CompactionResult:
        """What compacting now would do, stored nowhere (:meth:`Steering.prepare_compaction`)."""
        return self.steering.prepare_compaction(focus, trigger, dry_run, keep_rounds, user_input)

    def commit_compaction(
        self,
        draft: CompactionDraft,
        content: str | None = None,
        trigger: Trigger = Trigger.MANUAL,
    ) -> CompactionResult:
        """Store a prepared compaction (:meth:`Steering.commit_compaction`)."""
        return self.steering.commit_compaction(draft, content, trigger)

    def uncompact(self, compaction_id: int | None = None) -> Compaction:
        """Reverse the latest compaction (:meth:`Steering.uncompact`)."""
        return self.steering.uncompact(compaction_id)

    def pin(self, message_ids: list[int], pinned: bool = True) -> int:
        """Pin (or unpin) messages (:meth:`Steering.pin`)."""
        return self.steering.pin(message_ids, pinned)

    # What the agent sees (AgentCore)

    def preview(self, question: str = "") -> BuiltContext:
        """The request the next step would send (:meth:`AgentCore.preview`)."""
        return self.core.preview(question)

    def budget(self, user_input: str = "") -> BudgetCheck:
        """The seed C7 check for ``user_input`` (:meth:`AgentCore.budget`)."""
        return self.core.budget(user_input)

    def preview_and_budget(self, question: str = "") -> tuple[BuiltContext, BudgetCheck]:
        """:meth:`preview` and :meth:`budget` together (:meth:`AgentCore.preview_and_budget`)."""
        return self.core.preview_and_budget(question)

    def last_usage(self) -> int | None:
        """Input-side usage of the last API call, if it still describes history."""
        return self.core.last_usage()

    def sent_history(self) -> History:
        """L3 as the strategy sends it (:meth:`AgentCore.sent_history`)."""
        return self.core.sent_history()

    def chat_transcript(self) -> list[tuple[str, str]]:
        """The chat as its user saw it (:meth:`AgentCore.chat_transcript`)."""
        return self.core.chat_transcript()

    def session_file(self, name: str) -> Path:
        """The session's file ``name`` beside the database (:meth:`AgentCore.session_file`)."""
        return self.core.session_file(name)

    def give_workspace(self, folder: Path) -> None:
        """Give a session without a usable workspace one (:meth:`AgentCore.give_workspace`)."""
        self.core.give_workspace(folder)

    @property
    def execution_log_path(self) -> Path:
        return self.core.execution_log_path

    @property
    def todos(self) -> list[TodoItem]:
        return self.core.todos

    # The state the rest of ctxscope reads (AgentCore's)

    @property
    def store(self) -> Store:
        return self.core.store

    @property
    def session(self) -> Session:
        return self.core.session

    @property
    def session_id(self) -> int:
        return self.core.session_id

    @property
    def settings(self) -> Settings:
        return self.core.settings

    @property
    def provider(self) -> Provider:
        return self.core.provider

    @property
    def workspace(self) -> Path | None:
        return self.core.workspace

    @property
    def events(self) -> EventSink:
        return self.core.events

    @property
    def strategy(self) -> CompactionPolicy:
        return self.core.strategy

    @property
    def registry(self) -> ToolRegistry:
        return self.core.registry

    @property
    def history(self) -> HistoryManager:
        return self.core.history

    @property
    def tool_ctx(self) -> ToolContext:
        return self.core.tool_ctx

    @property
    def builder(self) -> ContextBuilder:
        return self.core.builder

    @property
    def preprocessor(self) -> InputPreprocessor:
        return self.core.preprocessor

    @property
    def summaries(self) -> SummaryCompressor:
        return self.core.summaries

    @property
    def scratchpad(self) -> list[ScratchStep]:
        """The current round's steps with full observations; empty between rounds."""
        return self.core.scratchpad

    @property
    def last_scratchpad(self) -> list[ScratchStep]:
        """The scratchpad of the round that ended last (one key away in the TUI)."""
        return self.core.last_scratchpad

    @property
    def current_round(self) -> int | None:
        return self.core.current_round

    @property
    def extra_prefix_tokens(self) -> int:
        """:attr:`AgentCore.extra_prefix_tokens` (a replay sets it)."""
        return self.core.extra_prefix_tokens

    @extra_prefix_tokens.setter
    def extra_prefix_tokens(self, tokens: int) -> None:
        self.core.extra_prefix_tokens = tokens


__all__ = ["Agent"]
