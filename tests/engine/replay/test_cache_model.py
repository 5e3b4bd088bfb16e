"""The prompt-cache model against hand-worked examples (Anthropic's caching rules)."""

from __future__ import annotations

import pytest

from engine.figures.prices import price_for
from engine.replay.cache_model import Block, CacheUse, PromptCache
from engine.replay.runner import call_cost
from engine.settings.config import Settings


def blocks(*spec: tuple[str, int, bool]) -> list[Block]:
    return [Block(tokens, key, bp) for key, tokens, bp in spec]


def test_a_stable_prefix_is_written_once_then_read() -> None:
    cache = PromptCache(min_tokens=1024)
    first = cache.use(blocks(("sys", 1500, True), ("q1", 100, False)))
    # nothing cached yet: the 1 500-token prefix up to the breakpoint is written
    assert (first.read, first.write, first.uncached) == (0, 1500, 100)
    second = cache.use(blocks(("sys", 1500, True), ("q2", 120, False)))
    assert (second.read, second.write, second.uncached) == (1500, 0, 120)


def test_an_edit_in_the_middle_writes_everything_after_it() -> None:
    cache = PromptCache(min_tokens=1024)
    cache.use(blocks(("sys", 1200, True), ("h1", 600, False), ("h2", 600, True), ("q", 50, False)))
    # h1 changed: the prefix at the second breakpoint no longer matches; the system prefix
    # still does, so 1 200 are read and 600 + 600 written again
    use = cache.use(
        blocks(("sys", 1200, True), ("h1*", 600, False), ("h2", 600, True), ("q", 50, False))
    )
    assert (use.read, use.write, use.uncached) == (1200, 1200, 50)


def test_below_the_minimum_nothing_is_cached() -> None:
    cache = PromptCache(min_tokens=1024)
    one = cache.use(blocks(("sys", 1000, True), ("q", 10, False)))
    two = cache.use(blocks(("sys", 1000, True), ("q", 10, False)))
    assert (one.read, one.write) == (0, 0) and (two.read, two.write) == (0, 0)
    assert two.uncached == 1010


def test_the_lookback_finds_a_prefix_within_twenty_blocks() -> None:
    cache = PromptCache(min_tokens=1024)
    head = [("sys", 2000, True)]
    cache.use(blocks(*head, ("a", 10, False)))
    # a request that adds 19 blocks after the system and marks only its last block: the
    # earlier prefix is 19 blocks back, inside the lookback, so it is read
    near = [(f"b{i}", 10, i == 18) for i in range(19)]
    use = cache.use(blocks(("sys", 2000, False), *near))
    assert (use.read, use.write) == (2000, 190)
    # 25 blocks on, the written prefix is out of reach of the only breakpoint
    far = [(f"c{i}", 10, i == 24) for i in range(25)]
    use = cache.use(blocks(("sys", 2000, False), *far))
    assert (use.read, use.write) == (0, 2250)


def test_replay_prices_each_model_and_none_for_an_unknown_one() -> None:
    settings = Settings()
    haiku = price_for(settings, "claude-haiku-4-5-20251001")
    # Anthropic's prompt-caching docs: Haiku 4.5 caches prefixes of 4 096 tokens and more
    assert haiku.min_cacheable == 4096
    sonnet = price_for(settings, "claude-sonnet-4-6")
    assert sonnet.min_cacheable == 1024
    # 1 000 000 uncached + 1 000 000 written + 1 000 000 read + 100 000 out at Sonnet's list
    # price ($3 input, $3.75 5-minute write, $6 1-hour write, $0.30 read, $15 output):
    # 3 + 3.75 + 0.30 + 1.50 = 8.55 dollars; written for an hour 3 + 6 + 0.30 + 1.50 = 10.80
    use = CacheUse(read=1_000_000, write=1_000_000, uncached=1_000_000)
    assert call_cost(sonnet, use, 100_000) == pytest.approx(8.55)
    assert call_cost(sonnet, use, 100_000, "1h") == pytest.approx(10.80)
    offline = price_for(settings, "offline")
    assert call_cost(offline, use, 100_000) is None
    assert offline.min_cacheable == 1024


def test_common_prefix_by_hand() -> None:
    from engine.messages.sequences import common_prefix

    same = {"a": 1}
    assert common_prefix([], [1, 2]) == 0
    assert common_prefix([1, 2, 3], [1, 2, 3, 4]) == 3
    assert common_prefix([1, 2, 3, 4], [1, 2]) == 2
    assert common_prefix([1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 9, 5, 6, 7]) == 3
    assert common_prefix([0, 1], [1, 1]) == 0
    # equal, not only identical, items count as shared
    assert common_prefix([same, {"b": 2}], [{"a": 1}, {"b": 3}]) == 1


