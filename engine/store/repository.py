"""The repository: every read and write of a session, in terms of ``engine.models``.

Each write is committed as it happens (a crash loses at most the step being written). A
compaction is one transaction: a crash at any point leaves either the old history or the new
one, never a mix. Nothing is ever deleted by compaction: archived messages stay in the message
table, linked to the segment (and through it to the summary) that replaced them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any

from peewee import Database

from engine.exchanges import Exchange
from engine.models import (
    ArchivedSegment,
    Compaction,
    History,
    Message,
    Observation,
    Round,
    RoundStatus,
    Session,
    SessionInfo,
    StrategyParams,
    StrategySwitch,
    Summary,
    TodoItem,
    UsageRecord,
)
from engine.store.access import (
    DEFAULT_BUSY_TIMEOUT,
    LEASE_HEARTBEAT,
    LEASE_STALE_AFTER,
    StoreAccess,
)
from engine.store.archive import ArchiveStore
from engine.store.conversation import ConversationStore
from engine.store.errors import SessionNotFound, StoreError
from engine.store.exchanges import ExchangeStore
from engine.store.forking import Fork, ForkStore
from engine.store.history import (
    CompactionFacts,
    HistoryStore,
    ImportedFile,
    SessionFacts,
    ToolFacts,
    UsageGroup,
)
from engine.store.lease import Holder
from engine.store.sessions import Lease, SessionStore
from engine.store.usage import StoredFigures, UsageStore
from tools.base import RecallHit

__all__ = ["Lease", "SessionNotFound", "Store", "StoreAccess", "StoreError"]

PARTS: dict[str, type] = {
    "sessions": SessionStore,
    "conversation": ConversationStore,
    "archive": ArchiveStore,
    "forks": ForkStore,
    "usage": UsageStore,
    "proxy_requests": ExchangeStore,
    "import_history": HistoryStore,
}
"""The store's parts by the attribute that holds each; every public method of a part is the
store's too (tests/engine/store/test_parts.py checks it)."""


