"""What Anthropic's prompt cache would read and write for a sequence of requests.

The rules modelled (Anthropic's prompt-caching documentation):

- a request is one sequence of blocks in the order ``tools`` → ``system`` → ``messages``;
- a block with ``cache_control`` is a breakpoint (at most 4; the Anthropic provider also puts
  one on the last tool); the prefix up to a breakpoint is what gets cached;
- a prefix shorter than the model's minimum cacheable length is not cached at all;
- a later request reads the longest cached prefix that it repeats *exactly*: the system checks
  each breakpoint and up to 20 blocks before it for a prefix written earlier, so any change in
  a block invalidates every prefix that contains it;
- what lies between the prefix read and the last breakpoint is written (cache creation); what
  comes after the last breakpoint is ordinary input.

TTLs are not modelled (a replay has no clock): a prefix once written stays readable.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.llm.base import ProviderRequest
from engine.tokens import MESSAGE_OVERHEAD, TOOL_USE_SYSTEM_OVERHEAD, count_blocks, count_tool

LOOKBACK_BLOCKS = 20
"""How far before a breakpoint the cache looks for an earlier prefix (Anthropic: 20 blocks)."""


@dataclass(frozen=True)
class CacheUse:
    """One request's input side: read from the cache, written to it, and the rest."""

    read: int
    write: int
    uncached: int

    @property
    def total(self) -> int:
        return self.read + self.write + self.uncached


@dataclass
class Block:
    """One block of a request as the cache sees it."""

    tokens: int
    key: str
    """The block's content without ``cache_control`` (what must repeat for a hit)."""
    breakpoint: bool


class BlockCounter:
    """Each request block as the cache sees it, counted once per block object.

    The context builder reuses the message dicts of an unchanged history prefix from one
    request to the next (it never changes a message once a request holds it), so a replay pays
    for the new messages only: the blocks of the leading messages that are the same objects as
    last time, with as many blocks, are taken from the last request as they are. Other blocks
    are looked up by object (an id is never reused while its object lives), then by content:
    equal blocks come back as the same :class:`Block`, so :class:`PromptCache` sees an equal
    prefix as the same objects.
    """

    def __init__(self) -> None:
        self._memo: dict[tuple[int, bool], tuple[dict[str, Any], Block]] = {}
        self._interned: dict[tuple[str, bool, int], Block] = {}
        """One Block per content, breakpoint and count: a block rebuilt as a new object (after
        a compaction, in the round in progress) is neither counted nor hashed again."""
        self._tokens: dict[str, int] = {}
        """Tokens by content key."""
        self._last: tuple[list[dict[str, Any]], list[int], list[int], list[Block]] = (
            [],
            [],
            [],
            [],
        )
        """The last request's messages, their block counts, where each one's blocks start in
        its message blocks, and those blocks."""

    def _count(self, key: str, raw: dict[str, Any]) -> int:
        tokens = self._tokens.get(key)
        if tokens is None:
            tokens = self._tokens[key] = count_blocks([raw])
        return tokens

    def _seen(self, raw: dict[str, Any], breakpoint: bool, first: bool = False) -> Block | None:
        found = self._memo.get((id(raw), first))
        if found is not None and found[0] is raw and found[1].breakpoint == breakpoint:
            return found[1]
        return None

    def _keep(self, raw: dict[str, Any], block: Block, first: bool = False) -> Block:
        """Remember ``block`` for ``raw`` (as its message's first block or not); an equal
        block seen before is returned instead."""
        block = self._interned.setdefault((block.key, block.breakpoint, block.tokens), block)
        self._memo[(id(raw), first)] = (raw, block)
        return block

    def blocks(self, request: ProviderRequest, tools_breakpoint: bool = True) -> list[Block]:
        """The request's blocks in cache order, with their tokens (a message's overhead goes to
        its first block, the tool-use system prompt to the first tool); their sum is the
        request's local count."""
        out: list[Block] = []
        tools = request.tools
        for i, tool in enumerate(tools):
            marked = "cache_control" in tool or (tools_breakpoint and i == len(tools) - 1)
            extra = TOOL_USE_SYSTEM_OVERHEAD if i == 0 else 0
            out.append(
                self._seen(tool, marked)
                or self._keep(tool, Block(count_tool(tool) + extra, _key({"tool": tool}), marked))
            )
        for raw in request.system:
            marked = "cache_control" in raw
            found = self._seen(raw, marked)
            if found is None:
                key = _key(raw)
                found = self._keep(raw, Block(self._count(key, raw), key, marked))
            out.append(found)
        messages = request.messages
        sizes = list(map(len, map(_CONTENT, messages)))
        last_messages, last_sizes, last_starts, last_blocks = self._last
        same = min(_common(last_messages, messages), _common(last_sizes, sizes, operator.eq))
        starts = last_starts[:same]
        message_blocks = last_blocks[: last_starts[same] if same < len(last_starts) else None]
        for message in messages[same:]:
            starts.append(len(message_blocks))
            content = message["content"]
            if isinstance(content, str):
                text = {"type": "text", "text": content}
                block = Block(MESSAGE_OVERHEAD + count_blocks([text]), _key(text), False)
                message_blocks.append(
                    self._interned.setdefault((block.key, False, block.tokens), block)
                )
                continue
            role = message["role"]
            for j, raw in enumerate(content):
                marked, first = "cache_control" in raw, j == 0
                found = self._seen(raw, marked, first)
                if found is None:
                    key = _key({"role": role, "first": first, **raw})
                    tokens = self._count(key, raw) + (MESSAGE_OVERHEAD if first else 0)
                    found = self._keep(raw, Block(tokens, key, marked), first)
                message_blocks.append(found)
        self._last = (list(messages), sizes, starts, message_blocks)
        return out + message_blocks


