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

TTLs are not modelled (a replay has no clock): a prefix once written stays readable. What a
write costs depends on the lifetime it was asked for (5 minutes 1.25x input, 1 hour 2x):
replay prices writes at ``Settings.cache_lifetime``.
"""

from __future__ import annotations

import hashlib
import json
import operator
from dataclasses import dataclass, field
from typing import Any

from engine.llm.base import ProviderRequest
from engine.messages.sequences import common_prefix
from engine.messages.tokens import (
    MESSAGE_OVERHEAD,
    TOOL_USE_SYSTEM_OVERHEAD,
    count_blocks,
    count_tool,
)

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
    for the new messages only: the blocks of the leading messages equal to last time's (the
    same objects, mostly) are taken from the last request as they are. Other blocks
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
        self._keys: dict[tuple[Any, ...], tuple[str, tuple[Any, ...]]] = {}
        """Content keys by the block's values (see :meth:`_key_of`), with the objects among
        them looked up by identity."""
        self._last: tuple[list[dict[str, Any]], list[int], list[Block], list[Block]] = (
            [],
            [],
            [],
            [],
        )
        """The last request's messages (its list, kept as it was given), where each one's
        blocks start in its message blocks, those blocks, and the tools' and system's."""
        self.kept = 0
        """How many leading blocks of the list :meth:`blocks` returned last are those of the
        list it returned before (for :meth:`PromptCache.use`)."""

    def _count(self, key: str, raw: dict[str, Any]) -> int:
        tokens = self._tokens.get(key)
        if tokens is None:
            tokens = self._tokens[key] = count_blocks([raw])
        return tokens

    def _key_of(self, raw: dict[str, Any], role: str | None = None, first: bool = False) -> str:
        """:func:`_key` of a block (of a message's, with its role and whether it comes first),
        looked up by its values — strings and booleans by value, others (a tool call's input)
        by identity: a block the builder makes anew at every step with the same strings (the
        system prompt, a summary, the question, a result of the round in progress) or the same
        input (a call placed again after a projection changed an earlier message) is not
        serialised again."""
        items: list[tuple[str, Any]] = []
        held: list[Any] = []
        for k, v in raw.items():
            if k == "cache_control":
                continue
            if type(v) in _PLAIN:
                items.append((k, v))
            else:
                # A tool_use's input (a dict): looked up as the object it is, kept alive here
                # so that its id is not reused (messages are values: an input never changes).
                items.append((k, (_HELD, id(v))))
                held.append(v)
        lookup = (role, first, tuple(items))
        found = self._keys.get(lookup)
        if found is not None and (not held or all(map(operator.is_, found[1], held))):
            return found[0]
        key = _key(raw if role is None else {"role": role, "first": first, **raw})
        self._keys[lookup] = (key, tuple(held))
        return key

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
                key = self._key_of(raw)
                found = self._keep(raw, Block(self._count(key, raw), key, marked))
            out.append(found)
        messages = request.messages
        last_messages, starts, message_blocks, last_out = self._last
        # The same list again may have been changed in place: nothing of it is taken as known.
        same = common_prefix(last_messages, messages) if messages is not last_messages else 0
        if same and _grew(messages[same - 1], starts, same - 1, len(message_blocks)):
            same -= 1  # not expected (a request's messages are values), but cheap to check
        # This counter's own lists, cut where the requests part (the caller got a copy).
        kept = starts[same] if same < len(starts) else len(message_blocks)
        del starts[same:]
        del message_blocks[kept:]
        self.kept = len(out) + kept if out == last_out else common_prefix(last_out, out)
        for message in messages[same:]:
            starts.append(len(message_blocks))
            content = message["content"]
            if isinstance(content, str):
                text = {"type": "text", "text": content}
                key = self._key_of(text)
                block = Block(MESSAGE_OVERHEAD + self._count(key, text), key, False)
                message_blocks.append(
                    self._interned.setdefault((block.key, False, block.tokens), block)
                )
                continue
            role = message["role"]
            for j, raw in enumerate(content):
                marked, first = "cache_control" in raw, j == 0
                found = self._seen(raw, marked, first)
                if found is None:
                    key = self._key_of(raw, role, first)
                    tokens = self._count(key, raw) + (MESSAGE_OVERHEAD if first else 0)
                    found = self._keep(raw, Block(tokens, key, marked), first)
                message_blocks.append(found)
        self._last = (messages, starts, message_blocks, out)
        return out + message_blocks


_PLAIN = (str, bool, type(None))
"""Value types whose equality is JSON equality (an int would equal a boolean)."""


_HELD = object()
"""Marks a block value looked up by identity, ``(_HELD, id(value))``: equal to no plain value."""


def _grew(message: dict[str, Any], starts: list[int], i: int, blocks: int) -> bool:
    """Whether message ``i`` of the last request has more or fewer blocks than were counted."""
    content = message["content"]
    if isinstance(content, str):
        return False
    counted = (starts[i + 1] if i + 1 < len(starts) else blocks) - starts[i]
    return len(content) != counted


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

    def use(self, blocks: list[Block], kept: int = 0) -> CacheUse:
        """Charge one request (in order); remembers the prefixes it writes.

        ``blocks`` is kept as it is until the next call (a new list for each request);
        ``kept``: how many of its leading blocks are known to be the last call's
        (:attr:`BlockCounter.kept`, when the cache is charged with each list a counter
        returns), so that only the rest is compared."""
        hashes, cumulative, breakpoints = self._chain(blocks, kept)
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

    def _chain(self, blocks: list[Block], kept: int) -> tuple[list[str], list[int], list[int]]:
        """Prefix hashes, cumulative tokens and the breakpoints' positions, reusing the last
        request's for the blocks it shares at the start (equal blocks: the same objects,
        mostly), so a request costs its new blocks."""
        prev_blocks, hashes, cumulative, prev_breakpoints = self._last
        if (
            0 < kept <= min(len(prev_blocks), len(blocks))
            and blocks[kept - 1] is prev_blocks[kept - 1]
        ):
            same = kept + common_prefix(prev_blocks[kept:], blocks[kept:])
        else:
            same = common_prefix(prev_blocks, blocks)
        # this cache's own lists, cut where the requests part
        del hashes[same:]
        del cumulative[same:]
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
        self._last = (blocks, hashes, cumulative, breakpoints)
        return hashes, cumulative, breakpoints
