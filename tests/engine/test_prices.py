"""Prices: every model at its own list price (genai-prices' data, offline), settings over it,
no cost and a note for a model nobody prices.

Expected dollars are worked out here from the providers' published list prices, per million
tokens, never from the code under test:

- Anthropic (platform.claude.com/docs/en/about-claude/pricing): Opus 4.5 and 4.6 $5 input,
  $6.25 5-minute cache write, $10 1-hour write, $0.50 cache hit, $25 output; Sonnet 4.5
  $3 / $3.75 / $6 / $0.30 / $15; Haiku 4.5 $1 / $1.25 / $2 / $0.10 / $5.
- OpenAI (developers.openai.com/api/docs/models/gpt-5-codex): gpt-5-codex $1.25 input,
  $0.125 cached input, $10 output.
- Google (ai.google.dev/gemini-api/docs/pricing): gemini-2.5-pro, prompts up to 200k tokens
  $1.25 input, $10 output; over 200k $2.50 / $15.
"""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.main import main
from engine.figures.prices import price_for
from engine.models import Usage, UsageRecord
from engine.settings.config import ModelPrice, Settings
from tests.engine.recordings.corpus import MAROT

M = 1_000_000


def dollars(
    usage: Usage, input: float, write_5m: float, write_1h: float, read: float, output: float
) -> float:
    """``usage`` at per-MTok list prices (Anthropic's sense: input is the uncached rest)."""
    hour = usage.cache_creation_1h_input_tokens
    return (
        usage.input_tokens * input
        + (usage.cache_creation_input_tokens - hour) * write_5m
        + hour * write_1h
        + usage.cache_read_input_tokens * read
        + usage.output_tokens * output
    ) / M


CALL = Usage(
    input_tokens=1_200,
    cache_creation_input_tokens=30_000,
    cache_creation_1h_input_tokens=10_000,
    cache_read_input_tokens=120_000,
    output_tokens=2_500,
)
"""One call: 151 200 tokens in (under every long-context tier), 20 000 written for 5 minutes
and 10 000 for an hour."""


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pricing must never reach for the network (genai-prices can download fresh prices)."""

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("pricing tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize(
    ("model", "prices"),
    [
        ("claude-opus-4-5-20251101", (5, 6.25, 10, 0.5, 25)),
        ("claude-opus-4-6", (5, 6.25, 10, 0.5, 25)),
        ("claude-sonnet-4-5-20250929", (3, 3.75, 6, 0.3, 15)),
        ("claude-haiku-4-5-20251001", (1, 1.25, 2, 0.1, 5)),
    ],
)
def test_each_claude_model_at_its_own_price(model: str, prices: tuple[float, ...]) -> None:
    price = price_for(Settings(_toml_file="none.toml"), model)
    expected = dollars(CALL, *prices)
    assert price.known and "genai-prices" in price.note
    assert price.usage_cost(CALL) == pytest.approx(expected, rel=0.01)


def test_opus_4_5_is_not_priced_as_sonnet() -> None:
    """The issue: Opus 4.5 came out at Sonnet's price, 40 % low."""
    settings = Settings(_toml_file="none.toml")
    opus = price_for(settings, "claude-opus-4-5").usage_cost(CALL)
    sonnet = price_for(settings, "claude-sonnet-4-6").usage_cost(CALL)
    assert opus is not None and sonnet is not None
    assert opus == pytest.approx(sonnet * 5 / 3, rel=0.01)


def test_gpt_5_codex_at_openai_price() -> None:
    """Codex usage as the importer stores it: 40 000 sent of which 30 000 cached."""
    usage = Usage(input_tokens=10_000, cache_read_input_tokens=30_000, output_tokens=4_000)
    expected = (10_000 * 1.25 + 30_000 * 0.125 + 4_000 * 10) / M
    assert price_for(Settings(_toml_file="none.toml"), "gpt-5-codex").usage_cost(usage) == (
        pytest.approx(expected, rel=0.01)
    )


def test_gemini_2_5_pro_at_google_price_with_its_long_context_tier() -> None:
    price = price_for(Settings(_toml_file="none.toml"), "gemini-2.5-pro")
    short = Usage(input_tokens=100_000, output_tokens=2_000)
    assert price.usage_cost(short) == pytest.approx((100_000 * 1.25 + 2_000 * 10) / M, rel=0.01)
    long = Usage(input_tokens=300_000, output_tokens=2_000)
    assert price.usage_cost(long) == pytest.approx((300_000 * 2.5 + 2_000 * 15) / M, rel=0.01)


