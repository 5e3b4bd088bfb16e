"""What a model's calls cost at list price, and why a model has no price.

The prices are genai-prices' (Pydantic's price data for Anthropic, OpenAI, Google and others,
kept up to date with each release of the package). ctxscope reads the data bundled with the
installed package and never starts the package's ``UpdatePrices`` updater, the one part of it
that downloads: a price is what the installed version knows, offline. A ``[prices.<model>]``
section in the settings (:class:`~engine.settings.config.ModelPrice`) is used over it, for a
model the data does not know or a negotiated price.

Each call is priced as the API bills it: input not read from the cache at the input price,
cache writes at the price of the lifetime they were written with (Anthropic: 5 minutes 1.25x
input, 1 hour 2x), cache reads at the cache-read price (Anthropic 0.1x input, OpenAI and Google
their own), output at the output price, a long-context tier where the price data has one (a
request over 200 000 input tokens to Gemini 2.5 Pro). A model neither knows gets no cost
(``None``, never another model's price) and a one-line note saying so.

genai-prices costs about 0.1 s to import, so it is imported when the first price is asked for,
never at start-up. One :class:`Pricing` is kept per model for the whole process
(:func:`price_for`), with its rates worked out once per price and tier: a listing of 1,000
sessions, a report or the proxy's requests ask genai-prices once per model, not once per
session or per call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Protocol

from engine.models import Usage
from engine.settings.config import ModelPrice, Settings

if TYPE_CHECKING:
    from collections.abc import Iterable

    from genai_prices.types import ModelInfo, Provider
    from genai_prices.types import ModelPrice as ListPrice

MIN_CACHEABLE: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
"""Anthropic's minimum cacheable prompt length by model (prompt-caching documentation: 4 096
tokens for Opus 4.5 and 4.6 and Haiku 4.5, 2 048 for Haiku 3 and 3.5, 1 024 for the rest); a
shorter prefix is not cached. genai-prices has no such figure. A ``[prices.<model>]`` section
sets its own."""

DEFAULT_MIN_CACHEABLE = 1024


class PricedUsage(Protocol):
    """A recorded call's usage and when it was made (:class:`~engine.models.UsageRecord`)."""

    @property
    def usage(self) -> Usage: ...

    @property
    def created_at(self) -> datetime: ...


