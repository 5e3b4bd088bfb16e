"""What each compaction lost, by name: the ledger items of the part it compacted that are
absent from what followed.

For a compaction that took effect (not undone) the part it compacted is its archived segment;
what followed is the context right after it: its summary, and the messages it kept (those
written before it that neither it nor an earlier compaction archived). An item of the segment's
ledger (:mod:`engine.compaction.ledger`: a file read or changed, a command, an error, a user's
request, a decision) is

- **kept** when the summary names it (:func:`engine.compaction.ledger.present`),
- **carried** when a kept message has the same item (the file was read again in a kept round),
- **lost** otherwise, listed by its key with where it was: round, step and message id.

Computed from what the store holds, for any compaction: a recorded one (made by the original
agent, scored against ctxscope's ledger), ctxscope's own, one stored before this module existed.
:func:`history_losses` is the same ledger across many sessions (the report card's "your
compactions lost 31 % of the errors they covered").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.compaction.ledger import KINDS, LedgerItem, extract_ledger, present
from engine.models import ArchivedSegment, Compaction, Message, Observation, Session, Summary
from engine.terminal_text import plural

NAMES = {
    "file_read": "files read",
    "file_changed": "files changed",
    "command": "commands",
    "error": "errors",
    "request": "requests",
    "decision": "decisions",
}
"""Each kind as the lost lines name it."""


class LossSource(Protocol):
    """What :func:`session_losses` reads from the store."""

    def get_session(self, session_id: int) -> Session: ...
    def compactions(self, session_id: int) -> list[Compaction]: ...
    def segments(self, session_id: int) -> list[ArchivedSegment]: ...
    def all_messages(self, session_id: int) -> list[Message]: ...
    def observations_for_messages(self, message_ids: list[int]) -> list[Observation]: ...
    def summary(self, summary_id: int) -> Summary: ...
    def stored_losses(self, session_id: int) -> tuple[list[int], list[dict[str, Any]]] | None: ...
    def keep_losses(
        self, session_id: int, compactions: Sequence[int], losses: list[dict[str, Any]]
    ) -> bool: ...


@dataclass
class CompactionLosses:
    """One compaction's ledger: what it covered, what the summary kept, what it lost."""

    compaction_id: int
    session_id: int
    recorded: bool
    """Made by the original agent (imported or watched), not by ctxscope."""
    first_round: int
    last_round: int
    covered: dict[str, int]
    """Items of the compacted part, by kind (every kind of :data:`KINDS`)."""
    kept: dict[str, int]
    """Of those, named by the summary."""
    carried: dict[str, int]
    """Of those not named, still in a message the compaction kept."""
    lost: list[LedgerItem] = field(default_factory=list)
    """The rest, in order of first appearance."""

    def lost_of(self, kind: str) -> list[LedgerItem]:
        return [item for item in self.lost if item.kind == kind]

    def as_json(self) -> dict[str, Any]:
        return {
            "compaction_id": self.compaction_id,
            "session_id": self.session_id,
            "recorded": self.recorded,
            "rounds": [self.first_round, self.last_round],
            "covered": self.covered,
            "kept": self.kept,
            "carried": self.carried,
            "lost_count": {kind: len(self.lost_of(kind)) for kind in KINDS},
            "lost": [item_json(item) for item in self.lost],
        }


def losses_of_json(data: dict[str, Any]) -> CompactionLosses:
    """:meth:`CompactionLosses.as_json` read back."""
    first, last = data["rounds"]
    return CompactionLosses(
        compaction_id=data["compaction_id"],
        session_id=data["session_id"],
        recorded=data["recorded"],
        first_round=first,
        last_round=last,
        covered=dict(data["covered"]),
        kept=dict(data["kept"]),
        carried=dict(data["carried"]),
        lost=[LedgerItem(**item) for item in data["lost"]],
    )


def item_json(item: LedgerItem) -> dict[str, Any]:
    """A ledger item as ``--json`` writes it: what it is, and where it was."""
    return {
        "kind": item.kind,
        "key": item.key,
        "round": item.round,
        "step": item.step,
        "message_id": item.message_id,
        "detail": item.detail,
    }


def where(item: LedgerItem) -> str:
    """``round 3, message 41`` (the step too when there is one)."""
    parts = [f"round {item.round}" if item.round is not None else "round ?"]
    if item.step is not None:
        parts.append(f"step {item.step}")
    if item.message_id is not None:
        parts.append(f"message {item.message_id}")
    return ", ".join(parts)


def compaction_losses(
    compaction: Compaction,
    segment: Sequence[Message],
    observations: Iterable[Observation],
    summary_text: str,
    kept_messages: Sequence[Message],
    cwd: str = "",
) -> CompactionLosses:
    """The ledger of one compaction (see the module docstring); ``observations`` are the
    segment's tool results in full, ``kept_messages`` what the compaction left in history."""
    items = extract_ledger(segment, observations, cwd).items
    named = present(items, summary_text)
    still = {(i.kind, i.key) for i in extract_ledger(kept_messages, (), cwd).items}
    covered = dict.fromkeys(KINDS, 0)
    kept = dict.fromkeys(KINDS, 0)
    carried = dict.fromkeys(KINDS, 0)
    lost: list[LedgerItem] = []
    for item, here in zip(items, named, strict=True):
        covered[item.kind] = covered.get(item.kind, 0) + 1
        if here:
            kept[item.kind] = kept.get(item.kind, 0) + 1
        elif (item.kind, item.key) in still:
            carried[item.kind] = carried.get(item.kind, 0) + 1
        else:
            lost.append(item)
    rounds = [m.meta.round for m in segment if m.meta.round is not None] or [0]
    return CompactionLosses(
        compaction_id=compaction.id or 0,
        session_id=compaction.session_id,
        recorded=bool(compaction.stats.get("recorded")),
        first_round=min(rounds),
        last_round=max(rounds),
        covered=covered,
        kept=kept,
        carried=carried,
        lost=lost,
    )