@pytest.mark.parametrize("model", ["acme-coder-7", "offline", "<synthetic>", ""])
def test_unknown_model_has_no_cost_and_says_why(model: str) -> None:
    price = price_for(Settings(_toml_file="none.toml"), model)
    assert not price.known
    assert price.usage_cost(CALL) is None
    record = UsageRecord(session_id=1, round_index=0, step=1, usage=CALL)
    assert price.total_cost([record]) is None
    assert "no cost" in price.note and repr(model) in price.note and "\n" not in price.note


def test_settings_price_is_used_over_the_list_price_and_for_unknown_models() -> None:
    settings = Settings(
        _toml_file="none.toml",
        prices={
            "claude-opus-4-6": ModelPrice(input=2, output=10),
            "acme-": ModelPrice(input=1, output=2),
        },
    )
    opus = price_for(settings, "claude-opus-4-6")
    assert "[prices.claude-opus-4-6]" in opus.note
    # input $2: writes 1.25x / 2x, reads 0.1x (the section's default ratios)
    assert opus.usage_cost(CALL) == pytest.approx(dollars(CALL, 2, 2.5, 4, 0.2, 10))
    acme = price_for(settings, "acme-coder-7")  # its longest listed prefix
    assert acme.usage_cost(CALL) == pytest.approx(dollars(CALL, 1, 1.25, 2, 0.1, 2))
    assert price_for(settings, "claude-opus-4-5").usage_cost(CALL) == pytest.approx(
        dollars(CALL, 5, 6.25, 10, 0.5, 25), rel=0.01
    )


def test_prices_come_from_the_bundled_data() -> None:
    """genai-prices downloads only if its updater is started; the snapshot in use must be the
    one bundled with the package."""
    price_for(Settings(_toml_file="none.toml"), "claude-opus-4-6").usage_cost(CALL)
    from genai_prices.data_snapshot import get_snapshot

    assert get_snapshot().from_auto_update is False


def test_opus_4_6_before_march_2026_has_its_long_context_tier() -> None:
    """Anthropic priced Opus 4.6 requests over 200k input tokens at $10 / $37.50 until the
    long-context premium was removed on 2026-03-13; a recorded call is priced at its day's."""
    price = price_for(Settings(_toml_file="none.toml"), "claude-opus-4-6")
    usage = Usage(input_tokens=250_000, output_tokens=1_000)
    then = datetime(2026, 2, 1, tzinfo=UTC)
    later = datetime(2026, 4, 1, tzinfo=UTC)
    assert price.usage_cost(usage, then) == pytest.approx(
        (250_000 * 10 + 1_000 * 37.5) / M, rel=0.01
    )
    assert price.usage_cost(usage, later) == pytest.approx((250_000 * 5 + 1_000 * 25) / M, rel=0.01)


# --- end to end: an imported session's `show` ---

MAROT_SUMS = {"input": 180, "cache_read": 14_771_617, "write_1h": 349_474, "output": 38_899}
"""Sums over the last record per message.id of the Marot session (152 responses), every cache
write with the 1-hour lifetime; largest request 166 759 input tokens (under 200k). Counted with
python's json module: for each assistant record keep message.usage by message.id, then sum."""


def _imported(tmp_path: Path, model: str) -> Path:
    text = MAROT.read_text(encoding="utf-8").replace('"claude-opus-4-6"', json.dumps(model))
    source = tmp_path / "session.jsonl"
    source.write_text(text, encoding="utf-8")
    db = tmp_path / "m.db"
    assert main(["import", str(source), "--db", str(db), "--json"]) == 0
    return db


