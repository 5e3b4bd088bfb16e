"""One writer per session: the agent's lease (re-entrant, waited for or refused), catching up
with what another process wrote, and closing rounds a crashed writer left open."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from engine.messages.tokens import (
    count_repeated,
    text_digest,
)
from engine.models import (
    RoundStatus,
)
from engine.session.core import CRASH_ANSWER, CRASH_RESULT, AgentCore
from engine.store import SessionBusy


class WriterLease(AgentCore):
    """The session's writer lease around every write of the agent."""

    def _ready(self) -> None:
        self.recover()

    def recover(self) -> list[int]:
        """Close rounds left open by a crash — only when no live process writes the session.

        An open round whose writer still runs is live, not crashed: it is left alone. A
        read-only store never writes.
        """
        if self._lease is not None:
            return self._close_crashed_rounds()
        if self.store.read_only:
            return []
        try:
            lease = self.store.acquire_lease(self.session_id, "recovery")
        except SessionBusy:
            return []
        with lease:
            return self._close_crashed_rounds()

    def _catch_up(self) -> None:
        """Reload what another process wrote while this agent was not the writer."""
        hist = self.history.history
        seen = (
            max((m.id or 0 for m in hist.messages), default=0),
            len(hist.messages),
            max((s.id or 0 for s in hist.summaries), default=0),
        )
        if self.store.history_marker(self.session_id) != seen:
            self.history.reload()
        self.tool_ctx.todos = self.store.get_todos(self.session_id)

    def _close_crashed_rounds(self) -> list[int]:
        """Mark open rounds as interrupted, pairing their tool calls (the lease is held)."""
        fixed = []
        for rnd in self.store.open_rounds(self.session_id):
            if rnd.index == self.current_round:
                continue
            self.history.close_dangling(rnd.index, CRASH_RESULT, CRASH_ANSWER)
            self.history.finish_round(rnd.index, RoundStatus.INTERRUPTED, "crashed")
            fixed.append(rnd.index)
        if fixed:
            self.history.reload()
        return fixed

    @contextmanager
    def writing(self, purpose: str = "round") -> Iterator[None]:
        """Hold the session's writer lease (one writer at a time; re-entrant).

        Raises :class:`~engine.store.SessionBusy` when another live process writes the
        session and ``lease_wait`` runs out. On entry, rounds a dead writer left open are
        closed as crashed.
        """
        if self._lease is not None:
            yield
            return
        self._lease = self.store.acquire_lease(self.session_id, purpose, wait=self.lease_wait)
        # What the agent knows of the session's usage and compactions holds for this lease only.
        self._usage_known = self._compaction_known = None
        try:
            self._catch_up()
            self._close_crashed_rounds()
            yield
        finally:
            lease, self._lease = self._lease, None
            self._usage_known = self._compaction_known = None
            try:
                self._keep_token_counts()
            finally:
                lease.release()

    def _keep_token_counts(self) -> None:
        """Store the counts of the texts every request repeats that the database lacks, so
        the next ``context`` or workbench need not load the tokenizer."""
        texts = [t for t in self.builder.repeated_texts() if t]
        counts = {text_digest(t): count_repeated(t) for t in texts}
        new = {d: n for d, n in counts.items() if d not in self._stored_counts}
        if new:
            self.store.remember_token_counts(new)
            self._stored_counts.update(new)
