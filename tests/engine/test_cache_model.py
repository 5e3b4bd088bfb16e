"""The prompt-cache model against hand-worked examples (Anthropic's caching rules)."""

from __future__ import annotations

from engine.cache_model import Block, CacheUse, PromptCache
from engine.config import Settings, price_for
from engine.replay import call_cost


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


def test_prices_come_from_settings_by_model_name() -> None:
    settings = Settings()
    haiku = price_for(settings, "claude-haiku-4-5-20251001")
    assert (haiku.input, haiku.output, haiku.min_cacheable) == (1.0, 5.0, 2048)
    sonnet = price_for(settings, "offline")
    assert (sonnet.input, sonnet.output, sonnet.min_cacheable) == (3.0, 15.0, 1024)
    # 1 000 000 uncached + 1 000 000 written + 1 000 000 read + 100 000 out at $3 / $15:
    # 3 + 3.75 + 0.30 + 1.50 = 8.55 dollars
    use = CacheUse(read=1_000_000, write=1_000_000, uncached=1_000_000)
    assert round(call_cost(sonnet, use, 100_000), 6) == 8.55
