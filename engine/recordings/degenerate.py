"""Degenerate compactions: the ones that left the agent with nothing, or cost without freeing.

Read from what the store holds of a session's compactions (recorded or ctxscope's own), each
flag with what it cost where the recording tells:

- ``empty``: the summary holds no text. Cost: the compaction call, when recorded (so for
  each kind below unless said).
- ``opaque``: the summary cannot be read: Codex compacted on the server (encrypted) or kept
  nothing readable (the reader's placeholder, :data:`engine.recordings.codex.SERVER_SUMMARY`),
  or the text is one unbroken run of base64.
- ``envelope_only``: a Codex ``replacement_history`` that holds only the start-up envelope
  (instructions, environment) and none of the conversation (``stats["replacement_history"]``).
- ``duplicate_agents``: more than one compaction agent (Claude Code's ``agent-acompact-*``)
  wrote a summary for one boundary (``stats["duplicate_calls"]``). Cost: the extra agents'
  calls.
- ``spiral``: a compaction within ``degenerate_spiral_requests`` API calls of the one before.
  Cost: the calls in between and the compaction call.
- ``freed_little``: it freed less than ``degenerate_min_freed`` of the context it started
  from: the next call's input against the recorded ``preTokens`` (recorded), tokens after
  against before (ctxscope's own).

A cost is at list price (:mod:`engine.figures.prices`); None when the calls it counts are not in the
recording or the model has no price.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

from engine.figures.prices import Pricing, price_for
from engine.models import Compaction, Outcome, Usage, UsageRecord
from engine.recordings.codex import SERVER_SUMMARY
from engine.settings.config import Settings
from engine.store import Store

KINDS = ("empty", "opaque", "envelope_only", "duplicate_agents", "spiral", "freed_little")
"""Every flag, in the order reports show them."""
_BASE64_RUN = re.compile(r"^[A-Za-z0-9+/=_-]{200,}$")


@dataclass(frozen=True)
class Flag:
    """One degenerate compaction, one reason."""

    kind: str
    session_id: int
    compaction_id: int
    detail: str
    """What was seen, in words (untrusted parts made printable by whoever prints it)."""
    cost: float | None
    """Dollars at list price (None: not recorded, or no price)."""
    cost_of: str
    """What the cost counts."""

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "session_id": self.session_id,
            "compaction_id": self.compaction_id,
            "detail": self.detail,
            "cost": None if self.cost is None else round(self.cost, 6),
            "cost_of": self.cost_of,
        }

    def line(self) -> str:
        """``session 3, compaction 7: spiral — 2 calls after compaction 6 ($0.42: …)``."""
        cost = "no cost known" if self.cost is None else f"${self.cost:,.2f}"
        return (
            f"session {self.session_id}, compaction {self.compaction_id}: {self.kind} — "
            f"{self.detail} ({cost}: {self.cost_of})"
        )


def opaque(text: str) -> bool:
    """A summary no one can read: the Codex placeholder, or one unbroken run of base64."""
    stripped = text.strip()
    return stripped == SERVER_SUMMARY or _BASE64_RUN.match(stripped) is not None


def _usage_cost(price: Pricing, usage: Any, at: Any) -> float | None:
    if not isinstance(usage, dict) or not usage:
        return None
    try:
        recorded = Usage.model_validate({k: v for k, v in usage.items() if isinstance(v, int)})
    except ValueError:
        return None
    return price.usage_cost(recorded, at)


def _call_cost(settings: Settings, model: str, c: Compaction) -> float | None:
    """The compaction call's cost (Claude Code's ``agent-acompact-*`` usage), when recorded."""
    return _usage_cost(
        price_for(settings, str(c.stats.get("model") or model)), c.stats.get("usage"), c.created_at
    )


def _sum(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def session_flags(
    store: Store,
    session_id: int,
    settings: Settings,
    compactions: Sequence[Compaction] | None = None,
    usages: Sequence[UsageRecord] | None = None,
) -> list[Flag]:
    """Every flag of the session's compactions that took effect, oldest first
    (``compactions``: every compaction of the session, where the caller has read them;
    ``usages``: every usage record of the session in the order stored, where the caller
    has them in hand — an import that has just written them)."""
    session = store.get_session(session_id)
    model = session.model or settings.model
    every = store.compactions(session_id) if compactions is None else compactions
    compactions = sorted(
        (
            c
            for c in every
            if c.undone_at is None and c.outcome in (Outcome.SUCCESS, Outcome.FALLBACK)
        ),
        key=lambda c: (c.created_at, c.id or 0),
    )
    if not compactions:
        return []
    records = store.usages(session_id) if usages is None else usages
    usages = sorted(records, key=lambda u: u.created_at)
    times = [u.created_at for u in usages]
    price = cache(partial(price_for, settings, model))  # priced when a flag says a cost
    out: list[Flag] = []
    for k, c in enumerate(compactions):
        call = cache(partial(_call_cost, settings, model, c))

        def call_of(call: Callable[[], float | None] = call) -> str:
            return "the compaction call" + ("" if call() is not None else ", not recorded")

        def flag(
            kind: str, detail: str, cost: float | None, cost_of: str, c: Compaction = c
        ) -> None:
            out.append(Flag(kind, session_id, c.id or 0, detail, cost, cost_of))

        text = store.summary(c.summary_id).content if c.summary_id is not None else ""
        if not text.strip():
            flag("empty", f"the summary is empty: {c.messages_compacted} messages went with "
                 "nothing in their place", call(), call_of())  # fmt: skip
        elif opaque(text):
            flag("opaque", "the summary cannot be read (encrypted, or no readable text "
                 "recorded)", call(), call_of())  # fmt: skip
        history = c.stats.get("replacement_history")
        if isinstance(history, dict) and not history.get("conversation"):
            items = history.get("items", 0)
            flag("envelope_only", f"the replacement history holds {items} items, all start-up "
                 "envelope: none of the conversation", call(), call_of())  # fmt: skip
        extra = c.stats.get("duplicate_calls")
        if isinstance(extra, list) and extra:
            costs = [
                _usage_cost(
                    price_for(settings, str(e.get("model") or model)), e.get("usage"), c.created_at
                )
                for e in extra
                if isinstance(e, dict)
            ]
            flag("duplicate_agents", f"{len(extra) + 1} compaction agents wrote a summary for "
                 "this one boundary", _sum(costs),
                 f"the {len(extra)} extra agents' calls")  # fmt: skip
        if k > 0:
            before = compactions[k - 1]
            first, last = bisect_left(times, before.created_at), bisect_left(times, c.created_at)
            between = usages[first:last]
            if len(between) <= settings.degenerate_spiral_requests:
                cost = _sum([price().total_cost(between) if between else 0.0, call()])
                flag("spiral", f"{len(between)} API calls after compaction {before.id}",
                     cost, "the calls since the last compaction and this one's")  # fmt: skip
        freed = _freed(c, usages, times)
        if freed is not None and freed[0] < settings.degenerate_min_freed:
            share, start, after = freed
            flag("freed_little", f"freed {share:.0%} of {start:,} tokens ({after:,} after)",
                 call(), call_of())  # fmt: skip
    return out


def warning_lines(flags: list[Flag]) -> list[str]:
    """One ``degenerate compaction: …`` line per flag (import's warnings, watch's notices)."""
    return [f"degenerate compaction: {flag.line()}" for flag in flags]


def _freed(
    c: Compaction, usages: list[UsageRecord], times: list[Any]
) -> tuple[float, int, int] | None:
    """(share freed, tokens before, tokens after): a recorded compaction against the next
    call's input, ctxscope's own against its tokens after; None when not measured."""
    pre = c.stats.get("recorded_pre_tokens")
    if isinstance(pre, int) and pre > 0:
        nxt = bisect_right(times, c.created_at)
        if nxt >= len(usages):
            return None  # no call after it yet
        after = usages[nxt].usage.input_side
        return 1 - after / pre, pre, after
    if c.stats.get("recorded") or c.tokens_before <= 0:
        return None
    return 1 - c.tokens_after / c.tokens_before, c.tokens_before, c.tokens_after