def test_the_block_counter_reuses_shared_messages_and_counts_what_a_fresh_one_counts() -> None:
    from engine.llm.base import ProviderRequest
    from engine.messages.tokens import count_request
    from engine.replay.cache_model import BlockCounter

    def text(t: str) -> dict[str, object]:
        return {"type": "text", "text": t}

    tools = [{"name": "Read", "description": "Read.", "input_schema": {"type": "object"}}]
    system = [{**text("You are a test agent."), "cache_control": {"type": "ephemeral"}}]
    first_q = {"role": "user", "content": [text("question 1")]}
    call = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.py"}}
    step = {"role": "assistant", "content": [text("reading"), call]}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "1: x = 1"}
    last = {"role": "user", "content": [result]}
    requests = [
        [first_q],
        [first_q, step, last],  # history grew
        [first_q, {"role": "assistant", "content": [text("other"), call]}, last],  # a change
        [first_q, step, last, {"role": "assistant", "content": [text("done")]}],
    ]
    counter = BlockCounter()
    for messages in requests:
        request = ProviderRequest.model_construct(
            system=system, messages=messages, tools=tools, max_tokens=100
        )
        got = counter.blocks(request)
        want = BlockCounter().blocks(request)
        assert [(b.key, b.tokens, b.breakpoint) for b in got] == [
            (b.key, b.tokens, b.breakpoint) for b in want
        ]
        assert sum(b.tokens for b in got) == count_request(system, messages, tools)
    # the last request's last message was given one more block after it was counted: its
    # blocks are counted again, not taken from the last request
    last["content"].append(text("a note"))
    request = ProviderRequest.model_construct(
        system=system, messages=[first_q, step, last], tools=tools, max_tokens=100
    )
    got = counter.blocks(request)
    assert len(got) == 1 + 1 + 1 + 2 + 2  # tool, system, question, step (2), last (2)
    assert sum(b.tokens for b in got) == count_request(system, request.messages, tools)


def test_what_the_counter_keeps_from_the_last_request_follows_what_changed() -> None:
    """Blocks taken from the last request (``kept``, handed to the cache) and keys looked up by
    a call's input object give what counting each request from scratch gives: after a changed
    system block, a call with another input under the same id, a list changed in place."""
    from engine.llm.base import ProviderRequest
    from engine.replay.cache_model import BlockCounter

    def text(t: str) -> dict[str, object]:
        return {"type": "text", "text": t}

    tools = [{"name": "Read", "description": "Read.", "input_schema": {"type": "object"}}]
    marked = {"cache_control": {"type": "ephemeral"}}
    first_system = [{**text("You are a test agent."), **marked}]
    other_system = [{**text("You are another test agent."), **marked}]
    question = {"role": "user", "content": [text("question 1")]}
    call_a = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.py"}}
    call_b = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "b.py"}}
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}],
    }
    answer = {"role": "assistant", "content": [{**text("done"), **marked}]}
    step_a = {"role": "assistant", "content": [text("reading"), call_a]}
    step_b = {"role": "assistant", "content": [text("reading"), call_b]}
    in_place = [question, step_b, result]
    requests = [
        (first_system, [question, step_a, result]),
        (first_system, [question, step_a, result, answer]),  # grew
        (other_system, [question, step_a, result, answer]),  # the system prompt changed
        (other_system, [question, step_b, result, answer]),  # same call id, another input
        (other_system, in_place),
        (other_system, in_place),  # the same list again, after a message was added to it
    ]
    counter, cache, reference = BlockCounter(), PromptCache(min_tokens=1), PromptCache(1)
    kept = []
    for number, (system, messages) in enumerate(requests):
        if number == 5:
            in_place.append(answer)
        request = ProviderRequest.model_construct(
            system=system, messages=messages, tools=tools, max_tokens=100
        )
        got = counter.blocks(request)
        kept.append(counter.kept)
        fresh = BlockCounter().blocks(request)
        assert [(b.key, b.tokens, b.breakpoint) for b in got] == [
            (b.key, b.tokens, b.breakpoint) for b in fresh
        ]
        assert cache.use(got, counter.kept) == reference.use(fresh)
    # tool + system, then whole messages: question, step (2), result; the answer came after;
    # the system block changed (only the tool stays); the step changed (the question stays);
    # the same list again: its messages are not taken as known
    assert kept == [0, 2 + 4, 1, 2 + 1, 2 + 4, 2]
    assert '"b.py"' in got[4].key and '"a.py"' not in got[4].key
