"""The repository: every read and write of a session, in terms of ``engine.models``.

Each write is committed as it happens (a crash loses at most the step being written). A
compaction is one transaction: a crash at any point leaves either the old history or the new
one, never a mix. Nothing is ever deleted by compaction: archived messages stay in the message
table, linked to the segment (and through it to the summary) that replaced them.
"""

from __future__ import annotations

from engine.store.access import StoreAccess
from engine.store.errors import SessionNotFound, StoreError
from engine.store.exchanges import ExchangeStore
from engine.store.forking import ForkStore
from engine.store.history import HistoryStore
from engine.store.sessions import Lease
from engine.store.usage import UsageStore

__all__ = ["Lease", "SessionNotFound", "Store", "StoreAccess", "StoreError"]


class Store(ForkStore, UsageStore, ExchangeStore, HistoryStore):
    """A ctxscope database. Create with :meth:`open`; any number may be open at once.

    Split by what it stores: :class:`~engine.store.sessions.SessionStore` (sessions, the
    writer lease, strategy switches, todos, token counts), :class:`~engine.store.conversation.
    ConversationStore` (rounds, messages, observations), :class:`~engine.store.archive.
    ArchiveStore` (compactions, summaries, archive, pins, search), :class:`~engine.store.
    forking.ForkStore` (a copy of a session), :class:`~engine.store.usage.UsageStore`,
    :class:`~engine.store.exchanges.ExchangeStore` (proxied requests) and
    :class:`~engine.store.history.HistoryStore` (the files an import read, the report's
    figures), all on one connection
    (:class:`~engine.store.access.StoreAccess`).
    """
