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


def request_blocks(request: ProviderRequest, tools_breakpoint: bool = True) -> list[Block]:
    """The request's blocks in cache order, with their tokens (a message's overhead goes to
    its first block, the tool-use system prompt to the first tool)."""
    blocks: list[Block] = []
    tools = request.tools
    for i, tool in enumerate(tools):
        marked = "cache_control" in tool or (tools_breakpoint and i == len(tools) - 1)
        tokens = count_tool(tool) + (TOOL_USE_SYSTEM_OVERHEAD if i == 0 else 0)
        blocks.append(Block(tokens, _key({"tool": tool}), marked))
    for block in request.system:
        blocks.append(Block(count_blocks([block]), _key(block), "cache_control" in block))
    for message in request.messages:
        content = message["content"]
        items = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for j, block in enumerate(items):
            tokens = count_blocks([block]) + (MESSAGE_OVERHEAD if j == 0 else 0)
            key = _key({"role": message["role"], "first": j == 0, **block})
            blocks.append(Block(tokens, key, "cache_control" in block))
    return blocks


def _key(block: dict[str, Any]) -> str:
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(plain, sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class PromptCache:
    """The prefixes written so far, and what each new request reads and writes."""

    min_tokens: int = 1024
    """The model's minimum cacheable prompt length."""
    written: set[str] = field(default_factory=set)

    def use(self, blocks: list[Block]) -> CacheUse:
        """Charge one request (in order); remembers the prefixes it writes."""
        hashes: list[str] = []
        cumulative: list[int] = []
        digest = hashlib.sha1()
        total = 0
        for block in blocks:
            digest.update(block.key.encode("utf-8"))
            digest.update(b"\x00")
            hashes.append(digest.copy().hexdigest())
            total += block.tokens
            cumulative.append(total)
        breakpoints = [i for i, b in enumerate(blocks) if b.breakpoint]
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