@pytest.mark.parametrize(
    ("model", "input", "write_1h", "read", "output"),
    [
        ("claude-opus-4-6", 5, 10, 0.5, 25),
        ("claude-opus-4-5-20251101", 5, 10, 0.5, 25),
        ("claude-haiku-4-5-20251001", 1, 2, 0.1, 5),
    ],
)
def test_imported_session_costs_its_list_price(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    model: str,
    input: float,
    write_1h: float,
    read: float,
    output: float,
) -> None:
    monkeypatch.chdir(tmp_path)
    db = _imported(tmp_path, model)
    capsys.readouterr()
    assert main(["show", "1", "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    s = MAROT_SUMS
    expected = (
        s["input"] * input
        + s["write_1h"] * write_1h
        + s["cache_read"] * read
        + s["output"] * output
    ) / M
    assert data["recorded_cost"] == pytest.approx(expected, rel=0.01)
    assert main(["show", "1", "--db", str(db)]) == 0
    assert f"the recorded calls cost ${expected:,.2f}" in capsys.readouterr().out


def test_imported_session_of_an_unknown_model_shows_no_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    db = _imported(tmp_path, "acme-coder-7")
    capsys.readouterr()
    assert main(["show", "1", "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["recorded_cost"] is None
    assert (
        "no cost" in data["recorded_cost_note"] and "'acme-coder-7'" in data["recorded_cost_note"]
    )
    assert main(["show", "1", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "no cost: model 'acme-coder-7'" in out and "$" not in out.split("\n\n")[0]


@given(
    model=st.sampled_from(
        [
            "claude-opus-4-6",
            "claude-sonnet-4-5",
            "gemini-2.5-pro",
            "gpt-5-codex",
            "claude-haiku-4-5",
        ]
    ),
    uncached=st.integers(0, 300_000),
    written=st.integers(0, 100_000),
    hour_share=st.floats(0, 1),
    read=st.integers(0, 300_000),
    output=st.integers(0, 50_000),
    day=st.sampled_from([datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC)]),
)
@settings(max_examples=60, deadline=None)
def test_each_call_costs_what_genai_prices_gives_for_it(
    model: str,
    uncached: int,
    written: int,
    hour_share: float,
    read: int,
    output: int,
    day: datetime,
) -> None:
    """ctxscope works out per-token rates once per price and tier; they must give what
    genai-prices' own calculation gives for every call, on both sides of a 200k tier."""
    from genai_prices import Usage as ListUsage
    from genai_prices import calc_price

    hour = int(written * hour_share)
    usage = Usage(
        input_tokens=uncached,
        cache_creation_input_tokens=written,
        cache_creation_1h_input_tokens=hour,
        cache_read_input_tokens=read,
        output_tokens=output,
    )
    sent = uncached + written + read
    reference = ListUsage(
        input_tokens=sent,
        cache_write_tokens=written,
        cache_write_1h_tokens=hour,
        cache_read_tokens=read,
        output_tokens=output,
    )
    expected = float(calc_price(reference, model, genai_request_timestamp=day).total_price)
    got = price_for(Settings(_toml_file="none.toml"), model).usage_cost(usage, day)
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_one_price_per_model_for_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 44: `sessions` built a new price per session and worked its rates out again, with
    genai-prices, for each. Now a model's price is made once per process and its rates once per
    price and tier: pricing two "sessions" of 20 calls each (all under the 200k tier) asks
    genai-prices for five rates (uncached input, 5-minute write, 1-hour write, read, output:
    five `calc_price` calls) the first time, and never again — and the dollars are still each
    call's list price (Sonnet 4.5: the module docstring's figures)."""
    from genai_prices.types import ModelPrice as ListPrice

    from engine.figures.prices import _list_pricing

    _list_pricing.cache_clear()
    asked: list[int] = []
    real = ListPrice.calc_price

    def counted(self: ListPrice, usage: object) -> object:
        asked.append(1)
        return real(self, usage)  # type: ignore[arg-type]

    monkeypatch.setattr(ListPrice, "calc_price", counted)
    settings = Settings(model="offline")
    at = datetime(2026, 1, 15, tzinfo=UTC)
    calls = [UsageRecord(session_id=1, round_index=0, step=0, usage=CALL, created_at=at)] * 20
    first = price_for(settings, "claude-sonnet-4-5")
    one = first.total_cost(calls)
    second = price_for(settings, "claude-sonnet-4-5")
    two = second.total_cost(calls)
    assert second is first
    assert len(asked) == 5
    expected = 20 * dollars(CALL, 3, 3.75, 6, 0.30, 15)
    assert one == pytest.approx(expected) and two == pytest.approx(expected)