@dataclass(frozen=True)
class Pricing:
    """How one model's calls are priced, or why they are not."""

    model: str
    note: str
    """One line: where the price comes from, or why there is none."""
    min_cacheable: int
    settings_price: ModelPrice | None = None
    """The ``[prices.<name>]`` section used, if any."""
    listed: bool = False
    """genai-prices knows the model."""
    _memo: dict[tuple[int, int], tuple[float, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )
    _kept: list[ListPrice] = field(default_factory=list, compare=False, repr=False)
    _starts: dict[int, tuple[int, ...]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def known(self) -> bool:
        return self.settings_price is not None or self.listed

    def usage_cost(self, usage: Usage, at: datetime | None = None) -> float | None:
        """Dollars for one call's ``usage`` at list price (the price in force at ``at``, now if
        None), or None for a model without a price."""
        if self.settings_price is not None:
            return self.settings_price.usage_cost(usage)
        rates = self.rates_at(at, usage.input_side)
        if rates is None:
            return None
        hour = min(usage.cache_creation_1h_input_tokens, usage.cache_creation_input_tokens)
        return (
            usage.input_tokens * rates[0]
            + (usage.cache_creation_input_tokens - hour) * rates[1]
            + hour * rates[2]
            + usage.cache_read_input_tokens * rates[3]
            + usage.output_tokens * rates[4]
        )

    def rates_at(self, at: datetime | None, sent: int) -> tuple[float, ...] | None:
        """Dollars per token of uncached input, 5-minute cache write, 1-hour cache write,
        cache read and output, for a request of ``sent`` input tokens at ``at`` (now if None);
        None for a model without a price. (A sum of calls on one side of a long-context tier
        is priced with these as each call would be: a price is linear within a tier.)"""
        own = self.settings_price
        if own is not None:
            per = own.input / 1_000_000
            return (
                per,
                per * own.cache_write_ratio,
                per * own.cache_write_1h_ratio,
                per * own.cache_read_ratio,
                own.output / 1_000_000,
            )
        found = _listed(self.model) if self.listed else None
        if found is None:
            return None
        return self._rates(found[1].get_prices(at or datetime.now(UTC)), sent)

    def _rates(self, listed: ListPrice, sent: int) -> tuple[float, ...]:
        """Dollars per token of uncached input, 5-minute write, 1-hour write, read and output
        under ``listed`` for a request of ``sent`` input tokens.

        Worked out by genai-prices itself, from one request of each kind: a price is linear in
        the counts within a long-context tier, and genai-prices takes ~0.15 ms a call, which a
        replay's thousands of steps would feel. Kept per price and tier."""
        sent = max(sent, 1)
        starts = self._starts.get(id(listed))
        if starts is None:
            from genai_prices.types import TieredPrices

            starts = tuple(
                tier.start
                for value in vars(listed).values()
                if isinstance(value, TieredPrices)
                for tier in value.tiers
            )
            self._starts[id(listed)] = starts
            self._kept.append(listed)  # its id stays its own while the memos hold it
        tier = sum(sent > start for start in starts)
        key = (id(listed), tier)
        rates = self._memo.get(key)
        if rates is None:
            from genai_prices import Usage as ListUsage

            # One request size per tier, whichever request came first: the tier's smallest
            # (1 token, or one past its start), so the rates never depend on the order calls
            # are priced in (a replay here and the same replay in a worker agree to the bit).
            sent = 1 if tier == 0 else sorted(starts)[tier - 1] + 1

            def per_token(**kinds: int) -> float:
                # genai-prices counts input as everything sent (OpenAI's sense), the cached
                # parts inside it; ctxscope's Usage is Anthropic's, input the uncached rest.
                usage = ListUsage(input_tokens=sent, **kinds)
                return float(listed.calc_price(usage)["total_price"]) / sent

            uncached = per_token()
            rates = (
                uncached,
                per_token(cache_write_tokens=sent),
                per_token(cache_write_tokens=sent, cache_write_1h_tokens=sent),
                per_token(cache_read_tokens=sent),
                per_token(output_tokens=sent) - uncached,
            )
            self._memo[key] = rates
        return rates

    def total_cost(self, records: Iterable[PricedUsage]) -> float | None:
        """Dollars for all of ``records``, each at the price of its day, or None without a
        price."""
        if not self.known:
            return None
        total = 0.0
        for record in records:
            total += self.usage_cost(record.usage, record.created_at) or 0.0
        return total


def price_for(settings: Settings, model: str) -> Pricing:
    """How ``model`` is priced: the settings' ``[prices.<name>]`` for the exact name or its
    longest listed prefix, else genai-prices' data, else no price with the reason.

    A model genai-prices prices (or has no price for) gets the same :class:`Pricing` for the
    whole process (:func:`_list_pricing`), whose rates are worked out once."""
    own = settings.prices
    name = (
        model
        if model in own
        else max((n for n in own if model.startswith(n)), key=len, default=None)
    )
    if name is not None:  # plain arithmetic on the settings' figures: nothing to keep
        return Pricing(
            model, f"priced by the settings' [prices.{name}]", own[name].min_cacheable, own[name]
        )
    return _list_pricing(model)


@lru_cache(maxsize=512)  # a proxy sees whatever model names its clients send
def _list_pricing(model: str) -> Pricing:
    """``model``'s list price (or why it has none): one per model and process."""
    floor = _min_cacheable(model)
    found = _listed(model)
    if found is not None:
        provider, info = found
        version = _version()
        return Pricing(
            model,
            f"list price from genai-prices {version}: {provider.name} {info.name or info.id}",
            floor,
            listed=True,
        )
    return Pricing(
        model,
        f"no cost: model {model!r} has no list price in genai-prices' data and none in the "
        f"settings ([prices.{model}] input / output in ctxscope.toml)",
        floor,
    )


def _min_cacheable(model: str) -> int:
    return next(
        (n for prefix, n in MIN_CACHEABLE if model.startswith(prefix)), DEFAULT_MIN_CACHEABLE
    )


@cache
def _listed(model: str) -> tuple[Provider, ModelInfo] | None:
    """genai-prices' entry for ``model``; a name under a provider's prefix (OpenRouter's and
    LiteLLM's ``anthropic/claude-…``, ``openai/gpt-…``) is looked up without it when the
    whole name is not listed."""
    if not model:
        return None
    from genai_prices.data_snapshot import get_snapshot

    names = [model]
    if "/" in model:
        names.append(model.rpartition("/")[2])
    for name in names:
        try:
            return get_snapshot().find_provider_model(name, None, None, None)
        except LookupError:
            continue
    return None


@cache
def _version() -> str:
    import genai_prices

    return str(genai_prices.__version__)


LONG_CONTEXT_FROM = 200_000
"""Where Anthropic's long-context price tier starts (genai-prices' tiers of the models whose
1M window is opt-in: claude-sonnet-4-5, claude-opus-4-6…)."""


def listed_context_window(model: str) -> int | None:
    """The model's context window in genai-prices (None: the data does not know the model or
    its window). A ``[1m]`` suffix (Claude Code's) is not part of the model's id."""
    base = model.split("[", 1)[0]
    found = _listed(base)
    window = found[1].context_window if found else None
    return window if isinstance(window, int) and window > 0 else None


def long_context_priced(model: str) -> bool:
    """Whether genai-prices prices the model's requests over :data:`LONG_CONTEXT_FROM` input
    tokens higher: its large window is then a long-context option, not its standard one."""
    found = _listed(model.split("[", 1)[0])
    if found is None:
        return False
    prices = found[1].prices
    listed = [c.prices for c in prices] if isinstance(prices, list) else [prices]
    for price in listed:
        tiers = getattr(getattr(price, "input_mtok", None), "tiers", None) or []
        if any(getattr(t, "start", None) == LONG_CONTEXT_FROM for t in tiers):
            return True
    return False
