"""What-ifs on real requests: the proxied conversation replayed under each ctxscope strategy.

The conversation's last request (its messages, then the answer it got) becomes Anthropic
JSON lines, each answer carrying the usage its request was recorded with; they are imported
into a scratch database, and :func:`engine.replay.parallel.replay_strategies` replays them
under each strategy, as ``ctxscope replay`` does an imported session: per strategy the steps,
compactions, peak and total input, cache reads and writes, cost, and — the as-recorded figure
— the input the recorded requests really sent (``total_input_original``). As for any replay
of a recording, ctxscope's own system prompt and tools stand in for the agent's.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from engine.compaction.strategies import STRATEGIES
from engine.exchanges import Exchange
from engine.figures.prices import price_for
from engine.proxy.identity import api_of, without_cache_control
from engine.recordings.anthropic_jsonl import BLOCK_TYPES
from engine.recordings.importing import import_session
from engine.replay.parallel import replay_strategies
from engine.settings.config import Settings
from engine.store import Store
from engine.store.exchanges import canonical


class NoConversation(ValueError):
    """The session holds no Messages API conversation to replay."""


def _answer_key(content: Any) -> str:
    return canonical(without_cache_control(content))


def conversation_lines(exchanges: list[Exchange]) -> list[dict[str, Any]]:
    """The conversation's last request and its answer as Anthropic JSON lines (dropping the
    blocks a ctxscope session cannot hold, e.g. server tool results), each assistant line
    with the usage of the request it answered."""
    mains = [
        e
        for e in exchanges
        if e.kind == "main"
        and api_of(e.path) == "messages"
        and isinstance(e.request.get("messages"), list)
    ]
    if not mains:
        raise NoConversation("the session holds no Messages API conversation")
    usage_of: dict[str, dict[str, int]] = {}
    for e in mains:
        content = (e.response or {}).get("content")
        if isinstance(content, list) and e.usage is not None:
            usage_of[_answer_key(content)] = {
                "input_tokens": e.usage.input_tokens,
                "output_tokens": e.usage.output_tokens,
                "cache_read_input_tokens": e.usage.cache_read_input_tokens,
                "cache_creation_input_tokens": e.usage.cache_creation_input_tokens,
            }
    last = mains[-1]
    messages = list(last.request["messages"])
    answer = (last.response or {}).get("content")
    if isinstance(answer, list) and answer:
        messages.append({"role": "assistant", "content": answer})
    lines = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        content = without_cache_control(message.get("content"))
        if isinstance(content, list):
            kept = [b for b in content if isinstance(b, dict) and b.get("type") in BLOCK_TYPES]
            if not kept:
                continue
            line: dict[str, Any] = {"role": message["role"], "content": kept}
        else:
            line = {"role": message["role"], "content": str(content or "")}
        if message["role"] == "assistant":
            usage = usage_of.get(_answer_key(message.get("content")))
            if usage is not None:
                line["usage"] = usage
        lines.append(line)
    return lines


def what_ifs(
    exchanges: list[Exchange], settings: Settings, names: list[str] | None = None
) -> list[dict[str, Any]]:
    """Each strategy's replay row (``ReplayResult.row``) for the proxied conversation."""
    lines = conversation_lines(exchanges)
    with tempfile.TemporaryDirectory(prefix="ctxscope-whatif-") as tmp:
        folder = Path(tmp)
        source = folder / "conversation.jsonl"
        source.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
        db = folder / "whatif.db"
        store = Store.open(db, durable=False)
        try:
            session_id = import_session(store, source, str(folder), settings=settings).session.id
        finally:
            store.close()
        assert session_id is not None
        results = replay_strategies(db, session_id, names or list(STRATEGIES), settings, folder)
    return [r.row() for r in results]


def as_recorded(exchanges: list[Exchange], settings: Settings) -> dict[str, Any]:
    """The row of what the agent really sent: its conversation's recorded requests, their
    usage as the API reported it, priced at list price."""
    mains = [e for e in exchanges if e.kind == "main" and api_of(e.path) == "messages"]
    used = [e for e in mains if e.usage is not None]
    return {
        "strategy": "as recorded",
        "steps": len(mains),
        "compactions": sum(1 for e in exchanges if e.kind == "compaction"),
        "peak": max((e.usage.input_side for e in used if e.usage), default=0),
        "total_input": sum(e.usage.input_side for e in used if e.usage),
        "cache_read": sum(e.usage.cache_read_input_tokens for e in used if e.usage),
        "cache_write": sum(e.usage.cache_creation_input_tokens for e in used if e.usage),
        "cost": _total_cost(settings, used),
    }


def what_if_table(exchanges: list[Exchange], settings: Settings) -> list[dict[str, Any]]:
    """The as-recorded row, then each strategy's replay row."""
    return [as_recorded(exchanges, settings), *what_ifs(exchanges, settings)]


WHAT_IF_COLUMNS = ("strategy", "steps", "compactions", "peak", "total_input", "cache_read",
                   "cache_write", "cost")  # fmt: skip


def what_if_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The table as text, one strategy a line."""
    lines = ["what each strategy would have sent (ctxscope's own prompt and tools):"]
    lines.append("  " + "  ".join(f"{c:>14}" for c in WHAT_IF_COLUMNS))
    for row in rows:
        cells = [
            ("–" if row[c] is None else f"${row[c]:.4f}")
            if c == "cost"
            else (f"{row[c]:,}" if isinstance(row[c], int) else str(row[c]))
            for c in WHAT_IF_COLUMNS
        ]
        lines.append("  " + "  ".join(f"{c:>14}" for c in cells))
    return lines


def _total_cost(settings: Settings, used: list[Exchange]) -> float | None:
    """The recorded requests' cost at list prices; None when one of them has no known price
    (a partial sum would read as the whole)."""
    costs = [price_for(settings, e.model).usage_cost(e.usage) for e in used if e.usage]
    if any(cost is None for cost in costs):
        return None
    return round(sum(c for c in costs if c is not None), 4)