_CONTENT = operator.itemgetter("content")


def _common(
    before: list[Any], after: list[Any], same: Callable[[Any, Any], bool] = operator.is_
) -> int:
    """How many leading items of ``after`` are ``same`` as those of ``before`` (a C-speed
    scan: this runs over every message of a long session at every replayed step)."""
    flags = list(map(same, before, after))
    return flags.index(False) if False in flags else len(flags)


def _key(block: dict[str, Any]) -> str:
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(plain, sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class PromptCache:
    """The prefixes written so far, and what each new request reads and writes."""

    min_tokens: int = 1024
    """The model's minimum cacheable prompt length."""
    written: set[str] = field(default_factory=set)
    _last: tuple[list[Block], list[str], list[int], list[int]] = field(
        default_factory=lambda: ([], [], [], []), repr=False
    )

    def use(self, blocks: list[Block]) -> CacheUse:
        """Charge one request (in order); remembers the prefixes it writes."""
        hashes, cumulative, breakpoints = self._chain(blocks)
        total = cumulative[-1] if cumulative else 0
        read = 0
        for bp in breakpoints:
            for j in range(bp, max(-1, bp - LOOKBACK_BLOCKS), -1):
                if hashes[j] in self.written:
                    read = max(read, cumulative[j])
                    break
        write = 0
        cacheable = [bp for bp in breakpoints if cumulative[bp] >= self.min_tokens]
        if cacheable:
            last = cacheable[-1]
            write = max(0, cumulative[last] - read)
            for bp in cacheable:
                self.written.add(hashes[bp])
        return CacheUse(read=read, write=write, uncached=total - read - write)

    def _chain(self, blocks: list[Block]) -> tuple[list[str], list[int], list[int]]:
        """Prefix hashes, cumulative tokens and the breakpoints' positions, reusing the last
        request's for the blocks it shares at the start (the same objects), so a request costs
        its new blocks."""
        prev_blocks, prev_hashes, prev_cum, prev_breakpoints = self._last
        same = _common(prev_blocks, blocks)
        hashes, cumulative = prev_hashes[:same], prev_cum[:same]
        breakpoints = [bp for bp in prev_breakpoints if bp < same]
        head = hashes[-1] if hashes else ""
        total = cumulative[-1] if cumulative else 0
        for i in range(same, len(blocks)):
            block = blocks[i]
            # h(i) = sha1(h(i-1) + NUL + key(i)): a prefix has one hash however it was reached
            head = hashlib.sha1(f"{head}\x00{block.key}".encode()).hexdigest()
            hashes.append(head)
            total += block.tokens
            cumulative.append(total)
            if block.breakpoint:
                breakpoints.append(i)
        self._last = (list(blocks), hashes, cumulative, breakpoints)
        return hashes, cumulative, breakpoints
