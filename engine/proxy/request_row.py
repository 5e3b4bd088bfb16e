"""One proxied request as its row: what ``proxy`` prints as it records it and what
``show --json``'s ``requests[]`` begins with, built and priced in one place.

The cost is the request's usage at list price (:mod:`engine.figures.prices`), for the Messages
API only (the project prices Claude models only): None for a request without usage, of another
API, or of a model without a known price.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from engine.exchanges import Exchange
from engine.figures.prices import price_for
from engine.models import Usage
from engine.proxy.identity import api_of
from engine.settings.config import Settings


@dataclass(frozen=True)
class RequestRow:
    """One stored request's figures."""

    id: int | None
    session_id: int | None
    kind: str
    path: str
    model: str
    status: int
    outcome: str
    stream: bool
    created_at: datetime
    duration_ms: float
    messages: int
    """Messages (Messages API) or input items (Responses API) the request sent."""
    usage: Usage | None
    cache_creation: dict[str, int]
    cost: float | None
    """Dollars at list price, unrounded (a running total adds these)."""
    steering: dict[str, Any] | None
    """What ``--steer`` did to it, in short (:func:`steering_summary`); None without."""

    @classmethod
    def of(cls, exchange: Exchange, settings: Settings) -> RequestRow:
        """``exchange``'s row, priced."""
        usage = exchange.usage
        priced = api_of(exchange.path) == "messages"  # the project prices Claude models only
        cost = (
            price_for(settings, exchange.model).usage_cost(usage)
            if usage is not None and priced
            else None
        )
        sent = exchange.request.get("messages", exchange.request.get("input"))
        steering = exchange.steering
        return cls(
            id=exchange.id,
            session_id=exchange.session_id,
            kind=exchange.kind,
            path=exchange.path,
            model=exchange.model,
            status=exchange.status,
            outcome=exchange.outcome,
            stream=exchange.stream,
            created_at=exchange.created_at,
            duration_ms=exchange.duration_ms,
            messages=len(sent) if isinstance(sent, list) else 0,
            usage=usage,
            cache_creation=exchange.cache_creation,
            cost=cost,
            steering=None if steering is None else steering_summary(steering),
        )

    @property
    def usage_json(self) -> dict[str, Any] | None:
        """The usage as the API reported it, with its ``cache_creation`` breakdown."""
        if self.usage is None:
            return None
        return {**self.usage.model_dump(), "cache_creation": self.cache_creation}

    @property
    def cost_json(self) -> float | None:
        return None if self.cost is None else round(self.cost, 6)

    def line(self) -> dict[str, Any]:
        """``proxy --jsonl``'s line."""
        return {
            "id": self.id,
            "session_id": self.session_id,
            "kind": self.kind,
            "path": self.path,
            "model": self.model,
            "status": self.status,
            "outcome": self.outcome,
            "stream": self.stream,
            "messages": self.messages,
            "usage": self.usage_json,
            "cost": self.cost_json,
            "duration_ms": round(self.duration_ms, 1),
            "steering": self.steering,
        }


def steering_summary(steering: dict[str, Any]) -> dict[str, Any]:
    """What ``--steer`` did to a request, in short: each rule's rewrites and tokens removed."""
    rules: dict[str, dict[str, int]] = {}
    for r in steering.get("rewrites", []):
        rule = rules.setdefault(r["rule"], {"rewrites": 0, "carried": 0, "tokens_removed": 0})
        if r.get("first"):
            rule["rewrites"] += 1
            rule["tokens_removed"] += r["tokens_before"] - r["tokens_after"]
        else:
            rule["carried"] += 1
    return {
        "floor": steering.get("floor"),
        "rules": rules,
        "failed": steering.get("failed") or None,
    }