def session_losses(
    store: LossSource, session_id: int, compactions: Sequence[Compaction] | None = None
) -> list[CompactionLosses]:
    """Every compaction of the session that archived something (oldest first), with what it
    lost. Paths are compared relative to the session's folder, as the fidelity figures are.

    Worked out once and stored (what a compaction archived does not change): read back while
    the session's compactions are the ones it was made for. ``compactions``: every compaction
    of the session (:meth:`Store.compactions`), where the caller has read them (``report``
    reads all sessions' in one query): then a stored ledger costs its own read alone."""
    stored = store.stored_losses(session_id)
    if compactions is None:
        compactions = store.compactions(session_id)
    ids = [c.id for c in compactions if c.id is not None]
    if stored is not None and stored[0] == ids:
        return [losses_of_json(data) for data in stored[1]]
    out = _work_out_losses(store, session_id, list(compactions))
    store.keep_losses(session_id, ids, [loss.as_json() for loss in out])
    return out


def _work_out_losses(
    store: LossSource, session_id: int, compactions: list[Compaction]
) -> list[CompactionLosses]:
    segments = store.segments(session_id)
    if not segments:
        return []
    by_id = {c.id: c for c in compactions}
    cwd = store.get_session(session_id).workspace
    # What a compaction kept is needed only when it kept something (a recorded compaction
    # archives everything before it): the session's messages are read only then.
    keeps = any(c.messages_retained for c in by_id.values())
    everything = store.all_messages(session_id) if keeps else []
    archived_before: set[int] = set()
    out = []
    for seg in segments:
        compaction = by_id.get(seg.compaction_id)
        if compaction is None:
            continue
        ids = [m.id for m in seg.messages if m.id is not None]
        archived_before.update(ids)
        kept = [
            m
            for m in everything
            if m.id not in archived_before and m.created_at <= compaction.created_at
        ]
        tool_ids = [m.id for m in seg.messages if m.role == "tool" and m.id is not None]
        observations = store.observations_for_messages(tool_ids) if tool_ids else []
        summary = store.summary(seg.summary_id).content if seg.summary_id is not None else ""
        out.append(compaction_losses(compaction, seg.messages, observations, summary, kept, cwd))
    return out


def lost_lines(losses: CompactionLosses, limit: int | None = None) -> list[str]:
    """``lost: errors: KeyError: 'x' (round 3, step 2, message 41)`` lines, by kind, for text
    output (at most ``limit`` items per kind; the caller makes them printable)."""
    out = []
    for kind in KINDS:
        items = losses.lost_of(kind)
        if not items:
            continue
        shown = items if limit is None else items[:limit]
        names = "; ".join(f"{item.key} ({where(item)})" for item in shown)
        more = f"; … and {len(items) - len(shown)} more" if len(shown) < len(items) else ""
        out.append(f"lost {NAMES[kind]} {len(items)}/{losses.covered[kind]}: {names}{more}")
    return out


@dataclass
class HistoryLosses:
    """The ledger across many compactions (and sessions)."""

    compactions: int = 0
    covered: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    lost: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    sessions_lost: dict[str, list[int]] = field(default_factory=lambda: {k: [] for k in KINDS})
    """Per kind, the sessions where a compaction lost at least one such item."""

    def add(self, losses: CompactionLosses) -> None:
        self.compactions += 1
        for kind in KINDS:
            self.covered[kind] += losses.covered.get(kind, 0)
            n = len(losses.lost_of(kind))
            self.lost[kind] += n
            if n and losses.session_id not in self.sessions_lost[kind]:
                self.sessions_lost[kind].append(losses.session_id)

    def percent_lost(self, kind: str) -> float | None:
        covered = self.covered[kind]
        return round(100 * self.lost[kind] / covered, 1) if covered else None

    def as_json(self) -> dict[str, Any]:
        return {
            "compactions": self.compactions,
            "by_kind": {
                kind: {
                    "covered": self.covered[kind],
                    "lost": self.lost[kind],
                    "percent_lost": self.percent_lost(kind),
                    "sessions": self.sessions_lost[kind],
                }
                for kind in KINDS
            },
        }

    def lines(self) -> list[str]:
        """``your compactions lost 31 % of the errors they covered (4/13)`` and which sessions
        lost a user's request."""
        parts = [
            f"{self.percent_lost(k):.0f} % of the {NAMES[k]} ({self.lost[k]}/{self.covered[k]})"
            for k in KINDS
            if self.covered[k]
        ]
        if not parts:
            return []
        out = ["your compactions lost " + " · ".join(parts) + " they covered"]
        requests = self.sessions_lost["request"]
        if requests:
            shown = ", ".join(str(s) for s in requests[:10])
            more = f" and {len(requests) - 10} more" if len(requests) > 10 else ""
            out.append(f"{plural(len(requests), 'session')} lost a user's request: {shown}{more}")
        return out


def history_losses(store: LossSource, session_ids: Iterable[int]) -> HistoryLosses:
    """:class:`HistoryLosses` over the compactions of ``session_ids``."""
    total = HistoryLosses()
    for sid in session_ids:
        for losses in session_losses(store, sid):
            total.add(losses)
    return total
