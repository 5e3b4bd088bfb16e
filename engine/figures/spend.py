"""What a session's billed calls cost: tokens and dollars by kind, priced per model, day and
long-context tier (Anthropic's and Google's prices above 200,000 input tokens), from the
store's sums (:meth:`engine.store.Store.usage_groups`).

One pricing for every figure: a session's cost in its :class:`~engine.figures.SessionFigures`
and the report card's lines are the same sums priced by the same code, added in the same
order, so they are the same number to the last digit. One :class:`Prices` per process
(:func:`prices`): a listing of 10,000 sessions asks genai-prices once per model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.figures.prices import Pricing, price_for
from engine.settings.config import Settings
from engine.store.history import LONG_REQUEST, UsageGroup

TOKEN_KINDS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
"""Token kinds as the report names them (each cache write by its lifetime)."""

_PRICES: dict[str, Prices] = {}


def prices(settings: Settings) -> Prices:
    """The process' one :class:`Prices` for these settings' ``[prices]`` sections."""
    key = repr(sorted((k, v.model_dump_json()) for k, v in settings.prices.items()))
    if key not in _PRICES:
        _PRICES[key] = Prices(settings)
    return _PRICES[key]


@dataclass
class Spend:
    """Requests, tokens by kind and dollars by kind of some usage."""

    requests: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KINDS, 0))
    cost: dict[str, float] = field(default_factory=lambda: dict.fromkeys(TOKEN_KINDS, 0.0))
    unpriced_requests: int = 0
    """Requests of a model without a price (not in ``cost``)."""

    @property
    def total_cost(self) -> float | None:
        """Dollars, or None when no request had a price."""
        if self.unpriced_requests == self.requests:
            return None  # no request, or none with a price: no figure, never $0.00
        return sum(self.cost.values())

    def add(self, other: Spend) -> None:
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


def priced(group: UsageGroup, rates: tuple[float, ...] | None) -> Spend:
    hour = min(group.cache_creation_1h_input_tokens, group.cache_creation_input_tokens)
    tokens = {
        "input": group.input_tokens,
        "output": group.output_tokens,
        "cache_read": group.cache_read_input_tokens,
        "cache_write_5m": group.cache_creation_input_tokens - hour,
        "cache_write_1h": hour,
    }
    out = Spend(requests=group.requests, tokens=tokens)
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