class Store(StoreAccess):
    """A ctxscope database. Create with :meth:`open`; any number may be open at once.

    One connection (:class:`~engine.store.access.StoreAccess`, which it is) holding its parts,
    one per thing it stores, each given the connection and the other parts it uses:
    :attr:`sessions` (:class:`~engine.store.sessions.SessionStore`: sessions, the writer lease,
    strategy switches, todos, token counts), :attr:`conversation`
    (:class:`~engine.store.conversation.ConversationStore`: rounds, messages, observations),
    :attr:`archive` (:class:`~engine.store.archive.ArchiveStore`: compactions, summaries,
    archive, pins, search), :attr:`forks` (:class:`~engine.store.forking.ForkStore`: a copy of
    a session), :attr:`usage` (:class:`~engine.store.usage.UsageStore`), :attr:`proxy_requests`
    (:class:`~engine.store.exchanges.ExchangeStore`: proxied requests) and
    :attr:`import_history` (:class:`~engine.store.history.HistoryStore`: the files an import
    read, the report's figures).

    Every method below hands the call to its part, so the code that uses a ``Store`` need not
    know which part answers; new code may ask the part itself (``store.archive.segment(7)``).
    """

    def __init__(
        self,
        db: Database,
        path: Path,
        read_only: bool = False,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        where: str | None = None,
    ) -> None:
        super().__init__(db, path, read_only, busy_timeout, where)
        self.sessions = SessionStore(self)
        self.conversation = ConversationStore(self, self.sessions)
        self.archive = ArchiveStore(self)
        self.forks = ForkStore(self, self.sessions, self.conversation)
        self.usage = UsageStore(self)
        self.proxy_requests = ExchangeStore(self)
        self.import_history = HistoryStore(self)

    # SessionStore (sessions, the writer lease, strategy switches, todos, token counts)
    def lease_holder(self, session_id: int) -> Holder | None:
        return self.sessions.lease_holder(session_id)

    def live_writers(self) -> list[str]:
        return self.sessions.live_writers()

    def writer_alive(self, session_id: int, stale_after: float = LEASE_STALE_AFTER) -> bool:
        return self.sessions.writer_alive(session_id, stale_after)

    def acquire_lease(
        self,
        session_id: int,
        purpose: str,
        wait: float = 0.0,
        stale_after: float = LEASE_STALE_AFTER,
        heartbeat: float = LEASE_HEARTBEAT,
    ) -> Lease:
        return self.sessions.acquire_lease(session_id, purpose, wait, stale_after, heartbeat)

    def create_session(
        self,
        workspace: str,
        title: str = "",
        provider: str = "",
        model: str = "",
        strategy: str = "layered",
        parent_session_id: int | None = None,
        agent_id: str | None = None,
        source: str | None = None,
        params: StrategyParams | None = None,
        origin: tuple[str, str] | None = None,
        workspace_given: bool | None = None,
        agent: str = "",
        agent_version: str = "",
        recorded_id: str = "",
    ) -> Session:
        return self.sessions.create_session(
            workspace,
            title,
            provider,
            model,
            strategy,
            parent_session_id,
            agent_id,
            source,
            params,
            origin,
            workspace_given,
            agent,
            agent_version,
            recorded_id,
        )

    def get_session(self, session_id: int) -> Session:
        return self.sessions.get_session(session_id)

    def session_row(self, session_id: int) -> Any:
        return self.sessions.session_row(session_id)

    def session_for_source(self, source: str) -> Session | None:
        return self.sessions.session_for_source(source)

    def recorded_as(self, recorded_id: str) -> list[int]:
        return self.sessions.recorded_as(recorded_id)

    def sources(self) -> dict[int, str]:
        return self.sessions.sources()

    def latest_session(self) -> Session | None:
        return self.sessions.latest_session()

    def update_session(self, session_id: int, **fields: Any) -> Session:
        return self.sessions.update_session(session_id, **fields)

    def history_tokens(self, session_id: int) -> int:
        return self.sessions.history_tokens(session_id)

    def list_sessions(self) -> list[SessionInfo]:
        return self.sessions.list_sessions()

    def delete_session(self, session_id: int) -> None:
        return self.sessions.delete_session(session_id)

    def clear_session(self, session_id: int) -> None:
        return self.sessions.clear_session(session_id)

    def drop_rounds(self, session_id: int, first_round: int) -> None:
        return self.sessions.drop_rounds(session_id, first_round)

    def switch_strategy(
        self, session_id: int, strategy: str, params: StrategyParams | None = None
    ) -> Session:
        return self.sessions.switch_strategy(session_id, strategy, params)

    def strategy_switches(self, session_id: int) -> list[StrategySwitch]:
        return self.sessions.strategy_switches(session_id)

    def token_counts(self, digests: Collection[str] | None = None) -> dict[str, int]:
        return self.sessions.token_counts(digests)

    def remember_token_counts(self, counts: dict[str, int]) -> None:
        return self.sessions.remember_token_counts(counts)

    def get_todos(self, session_id: int) -> list[TodoItem]:
        return self.sessions.get_todos(session_id)

    def set_todos(self, session_id: int, todos: Iterable[TodoItem]) -> None:
        return self.sessions.set_todos(session_id, todos)

    # ConversationStore (rounds, messages, observations)
    def open_round(self, session_id: int, user_message: Message) -> tuple[Round, Message]:
        return self.conversation.open_round(session_id, user_message)

    def append_message(self, session_id: int, round_index: int, message: Message) -> Message:
        return self.conversation.append_message(session_id, round_index, message)

    def append_round(
        self, session_id: int, messages: list[Message], status: RoundStatus
    ) -> tuple[Round, list[Message]]:
        return self.conversation.append_round(session_id, messages, status)

    def append_rounds(
        self, session_id: int, rounds: Sequence[tuple[list[Message], RoundStatus]]
    ) -> list[tuple[Round, list[Message]]]:
        return self.conversation.append_rounds(session_id, rounds)

    def finish_round(
        self, session_id: int, round_index: int, status: RoundStatus, error: str | None = None
    ) -> Round:
        return self.conversation.finish_round(session_id, round_index, status, error)

    def rounds(self, session_id: int) -> list[Round]:
        return self.conversation.rounds(session_id)

    def open_rounds(self, session_id: int) -> list[Round]:
        return self.conversation.open_rounds(session_id)

    def round_messages(self, session_id: int, round_index: int) -> list[Message]:
        return self.conversation.round_messages(session_id, round_index)

    def first_message(self, session_id: int) -> Message | None:
        return self.conversation.first_message(session_id)

    def history(self, session_id: int) -> History:
        return self.conversation.history(session_id)

    def all_messages(self, session_id: int) -> list[Message]:
        return self.conversation.all_messages(session_id)

    def history_marker(self, session_id: int) -> tuple[int, int, int]:
        return self.conversation.history_marker(session_id)

    def set_message_tokens(self, counts: dict[int, int]) -> None:
        return self.conversation.set_message_tokens(counts)

    def add_observation(self, obs: Observation) -> Observation:
        return self.conversation.add_observation(obs)

    def add_observations(self, observations: list[Observation]) -> None:
        return self.conversation.add_observations(observations)

    def observations(self, session_id: int, round_index: int | None = None) -> list[Observation]:
        return self.conversation.observations(session_id, round_index)

    def observation_for(self, session_id: int, tool_use_id: str) -> Observation | None:
        return self.conversation.observation_for(session_id, tool_use_id)

    # ArchiveStore (compactions, summaries, the archive, pins, search)
    def apply_compaction(
        self,
        session_id: int,
        message_ids: list[int],
        summary: Summary | None,
        compaction: Compaction,
        supersede: list[int] | None = None,
    ) -> tuple[Compaction, Summary | None, ArchivedSegment]:
        return self.archive.apply_compaction(
            session_id, message_ids, summary, compaction, supersede
        )

    def archive_recorded(
        self,
        session_id: int,
        message_ids: list[int],
        summary: Summary | None,
        compaction: Compaction,
        supersede: list[int] | None = None,
    ) -> None:
        return self.archive.archive_recorded(
            session_id, message_ids, summary, compaction, supersede
        )

    def search_archive(self, session_id: int, query: str, limit: int = 5) -> list[RecallHit]:
        return self.archive.search_archive(session_id, query, limit)

    def index_segment(self, segment_id: int) -> int:
        return self.archive.index_segment(segment_id)

    def unindex_segment(self, segment_id: int) -> int:
        return self.archive.unindex_segment(segment_id)

    def indexed_messages(self, session_id: int) -> set[int]:
        return self.archive.indexed_messages(session_id)

    def observations_for_messages(self, message_ids: list[int]) -> list[Observation]:
        return self.archive.observations_for_messages(message_ids)

    def undo_compaction(self, session_id: int, compaction_id: int | None = None) -> Compaction:
        return self.archive.undo_compaction(session_id, compaction_id)

    def pin(self, session_id: int, message_ids: list[int], pinned: bool = True) -> int:
        return self.archive.pin(session_id, message_ids, pinned)

    def record_compaction(self, compaction: Compaction) -> Compaction:
        return self.archive.record_compaction(compaction)

    def last_summary_compaction_at(self, session_id: int) -> datetime | None:
        return self.archive.last_summary_compaction_at(session_id)

    def compactions(self, session_id: int) -> list[Compaction]:
        return self.archive.compactions(session_id)

    def compactions_of(self, session_ids: Collection[int]) -> dict[int, list[Compaction]]:
        return self.archive.compactions_of(session_ids)

    def segment(self, segment_id: int) -> ArchivedSegment:
        return self.archive.segment(segment_id)

    def segments(self, session_id: int) -> list[ArchivedSegment]:
        return self.archive.segments(session_id)

    def segment_ids(self, session_id: int) -> list[int]:
        return self.archive.segment_ids(session_id)

    def summary(self, summary_id: int) -> Summary:
        return self.archive.summary(summary_id)

    def summaries(self, session_id: int) -> list[Summary]:
        return self.archive.summaries(session_id)

    # ForkStore (a copy of a session)
    def fork_session(self, session_id: int, source: str) -> Fork:
        return self.forks.fork_session(session_id, source)

    def fork_to_change(self, session: Session) -> Fork | None:
        return self.forks.fork_to_change(session)

    # UsageStore (usage records)
    def add_usage(self, record: UsageRecord) -> UsageRecord:
        return self.usage.add_usage(record)

    def add_usages(self, records: list[UsageRecord]) -> None:
        return self.usage.add_usages(records)

    def usages(self, session_id: int, from_round: int | None = None) -> list[UsageRecord]:
        return self.usage.usages(session_id, from_round)

    def last_usage(self, session_id: int) -> UsageRecord | None:
        return self.usage.last_usage(session_id)

    def stored_figures(
        self, session_ids: Collection[int] | None = None
    ) -> dict[int, StoredFigures]:
        return self.usage.stored_figures(session_ids)

    def keep_figures(self, made: Sequence[tuple[StoredFigures, str, dict[str, Any]]]) -> int:
        return self.usage.keep_figures(made)

    def stored_losses(self, session_id: int) -> tuple[list[int], list[dict[str, Any]]] | None:
        return self.usage.stored_losses(session_id)

    def keep_losses(
        self, session_id: int, compactions: Sequence[int], losses: list[dict[str, Any]]
    ) -> bool:
        return self.usage.keep_losses(session_id, compactions, losses)

    # ExchangeStore (proxied requests and their blobs)
    def add_exchange(
        self,
        exchange: Exchange,
        source: str,
        title: str = "",
        parent_source: str | None = None,
        agent_id: str | None = None,
        agent: str = "",
        agent_version: str = "",
    ) -> Exchange:
        return self.proxy_requests.add_exchange(
            exchange, source, title, parent_source, agent_id, agent, agent_version
        )

    def exchanges(self, session_id: int) -> list[Exchange]:
        return self.proxy_requests.exchanges(session_id)

    def proxy_session(self, source: str) -> int | None:
        return self.proxy_requests.proxy_session(source)

    def latest_headers(self, session_id: int) -> dict[str, str]:
        return self.proxy_requests.latest_headers(session_id)

    def exchange_count(self, session_id: int) -> int:
        return self.proxy_requests.exchange_count(session_id)

    def exchange_blob_count(self) -> int:
        return self.proxy_requests.exchange_blob_count()

    def proxied_sessions(self) -> list[int]:
        return self.proxy_requests.proxied_sessions()

    # HistoryStore (the files an import read, the report's figures)
    def imported_files(self) -> dict[str, ImportedFile]:
        return self.import_history.imported_files()

    def imported_file(self, *paths: str) -> ImportedFile | None:
        return self.import_history.imported_file(*paths)

    def remember_file(self, file: ImportedFile) -> None:
        return self.import_history.remember_file(file)

    def staged_file(self, scratch: Path) -> AbstractContextManager[list[str]]:
        return self.import_history.staged_file(scratch)

    def staged_files(self, scratches: list[Path]) -> AbstractContextManager[list[str]]:
        return self.import_history.staged_files(scratches)

    def copy_staged(self, schema: str = "staged") -> dict[str, int]:
        return self.import_history.copy_staged(schema)

    def plain_index(self) -> None:
        self.import_history.plain_index()

    def sessions_source_gone(self) -> set[int]:
        return self.import_history.sessions_source_gone()

    def mark_source_gone(self, session_ids: list[int], gone: bool = True) -> list[int]:
        return self.import_history.mark_source_gone(session_ids, gone)

    def child_sessions(self, session_id: int) -> list[int]:
        return self.import_history.child_sessions(session_id)

    def sessions_with_usage(self, since: datetime) -> list[int]:
        return self.import_history.sessions_with_usage(since)

    def usage_groups(
        self, since: datetime | None = None, session: int | None = None
    ) -> list[UsageGroup]:
        return self.import_history.usage_groups(since, session)

    def session_facts(self) -> dict[int, SessionFacts]:
        return self.import_history.session_facts()

    def all_compactions(self, since: datetime | None = None) -> list[CompactionFacts]:
        return self.import_history.all_compactions(since)

    def tool_result_sizes(self) -> list[ToolFacts]:
        return self.import_history.tool_result_sizes()
