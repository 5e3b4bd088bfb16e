"""The proxy's request row (engine/proxy/request_row.py): built and priced once, the same
figures in ``proxy --jsonl``'s line, ``proxy``'s text line and ``show --json``'s requests[].

Expected dollars from Anthropic's published list prices for Claude Sonnet 4.5 (as in
tests/engine/test_prices.py): $3 per million input tokens, $0.30 cache reads, $3.75 5-minute
cache writes, $15 output. 2 000 input + 10 000 read + 1 000 written + 500 out:
(2 000 × 3 + 10 000 × 0.30 + 1 000 × 3.75 + 500 × 15) / 1 000 000 = 0.02025.
"""

from __future__ import annotations

from engine.exchanges import Exchange
from engine.models import Usage
from engine.proxy.report import request_report
from engine.proxy.request_row import RequestRow
from engine.settings.config import Settings

USAGE = Usage(
    input_tokens=2_000,
    cache_read_input_tokens=10_000,
    cache_creation_input_tokens=1_000,
    output_tokens=500,
)
BODY = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}


def test_a_row_is_priced_once_and_every_output_shows_that_price() -> None:
    settings = Settings(_toml_file="none.toml")  # type: ignore[call-arg]
    exchange = Exchange(id=7, session_id=3, request=BODY, model="claude-sonnet-4-5", usage=USAGE)
    row = RequestRow.of(exchange, settings)
    assert row.cost is not None and abs(row.cost - 0.02025) < 0.0002
    line = row.line()
    [shown] = request_report([exchange], settings)
    assert line["cost"] == shown["cost"] == row.cost_json == round(row.cost, 6)
    assert shown["running_cost"] == row.cost_json
    assert (line["id"], line["session_id"], line["messages"]) == (7, 3, 1)
    assert line["usage"] == shown["usage"] == {**USAGE.model_dump(), "cache_creation": {}}


def test_a_request_of_another_api_or_without_usage_has_no_price() -> None:
    settings = Settings(_toml_file="none.toml")  # type: ignore[call-arg]
    responses = Exchange(
        request={"input": [{"role": "user", "content": "hi"}, {"type": "function_call"}]},
        path="/v1/responses",
        model="gpt-5-codex",
        usage=USAGE,
    )
    unanswered = Exchange(request=BODY, model="claude-sonnet-4-5")
    assert RequestRow.of(responses, settings).cost is None
    assert RequestRow.of(responses, settings).messages == 2  # the Responses API's input items
    assert RequestRow.of(unanswered, settings).line()["cost"] is None
    assert RequestRow.of(unanswered, settings).line()["usage"] is None
