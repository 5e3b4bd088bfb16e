"""``ctxscope steer-check ID``: a session's request sequence replayed under steering rules
against a model of the prompt cache, beside the same sequence passed through.

The sequence is a proxied session's conversation requests as they were sent (its compaction
calls included), or, for an imported session, the requests its recording implies: at each
assistant step, everything said before it, with the cache markers Claude Code puts (on the
system prompt and on the last message's last block, at the lifetime the recorded usage shows)
and the agent's unrecorded system prompt and tools as one block of the size its first call
reported (:func:`engine.recordings.hidden.hidden_prefix`). Each request is charged by
:class:`~engine.proxy.cache_sim.WireCache` at the time it was made, once as sent and once as
the rules (:class:`~engine.proxy.steering.Steerer`) would have sent it, and priced at list
price with its recorded output. Each rule alone, then all of them: a rule whose row costs more
than passing through loses money on this session, and the table says so.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.figures.prices import price_for
from engine.models import Usage
from engine.proxy.cache_sim import BlockReader, CacheUse, WireCache
from engine.proxy.conversation import pinned_texts
from engine.proxy.identity import api_of
from engine.proxy.steering import RULES, SteerConfig, Steerer
from engine.recordings.export import export_jsonl
from engine.recordings.hidden import hidden_prefix
from engine.settings.config import Settings
from engine.store import Store

COMPACT_PROMPT = (
    "Your task is to create a detailed summary of the conversation so far, paying close "
    "attention to the user's explicit requests and your previous actions."
)
"""The opening of Claude Code's compact prompt, standing in for it in an imported session
(identity.is_compaction knows it)."""
HIDDEN = "(the agent's system prompt and tools, not in its recording)"


@dataclass
class Step:
    """One request of the sequence."""

    body: dict[str, Any]
    at: float
    """Seconds since the session's first request."""
    output_tokens: int = 0
    recorded: Usage | None = None
    model: str = ""


@dataclass
class Row:
    """One way of sending the sequence: totals."""

    name: str
    requests: int = 0
    uncached: int = 0
    cache_read: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    cost: float | None = 0.0
    rewrites: dict[str, int] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    """Tokens each rule took out of the requests it first rewrote."""
    failed: int = 0

    def add(self, use: CacheUse, cost: float | None) -> None:
        self.requests += 1
        self.uncached += use.uncached
        self.cache_read += use.read
        self.cache_write_5m += use.write_5m
        self.cache_write_1h += use.write_1h
        self.cost = None if cost is None or self.cost is None else self.cost + cost

    def as_json(self, against: Row | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "requests": self.requests,
            "input": self.uncached,
            "cache_read": self.cache_read,
            "cache_write_5m": self.cache_write_5m,
            "cache_write_1h": self.cache_write_1h,
            "cost": None if self.cost is None else round(self.cost, 4),
            "rewrites": self.rewrites,
            "removed_tokens": self.removed,
            "failed": self.failed,
        }
        if against is not None and self.cost is not None and against.cost is not None:
            out["saves"] = round(against.cost - self.cost, 4)
            out["loses_money"] = self.cost > against.cost + 1e-9
        return out


class NoRequests(ValueError):
    """The session holds no request sequence to check."""


def proxied_steps(store: Store, session_id: int) -> list[Step]:
    """A proxied session's conversation requests (and compaction calls), as sent."""
    exchanges = [
        e
        for e in store.exchanges(session_id)
        if e.kind in ("main", "compaction") and api_of(e.path) == "messages"
    ]
    if not exchanges:
        return []
    start = exchanges[0].created_at
    return [
        Step(
            e.request,
            (e.created_at - start).total_seconds(),
            e.usage.output_tokens if e.usage else 0,
            e.usage,
            e.model,
        )
        for e in exchanges
    ]


