"""The prompt cache model steer-check charges requests with (engine/proxy/cache_sim.py), on
blocks of chosen sizes. Every expected figure is worked out by hand from Anthropic's
prompt-caching documentation: a breakpoint caches the prefix up to it; a later request reads
the longest prefix it repeats that is still alive, looking back up to 20 blocks from each
breakpoint; what lies after the prefix read up to the last breakpoint is written, each part
at its breakpoint's lifetime; a prefix under the model's minimum is not cached; an entry lives
5 minutes (or 1 hour) from its last use."""

from __future__ import annotations

from engine.proxy.cache_sim import FIVE_MINUTES, ONE_HOUR, CacheUse, WireBlock, WireCache


def block(name: str, tokens: int, lifetime: float | None = None) -> WireBlock:
    return WireBlock(name, tokens, lifetime)


def test_a_prefix_is_written_then_read_until_it_expires() -> None:
    cache = WireCache(min_tokens=1024)
    request = [block("a", 600), block("b", 600, FIVE_MINUTES), block("c", 30)]
    assert cache.use(request, 0) == CacheUse(read=0, write_5m=1200, write_1h=0, uncached=30)
    assert cache.use(request, 250) == CacheUse(read=1200, write_5m=0, write_1h=0, uncached=30)
    # 250 s after its last use (a read refreshes it), 500 s after it was written: alive.
    assert cache.use(request, 500).read == 1200
    # 301 s after the last use: gone, written again.
    assert cache.use(request, 801) == CacheUse(read=0, write_5m=1200, write_1h=0, uncached=30)


def test_a_prefix_under_the_minimum_is_not_cached() -> None:
    cache = WireCache(min_tokens=1024)
    request = [block("a", 1000, FIVE_MINUTES)]
    assert cache.use(request, 0) == CacheUse(read=0, write_5m=0, write_1h=0, uncached=1000)
    assert cache.use(request, 1).read == 0


def test_each_part_is_written_at_its_breakpoints_lifetime() -> None:
    """The system prompt marked 1 hour, the conversation 5 minutes: 2,000 tokens written for
    an hour, 500 for five minutes; 400 s later the hour's entry is read (the lookback from the
    last breakpoint finds it) and the 500 are written again."""
    cache = WireCache(min_tokens=1024)
    request = [block("s", 2000, ONE_HOUR), block("m", 500, FIVE_MINUTES)]
    assert cache.use(request, 0) == CacheUse(read=0, write_5m=500, write_1h=2000, uncached=0)
    assert cache.use(request, 400) == CacheUse(read=2000, write_5m=500, write_1h=0, uncached=0)


def test_a_changed_block_breaks_every_prefix_that_holds_it() -> None:
    cache = WireCache(min_tokens=100)
    cache.use([block("a", 100, FIVE_MINUTES), block("b", 100), block("c", 100, FIVE_MINUTES)], 0)
    changed = [block("a", 100, FIVE_MINUTES), block("B", 100), block("c", 100, FIVE_MINUTES)]
    # "a" is still read; "B" and "c" are written after it.
    assert cache.use(changed, 10) == CacheUse(read=100, write_5m=200, write_1h=0, uncached=0)


def test_the_lookback_reaches_20_blocks_from_a_breakpoint() -> None:
    """A prefix cached at block 0; later requests mark only their last block. With it 19
    blocks after block 0 (positions 19 down to 0: 20 checked) the prefix is read; 20 blocks
    after, it is out of reach."""
    for after, read in ((19, 2000), (20, 0)):
        cache = WireCache(min_tokens=1024)
        cache.use([block("head", 2000, FIVE_MINUTES)], 0)
        tail = [block(f"x{i}", 10) for i in range(after - 1)] + [block("last", 10, FIVE_MINUTES)]
        assert cache.use([block("head", 2000), *tail], 1).read == read
