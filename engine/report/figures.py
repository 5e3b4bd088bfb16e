"""The figures of ``ctxscope report``: tokens and dollars by kind, priced per model, day and
long-context tier; and ``--since``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.config import Settings
from engine.prices import Pricing, price_for
from engine.store.history import LONG_REQUEST, UsageGroup

TOKEN_KINDS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
"""Token kinds as the report names them (each cache write by its lifetime)."""


class SinceError(ValueError):
    """``--since`` is not a date, a time or a number of days."""


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``2026-02-01``, ``20260201``, an ISO time, or ``7d`` (days before now), as UTC."""
    text = text.strip()
    days = re.fullmatch(r"(\d+)d", text)
    if days:
        try:
            return (now or datetime.now(UTC)) - timedelta(days=int(days.group(1)))
        except OverflowError:  # before year 1 (timedelta itself stops at 999,999,999 days)
            raise SinceError(
                f"--since {text}: that many days ago is before the calendar begins; give "
                "fewer days or a date"
            ) from None
    if re.fullmatch(r"\d{8}", text):
        text = f"{text[:4]}-{text[4:6]}-{text[6:]}"
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SinceError(
            f"--since must be a date (2026-02-01 or 20260201), a time or days (7d), got {text!r}"
        ) from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


@dataclass
class Figures:
    """Requests, tokens by kind and dollars by kind of some usage."""

    requests: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KINDS, 0))
    cost: dict[str, float] = field(default_factory=lambda: dict.fromkeys(TOKEN_KINDS, 0.0))
    unpriced_requests: int = 0
    """Requests of a model without a price (not in ``cost``)."""

    @property
    def total_cost(self) -> float | None:
        """Dollars, or None when no request had a price."""
        if self.requests and self.unpriced_requests == self.requests:
            return None
        return sum(self.cost.values())

    def add(self, other: Figures) -> None:
        self.requests += other.requests
        self.unpriced_requests += other.unpriced_requests
        for kind in TOKEN_KINDS:
            self.tokens[kind] += other.tokens[kind]
            self.cost[kind] += other.cost[kind]

    def as_json(self) -> dict[str, Any]:
        total = self.total_cost
        return {
            "requests": self.requests,
            "tokens": dict(self.tokens),
            "cost": {k: round(v, 6) for k, v in self.cost.items()}
            | {"total": None if total is None else round(total, 6)},
            "unpriced_requests": self.unpriced_requests,
        }


class Prices:
    """One :class:`Pricing` per model, its rates per day and tier, remembered."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.pricing: dict[str, Pricing] = {}
        self.rates: dict[tuple[str, str, bool], tuple[float, ...] | None] = {}

    def of(self, model: str) -> Pricing:
        if model not in self.pricing:
            self.pricing[model] = price_for(self.settings, model)
        return self.pricing[model]

    def rates_for(self, model: str, day: str, long: bool) -> tuple[float, ...] | None:
        key = (model, day, long)
        if key not in self.rates:
            try:
                at = datetime.fromisoformat(day).replace(tzinfo=UTC) + timedelta(hours=12)
            except ValueError:
                at = None
            self.rates[key] = self.of(model).rates_at(at, LONG_REQUEST + 1 if long else 1)
        return self.rates[key]

    def notes(self) -> list[str]:
        return [p.note for p in self.pricing.values() if not p.known]


def priced(group: UsageGroup, rates: tuple[float, ...] | None) -> Figures:
    hour = min(group.cache_creation_1h_input_tokens, group.cache_creation_input_tokens)
    tokens = {
        "input": group.input_tokens,
        "output": group.output_tokens,
        "cache_read": group.cache_read_input_tokens,
        "cache_write_5m": group.cache_creation_input_tokens - hour,
        "cache_write_1h": hour,
    }
    out = Figures(requests=group.requests, tokens=tokens)
    if rates is None:
        out.unpriced_requests = group.requests
        return out
    uncached, five, one_hour, read, output = rates
    out.cost = {
        "input": tokens["input"] * uncached,
        "output": tokens["output"] * output,
        "cache_read": tokens["cache_read"] * read,
        "cache_write_5m": tokens["cache_write_5m"] * five,
        "cache_write_1h": tokens["cache_write_1h"] * one_hour,
    }
    return out
