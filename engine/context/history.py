"""HistoryManager: the session's L3 history — step-by-step writes, rounds, undo and pins.

It keeps an in-memory copy of the stored history so that each step costs O(new messages):
appends update the copy, token counts are computed once per message and stored with it, and
only a compaction reloads from the database. A compaction is carried out by its
:attr:`~HistoryManager.compactions` (:class:`engine.compaction.executor.CompactionExecutor`),
which reads this history and names no strategy.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING

from engine.compaction.placement import summary_tokens
from engine.compaction.policy import CompactionPolicy, ResultForm, keep_zone_tokens
from engine.compaction.records import CompactionDraft, CompactionResult
from engine.context.session_files import session_folder
from engine.messages.tokens import ensure_counted
from engine.models import Compaction, History, Message, MessageMeta, Round, RoundStatus
from engine.settings.config import Settings
from engine.store import Store

if TYPE_CHECKING:
    from engine.compaction.executor import CompactionExecutor
    from engine.events import EventSink

# A compaction's records live in engine.compaction.records; the workbench finds them here too.
__all__ = [
    "INTERRUPTED_RESULT",
    "CompactionDraft",
    "CompactionResult",
    "HistoryManager",
]

INTERRUPTED_RESULT = "Interrupted by the user before this tool returned a result."

LOOKUP_BATCH = 500
"""Tool messages whose observations are asked for in one query (SQLite bounds the number of
values an ``IN (...)`` may hold)."""


class HistoryManager:
    """Reads and writes one session's history through the store."""

    def __init__(
        self,
        store: Store,
        session_id: int,
        settings: Settings,
        events: EventSink | None = None,
        data_dir: Path | None = None,
        *,
        stored: History | None = None,
    ) -> None:
        """``stored``: the session's history just read from ``store`` by the caller, used for
        the first load instead of reading it again (``ctxscope context``)."""
        self.store = store
        self.session_id = session_id
        self.settings = settings
        self.data_dir = data_dir
        """The data folder: seed 004's raw middles go to the session's folder in it
        (:func:`engine.context.session_files.session_folder`); None: not written."""
        self._events = events
        """Where the compactions' events go (None: nowhere), until :attr:`compactions` holds
        them."""
        self._pinned: frozenset[int] = frozenset()
        self._returned: dict[int, tuple[str, int] | None] = {}
        """Tool results as the tools returned them, by tool message id, with their token
        count (None: no observation was recorded, the stored content is all there is); a tool
        message's result never changes, so this outlives reloads."""
        self._copies: dict[int, Message] = {}
        """The tool messages of the loaded history in that form (rebuilt after a reload)."""
        self._as_returned: tuple[History, int, History] | None = None
        """The last history sent as returned: (stored history, its length, the copy)."""
        self._history = self._load(stored)

    def _load(self, stored: History | None = None) -> History:
        history = self.store.history(self.session_id) if stored is None else stored
        missing = {}
        for msg in history.messages:
            if msg.tokens is None and msg.id is not None:
                missing[msg.id] = ensure_counted(msg)
        if missing:
            self.store.set_message_tokens(missing)
        for s in history.summaries:
            if s.tokens is None:
                s.tokens = summary_tokens(s)
        self._pinned = frozenset(m.id for m in history.messages if m.pinned and m.id is not None)
        return history

    @functools.cached_property
    def compactions(self) -> CompactionExecutor:
        """Carries out this session's compactions (prepare, commit, compact); made when first
        asked, so that what only reads the history (``ctxscope context``) loads neither the
        executor nor the events (issue 44)."""
        from engine.compaction.executor import CompactionExecutor
        from engine.events import ignore_events

        folder = None if self.data_dir is None else self._session_folder
        events = ignore_events if self._events is None else self._events
        return CompactionExecutor(self.store, self.session_id, self, events, folder)

    @property
    def events(self) -> EventSink:
        """Where the compactions' events go (:attr:`compactions`)."""
        return self.compactions.events

    @events.setter
    def events(self, sink: EventSink) -> None:
        if "compactions" in self.__dict__:
            self.compactions.events = sink
        else:
            self._events = sink

    def _session_folder(self) -> Path:
        assert self.data_dir is not None
        return session_folder(self.data_dir, self.store.path, self.session_id)

    def reload(self) -> History:
        self._copies.clear()
        self._history = self._load()
        return self._history

    @property
    def history(self) -> History:
        """L3 as stored now (summaries, then the messages of rounds not archived)."""
        return self._history

    def sent_form(self, policy: CompactionPolicy) -> History:
        """L3 with each tool result in the form ``policy``'s seed keeps in history.

        Seed 000 keeps the A3-compressed form, which is what is stored; seeds 001-003 keep the
        result as the tool returned it (:attr:`ResultForm.AS_RETURNED`): each tool message is
        then a copy (same id, round and step) holding its observation's text, the one the model
        saw. A strategy's own cut (seed 002's first and last 1 000 characters) is its
        projection's, made afterwards."""
        hist = self._history
        if policy.tool_results is not ResultForm.AS_RETURNED:
            return hist
        known = self._as_returned
        if known is not None and known[0] is hist and known[1] == len(hist.messages):
            return known[2]
        messages = self.returned_form(hist.messages)
        sent = History(summaries=hist.summaries, messages=messages)
        self._as_returned = (hist, len(hist.messages), sent)
        return sent

    def returned_form(self, messages: list[Message]) -> list[Message]:
        """``messages`` with each tool result as the tool returned it (see :meth:`sent_form`)."""
        self._load_returned(messages)
        return [self._copy(m) for m in messages]

    def _copy(self, msg: Message) -> Message:
        if msg.role != "tool" or msg.id is None:
            return msg
        returned = self._returned.get(msg.id)
        if returned is None:
            return msg
        copy = self._copies.get(msg.id)
        if copy is None or copy.pinned != msg.pinned:
            text, tokens = returned
            copy = msg.model_copy(update={"content": text, "tokens": tokens})
            self._copies[msg.id] = copy
        return copy

    def _load_returned(self, messages: list[Message]) -> None:
        missing = [
            m.id
            for m in messages
            if m.role == "tool" and m.id is not None and m.id not in self._returned
        ]
        if not missing:
            return
        by_id = {m.id: m for m in messages if m.id is not None}
        found: dict[int, str] = {}
        for start in range(0, len(missing), LOOKUP_BATCH):
            for obs in self.store.observations_for_messages(missing[start : start + LOOKUP_BATCH]):
                if obs.message_id is not None:
                    found[obs.message_id] = obs.text
        for mid in missing:
            text = found.get(mid)
            stored = by_id[mid]
            if text is None or text == stored.content:
                self._returned[mid] = None
                continue
            counted = stored.model_copy(update={"content": text, "tokens": None})
            self._returned[mid] = (text, ensure_counted(counted))

    def tokens(self) -> int:
        """Tokens of L3 as stored: summaries plus history messages (cached counts)."""
        return sum(s.tokens or 0 for s in self._history.summaries) + sum(
            m.tokens or 0 for m in self._history.messages
        )

    def kept_tokens(self) -> int:
        """Tokens of the rounds a compaction would keep (the keep zone) plus summaries."""
        return keep_zone_tokens(self._history, self.settings.keep_rounds)

    # ------------------------------------------------------------------ writes
    def open_round(self, user_text: str) -> tuple[Round, Message]:
        msg = Message(role="user", content=user_text)
        ensure_counted(msg)
        rnd, stored = self.store.open_round(self.session_id, msg)
        self._history.messages.append(stored)
        return rnd, stored

    def append(self, round_index: int, message: Message) -> Message:
        """Write one step to history at once (seed A2: the history is written step by step)."""
        ensure_counted(message)
        stored = self.store.append_message(self.session_id, round_index, message)
        self._history.messages.append(stored)
        return stored

    def finish_round(
        self, round_index: int, status: RoundStatus, error: str | None = None
    ) -> Round:
        return self.store.finish_round(self.session_id, round_index, status, error)

    def close_dangling(self, round_index: int, reason: str, answer: str) -> list[Message]:
        """Pair every unanswered tool_use of a round, then end it with an assistant message.

        Used on cancellation and on restart after a crash, so that the stored history is
        always a valid API conversation.
        """
        written: list[Message] = []
        msgs = [m for m in self._history.messages if m.meta.round == round_index]
        answered = {m.meta.tool_use_id for m in msgs if m.role == "tool"}
        for msg in msgs:
            for call in msg.tool_calls:
                if call.id in answered:
                    continue
                content = json.dumps(
                    {"status": "error", "error": {"code": "interrupted", "message": reason}}
                )
                written.append(
                    self.append(
                        round_index,
                        Message(
                            role="tool",
                            content=content,
                            meta=MessageMeta(
                                step=msg.meta.step,
                                tool_name=call.name,
                                tool_use_id=call.id,
                                is_error=True,
                                interrupted=True,
                            ),
                        ),
                    )
                )
        if not msgs or not (msgs[-1].role == "assistant" and msgs[-1].meta.final):
            written.append(
                self.append(
                    round_index,
                    Message(
                        role="assistant",
                        content=answer,
                        meta=MessageMeta(final=True, interrupted=True),
                    ),
                )
            )
        return written

    # ------------------------------------------------------------------ compaction
    def undo(self, compaction_id: int | None = None) -> Compaction:
        """Reverse the latest compaction (see :meth:`Store.undo_compaction`)."""
        undone = self.store.undo_compaction(self.session_id, compaction_id)
        self.reload()
        return undone

    def pin(self, message_ids: list[int], pinned: bool = True) -> int:
        """Pin (or unpin) history messages; a pinned message is never archived."""
        changed = self.store.pin(self.session_id, message_ids, pinned)
        self.reload()
        return changed

    @property
    def pinned_ids(self) -> frozenset[int]:
        """The ids of the pinned messages in history."""
        return self._pinned
