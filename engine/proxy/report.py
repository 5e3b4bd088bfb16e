"""The stored requests of a proxied session as a context: each request layer by layer, what
changed since the request before, where the cached prefix broke and why, and what it cost.

Tokens per layer: the API reports one input figure per request (uncached input + cache reads
+ cache writes); the layers (tools, system, history, the newest input) are counted locally
and scaled so they add up to it. Without usage (an error, a cancelled call) they are the local
counts. The cached prefix is the request in the API's order, tools then system then
messages; it breaks at the first piece that differs from the request before, cache markers
aside (a marker moving is no change).
"""

from __future__ import annotations

from typing import Any

from engine.exchanges import Exchange
from engine.messages.tokens import (
    MESSAGE_OVERHEAD,
    compact_json,
    count_blocks,
    count_system,
    count_text,
    count_tools,
)
from engine.proxy.identity import continues_after_compaction, texts, without_cache_control
from engine.proxy.request_row import RequestRow
from engine.settings.config import Settings
from engine.store.exchanges import canonical, digest
from engine.terminal_text import cut

LAYERS = ("tools", "system", "history", "input")
"""A request's layers, in the order the API reads them."""

CACHE_LIFETIME = 300.0
"""Seconds a 5-minute cache entry lives after its last use."""
CACHE_LIFETIME_1H = 3600.0
"""Seconds a 1-hour cache entry lives (Claude Code writes its cache so)."""


def _list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, str) and value:
        return [{"type": "text", "text": value}]
    return []


class _Counter:
    """Local token counts of message contents, each distinct message counted once."""

    def __init__(self) -> None:
        self._known: dict[str, int] = {}

    def message(self, message: Any) -> int:
        key = digest(canonical(without_cache_control(message)))
        if key not in self._known:
            if isinstance(message, dict) and "content" not in message:
                # A Responses API item without content (a function call, its output).
                self._known[key] = MESSAGE_OVERHEAD + count_text(compact_json(message))
            else:
                content = message.get("content", "") if isinstance(message, dict) else ""
                blocks = content if isinstance(content, (list, str)) else ""
                self._known[key] = MESSAGE_OVERHEAD + count_blocks(blocks)
        return self._known[key]


def view(body: dict[str, Any]) -> dict[str, Any]:
    """A request in the Messages API's terms: a Responses API body's ``instructions`` are its
    system, its ``input`` items its messages."""
    if "messages" in body or ("input" not in body and "instructions" not in body):
        return body
    items = body.get("input")
    return {
        "system": body.get("instructions"),
        "tools": body.get("tools"),
        "messages": items if isinstance(items, list) else [{"role": "user", "content": items}],
    }


def layers(exchange: Exchange, counter: _Counter) -> tuple[dict[str, int], str]:
    """Tokens per layer and where the figures come from (``usage`` or ``local``)."""
    body = view(exchange.request)
    messages = _list(body.get("messages"))
    tools = [t for t in _list(body.get("tools")) if isinstance(t, dict)]
    system = body.get("system")
    local = {
        "tools": count_tools(tools),
        "system": count_system(system) if isinstance(system, (str, list)) else 0,
        "history": sum(counter.message(m) for m in messages[:-1]),
        "input": counter.message(messages[-1]) if messages else 0,
    }
    usage = exchange.usage
    total = usage.input_side if usage is not None else 0
    counted = sum(local.values())
    if not total or not counted:
        return local, "local"
    scaled = {name: round(tokens * total / counted) for name, tokens in local.items()}
    largest = max(scaled, key=lambda name: scaled[name])
    scaled[largest] += total - sum(scaled.values())  # what rounding lost or added
    return scaled, "usage"


def _pieces(body: dict[str, Any], key: str) -> list[str]:
    return [digest(canonical(without_cache_control(p))) for p in _list(body.get(key))]


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [str(t.get("name", "")) for t in _list(body.get("tools")) if isinstance(t, dict)]