def imported_steps(store: Store, session_id: int) -> list[Step]:
    """The requests an imported session's recording implies (see the module docstring)."""
    session = store.get_session(session_id)
    lines = [json.loads(x) for x in export_jsonl(store, session_id, True).splitlines() if x]
    usages = [x["usage"] for x in lines if isinstance(x.get("usage"), dict)]
    hour = any(int(u.get("cache_creation_1h_input_tokens") or 0) for u in usages)
    marker: dict[str, Any] = {"type": "ephemeral", **({"ttl": "1h"} if hour else {})}
    prefix = hidden_prefix(store, session_id)
    system = [{"type": "text", "text": HIDDEN, "_tokens": prefix.tokens if prefix else 0,
               "cache_control": marker}]  # fmt: skip
    messages: list[dict[str, Any]] = []
    steps: list[Step] = []
    start: datetime | None = None

    def at(line: dict[str, Any]) -> float:
        nonlocal start
        when = datetime.fromisoformat(str(line.get("timestamp")))
        start = start or when
        return (when - start).total_seconds()

    def request(extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        sent = copy.deepcopy(messages + (extra or []))
        last = sent[-1]["content"]
        if isinstance(last, list) and last:
            last[-1]["cache_control"] = marker
        return {"model": session.model, "system": system, "messages": sent}

    for line in lines:
        content = line.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if line.get("compact_summary"):
            if messages:
                steps.append(Step(request([_user(COMPACT_PROMPT)]), at(line), 0, None,
                                  session.model))  # fmt: skip
            messages = [_user(str(content))]
            continue
        if line.get("role") == "assistant":
            if messages:
                usage = line.get("usage") or {}
                recorded = Usage(**{k: int(v) for k, v in usage.items() if k in Usage.model_fields})
                steps.append(Step(request(), at(line), recorded.output_tokens, recorded,
                                  session.model))  # fmt: skip
            messages.append({"role": "assistant", "content": blocks})
        elif messages and messages[-1]["role"] == "user":
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": "user", "content": blocks})
    return steps


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def steps_of(store: Store, session_id: int) -> list[Step]:
    steps = proxied_steps(store, session_id) or imported_steps(store, session_id)
    if not steps:
        raise NoRequests(f"session {session_id} holds no request sequence to check")
    return steps


def run(
    steps: list[Step],
    settings: Settings,
    rules: tuple[str, ...],
    stale_turns: int = 10,
    pins: Callable[[], list[str]] = lambda: [],
    horizon: float = 0.25,
) -> Row:
    """The sequence sent through ``rules`` (none: passed through), charged by the cache."""
    name = ",".join(rules) or "pass-through"
    row = Row(name)
    model = next((s.model for s in steps if s.model), "")
    price = price_for(settings, model)
    cache = WireCache(price.min_cacheable)
    reader = _Reader()
    steerer = Steerer(SteerConfig(rules, stale_turns, horizon, pins))
    for step in steps:
        body = step.body
        if rules:
            steered = steerer.steer(body, step.at)
            row.failed += bool(steered.failed)
            for r in steered.rewrites:
                row.rewrites[r.rule] = row.rewrites.get(r.rule, 0) + r.first
                if r.first:
                    removed = r.tokens_before - r.tokens_after
                    row.removed[r.rule] = row.removed.get(r.rule, 0) + removed
            body = steered.body if steered.body is not None else body
        use = cache.use(reader.blocks(body), step.at)
        row.add(use, price.usage_cost(use.usage(step.output_tokens)))
    return row


class _Reader(BlockReader):
    """Blocks, with the imported session's stand-in for the unrecorded prefix sized as
    reported (its ``_tokens``)."""

    def blocks(self, body: dict[str, Any]) -> list[Any]:
        out = super().blocks(body)
        system = body.get("system")
        if isinstance(system, list) and system and "_tokens" in system[0]:
            tools = len(body.get("tools") or [])
            first = out[tools]
            out[tools] = type(first)(first.key, int(system[0]["_tokens"]), first.lifetime)
        return out


def recorded_row(steps: list[Step], settings: Settings) -> Row | None:
    """What the API reported for the sequence (a proxied session), for comparison."""
    used = [s for s in steps if s.recorded is not None]
    if not used:
        return None
    row = Row("as the API reported")
    price = price_for(settings, next((s.model for s in steps if s.model), ""))
    for s in used:
        u = s.recorded
        assert u is not None
        hour = u.cache_creation_1h_input_tokens
        use = CacheUse(
            u.cache_read_input_tokens, u.cache_creation_input_tokens - hour, hour, u.input_tokens
        )
        row.add(use, price.usage_cost(u))
    return row


def steer_check(
    store: Store,
    session_id: int,
    settings: Settings,
    rules: tuple[str, ...] = RULES,
    stale_turns: int = 10,
    horizon: float = 0.25,
) -> dict[str, Any]:
    """Pass-through, each rule alone, then the rules together (more than one)."""
    steps = steps_of(store, session_id)
    pinned = pinned_texts(store, session_id) if "pins" in rules else []
    pins = lambda: pinned  # noqa: E731 - the same texts for every request
    base = run(steps, settings, ())
    rows = [run(steps, settings, (rule,), stale_turns, pins, horizon) for rule in rules]
    if len(rules) > 1:
        rows.append(run(steps, settings, rules, stale_turns, pins, horizon))
    recorded = recorded_row(steps, settings)
    return {
        "session_id": session_id,
        "requests": len(steps),
        "model": next((s.model for s in steps if s.model), ""),
        "stale_turns": stale_turns,
        "horizon": horizon,
        "pins": len(pinned),
        "recorded": None if recorded is None else recorded.as_json(),
        "rows": [base.as_json(), *(r.as_json(base) for r in rows)],
    }


def check_lines(result: dict[str, Any]) -> list[str]:
    """The table as text, and a line for each rule that loses money."""
    lines = [
        f"session {result['session_id']}: {result['requests']} requests "
        f"({result['model']}), stale after {result['stale_turns']} turns (horizon "
        f"{result['horizon']:g}), "
        f"{result['pins']} pins; the prompt cache modelled (5 min / 1 h, 20-block lookback)",
        f"  {'rules':<16}{'input':>11}{'cache read':>13}{'write 5m':>11}{'write 1h':>11}"
        f"{'cost':>11}{'saves':>10}  removed",
    ]
    for row in [*([result["recorded"]] if result["recorded"] else []), *result["rows"]]:
        cost = "–" if row["cost"] is None else f"${row['cost']:.4f}"
        saves = "" if "saves" not in row else f"${row['saves']:.4f}"
        removed = ", ".join(
            f"{rule} {row['rewrites'].get(rule, 0)}× {tokens:,} tok"
            for rule, tokens in row["removed_tokens"].items()
        )
        lines.append(
            f"  {row['name']:<16}{row['input']:>11,}{row['cache_read']:>13,}"
            f"{row['cache_write_5m']:>11,}{row['cache_write_1h']:>11,}{cost:>11}{saves:>10}  "
            + (removed or "–")
            + (f"; {row['failed']} requests failed, sent as they came" if row["failed"] else "")
        )
    for row in result["rows"]:
        if row.get("loses_money"):
            lines.append(
                f"  {row['name']} loses money on this session: ${-row['saves']:.4f} more than "
                "passing through"
            )
    return lines
