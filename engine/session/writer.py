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
from engine.session.core import CRASH_ANSWER, CRASH_RESULT, AgentCore, Known
from engine.store import Lease, SessionBusy


class WriterLease:
    """The session's writer lease around every write of the agent."""

    def __init__(self, core: AgentCore, wait: float = 0.0) -> None:
        self.core = core
        self.wait = wait
        """Seconds ``run`` and ``compact`` wait for another writer of the session (0: refuse)."""
        self._lease: Lease | None = None

    @property
    def held(self) -> bool:
        """Whether this agent holds the session's writer lease now."""
        return self._lease is not None

    def recover(self) -> list[int]:
        """Close rounds left open by a crash — only when no live process writes the session.

        An open round whose writer still runs is live, not crashed: it is left alone. A
        read-only store never writes.
        """
        store = self.core.store
        if self._lease is not None:
            return self._close_crashed_rounds()
        if store.read_only:
            return []
        try:
            lease = store.acquire_lease(self.core.session_id, "recovery")
        except SessionBusy:
            return []
        with lease:
            return self._close_crashed_rounds()

    def _catch_up(self) -> None:
        """Reload what another process wrote while this agent was not the writer."""
        core = self.core
        hist = core.history.history
        seen = (
            max((m.id or 0 for m in hist.messages), default=0),
            len(hist.messages),
            max((s.id or 0 for s in hist.summaries), default=0),
        )
        if core.store.history_marker(core.session_id) != seen:
            core.history.reload()
        core.tool_ctx.todos = core.store.get_todos(core.session_id)

    def _close_crashed_rounds(self) -> list[int]:
        """Mark open rounds as interrupted, pairing their tool calls (the lease is held)."""
        core = self.core
        fixed = []
        for rnd in core.store.open_rounds(core.session_id):
            if rnd.index == core.current_round:
                continue
            core.history.close_dangling(rnd.index, CRASH_RESULT, CRASH_ANSWER)
            core.history.finish_round(rnd.index, RoundStatus.INTERRUPTED, "crashed")
            fixed.append(rnd.index)
        if fixed:
            core.history.reload()
        return fixed

    @contextmanager
    def writing(self, purpose: str = "round") -> Iterator[None]:
        """Hold the session's writer lease (one writer at a time; re-entrant).

        Raises :class:`~engine.store.SessionBusy` when another live process writes the
        session and ``wait`` runs out. On entry, rounds a dead writer left open are
        closed as crashed.
        """
        if self._lease is not None:
            yield
            return
        core = self.core
        self._lease = core.store.acquire_lease(core.session_id, purpose, wait=self.wait)
        # What the agent knows of the session's usage and compactions holds for this lease only.
        core.known = Known()
        try:
            self._catch_up()
            self._close_crashed_rounds()
            yield
        finally:
            lease, self._lease = self._lease, None
            core.known = None
            try:
                self._keep_token_counts()
            finally:
                lease.release()

    def _keep_token_counts(self) -> None:
        """Store the counts of the texts every request repeats that the database lacks, so
        the next ``context`` or workbench need not load the tokenizer."""
        texts = [t for t in self.core.builder.repeated_texts() if t]
        counts = {text_digest(t): count_repeated(t) for t in texts}
        stored = self.core.stored_counts
        new = {d: n for d, n in counts.items() if d not in stored}
        if new:
            self.core.store.remember_token_counts(new)
            stored.update(new)