def diff(previous: Exchange | None, exchange: Exchange) -> dict[str, Any]:
    """What changed from ``previous`` to ``exchange``, and where the cached prefix broke."""
    body = view(exchange.request)
    messages = _pieces(body, "messages")
    if previous is None:
        return {
            "appended": len(messages),
            "appended_kinds": _kinds(_list(body.get("messages"))),
            "kept": 0,
            "removed": 0,
            "changed": [],
            "cache_break": None,
        }
    before = view(previous.request)
    old_messages = _pieces(before, "messages")
    kept = 0
    for mine, theirs in zip(messages, old_messages, strict=False):
        if mine != theirs:
            break
        kept += 1
    changed: list[str] = []
    breaks: list[tuple[str, str]] = []
    old_names, names = _tool_names(before), _tool_names(body)
    if _pieces(before, "tools") != _pieces(body, "tools"):
        added = [n for n in names if n not in old_names]
        dropped = [n for n in old_names if n not in names]
        if added or dropped:
            why = "tools " + ", ".join([*(f"+{n}" for n in added), *(f"-{n}" for n in dropped)])
        elif sorted(names) == sorted(old_names) and names != old_names:
            why = "the tool list was reordered"
        else:
            why = "a tool definition changed"
        changed.append(why)
        breaks.append(("tools", why))
    old_system, system = _pieces(before, "system"), _pieces(body, "system")
    if old_system != system:
        at = next(
            (i for i, (a, b) in enumerate(zip(old_system, system, strict=False)) if a != b),
            min(len(old_system), len(system)),
        )
        why = (
            f"system block {at} changed"
            if at < min(len(old_system), len(system))
            else (
                "a system block was added"
                if len(system) > len(old_system)
                else "a system block was removed"
            )
        )
        changed.append(why)
        breaks.append((f"system[{at}]", why))
    removed = len(old_messages) - kept
    if removed:
        changed.append(f"{removed} message(s) from {kept} on changed or vanished")
        breaks.append((f"messages[{kept}]", _message_change(previous, exchange, kept)))
    cache_break = None
    if breaks:
        where, why = breaks[0]
        cache_break = {"where": where, "why": why}
    elif exchange.usage is not None and previous.usage is not None:
        gap = (exchange.created_at - previous.created_at).total_seconds()
        cached = previous.usage.cache_creation_input_tokens + previous.usage.cache_read_input_tokens
        if cached and not exchange.usage.cache_read_input_tokens:
            hour = previous.cache_creation.get("ephemeral_1h_input_tokens", 0) > 0
            lifetime = CACHE_LIFETIME_1H if hour else CACHE_LIFETIME
            why = (
                f"the cache expired ({gap:.0f} s since the previous request)"
                if gap > lifetime
                else "no cache read although the prefix is the same"
            )
            cache_break = {"where": "tools", "why": why}
    return {
        "appended": len(messages) - kept,
        "appended_kinds": _kinds(_list(body.get("messages"))[kept:]),
        "kept": kept,
        "removed": removed,
        "changed": changed,
        "cache_break": cache_break,
    }


def _kinds(messages: list[Any]) -> list[str]:
    """Each message as its role and block types: ``assistant text tool_use``."""
    out = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        kinds = (
            ["text"]
            if isinstance(content, str)
            else [str(b.get("type")) for b in content if isinstance(b, dict)]
            if isinstance(content, list)
            else [str(message.get("type", ""))]
        )
        out.append(" ".join([str(message.get("role", message.get("type", "?"))), *kinds]))
    return out


def _message_change(previous: Exchange, exchange: Exchange, at: int) -> str:
    """Why history differs from message ``at`` on: a compaction, a reminder, an edit."""
    if exchange.kind == "compaction":
        return "a compaction's summary request"
    if continues_after_compaction(exchange.request) and not continues_after_compaction(
        previous.request
    ):
        return "a compaction replaced the history with its summary"
    old = _list(view(previous.request).get("messages"))
    text = " ".join(texts(old[at])) if at < len(old) else ""
    if "<system-reminder>" in text:
        return f"a system reminder in message {at} changed"
    return f"message {at} changed"


def request_report(exchanges: list[Exchange], settings: Settings) -> list[dict[str, Any]]:
    """``show --json``'s ``requests[]``: each stored request, in order."""
    counter = _Counter()
    out: list[dict[str, Any]] = []
    running = 0.0
    previous: Exchange | None = None
    previous_total = 0
    for exchange in exchanges:
        tokens, source = layers(exchange, counter)
        row = RequestRow.of(exchange, settings)
        # the running cost adds only what has a price (RequestRow.cost)
        running += row.cost or 0.0
        total = sum(tokens.values())
        response = exchange.response or {}
        out.append(
            {
                "id": row.id,
                "kind": row.kind,
                "model": row.model,
                "path": row.path,
                "status": row.status,
                "outcome": row.outcome,
                "stream": row.stream,
                "created_at": row.created_at.isoformat(),
                "duration_ms": round(row.duration_ms, 1),
                "layers": [{"name": n, "tokens": tokens[n]} for n in LAYERS],
                "tokens_from": source,
                "input_tokens": total,
                "output_tokens": row.usage.output_tokens if row.usage is not None else 0,
                "usage": row.usage_json,
                "stop_reason": response.get("stop_reason"),
                "shrank": previous is not None and total < previous_total,
                **diff(previous, exchange),
                "cost": row.cost_json,
                "running_cost": round(running, 6),
            }
        )
        if exchange.kind == "main" or previous is None:
            # A compaction's call is compared with the conversation, and so is the request
            # after it: the conversation's requests follow one another.
            previous, previous_total = exchange, total
    return out


def request_lines(requests: list[dict[str, Any]]) -> list[str]:
    """``show``'s text: one line a request, and one more where its cached prefix broke."""
    if not requests:
        return []
    lines = [f"{len(requests)} proxied requests:"]
    for r in requests:
        usage = r["usage"] or {}
        layer_text = " ".join(f"{x['name']} {x['tokens']:,}" for x in r["layers"])
        lines.append(
            f"  #{r['id']} {r['kind']} {cut(r['model'], 40)} {r['status']} {r['outcome']}: "
            f"in {r['input_tokens']:,} ({layer_text}) out {r['output_tokens']:,}, "
            f"+{r['appended']} -{r['removed']} messages, cache read "
            f"{usage.get('cache_read_input_tokens', 0):,} write "
            f"{usage.get('cache_creation_input_tokens', 0):,}, "
            + (f"${r['cost']:.4f} " if r["cost"] is not None else "no price ")
            + f"(running ${r['running_cost']:.4f})"
            + (" — shrank" if r["shrank"] else "")
        )
        if r["cache_break"]:
            lines.append(
                f"      cache prefix broke at {r['cache_break']['where']}: "
                f"{cut(r['cache_break']['why'], 200)}"
            )
    return lines
