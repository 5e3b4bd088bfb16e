"""Anthropic's prompt cache over exact request bodies, with its clock: what each request of a
sequence would read from the cache, write to it (by lifetime) and send uncached.

The rules (Anthropic's prompt-caching documentation):

- a request is one sequence of blocks in the order ``tools`` → ``system`` → ``messages``; a
  block with ``cache_control`` is a breakpoint, and the prefix up to it is what is cached;
- a request reads the longest prefix written before that it repeats *exactly* (cache markers
  aside): at each breakpoint the API checks that position and the blocks before it, up to
  :data:`LOOKBACK_BLOCKS` in all, for a prefix still alive;
- a prefix shorter than the model's minimum cacheable length is not cached;
- what lies between the prefix read and the last cacheable breakpoint is written; each part at
  the lifetime of the breakpoint that closes it (``"ttl": "1h"`` one hour, else 5 minutes);
  what follows the last breakpoint is ordinary input;
- an entry lives its lifetime from its last use: a read refreshes it at no cost.

Tokens are counted locally (:mod:`engine.messages.tokens`), each block once by content; a
comparison of two sequences (pass-through and steered) counts both alike.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from engine.messages.tokens import MESSAGE_OVERHEAD, count_blocks, count_system, count_tool
from engine.models import Usage
from engine.store.exchanges import canonical

LOOKBACK_BLOCKS = 20
"""Positions checked per breakpoint, the breakpoint's own included (Anthropic: "up to
approximately 20 blocks before your explicit breakpoint")."""
FIVE_MINUTES = 300.0
ONE_HOUR = 3600.0


@dataclass(frozen=True)
class WireBlock:
    """One block of a request as the cache sees it."""

    key: str
    """Its content, cache marker aside, with where it sits (role, first block of a message)."""
    tokens: int
    lifetime: float | None
    """Seconds an entry written at this block lives (None: not a breakpoint)."""


def lifetime_of(block: Any) -> float | None:
    """A block's breakpoint lifetime from its ``cache_control``; None without one."""
    marker = block.get("cache_control") if isinstance(block, dict) else None
    if not isinstance(marker, dict):
        return None
    return ONE_HOUR if marker.get("ttl") == "1h" else FIVE_MINUTES


def _plain(block: Any) -> Any:
    if isinstance(block, dict):
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


class BlockReader:
    """Each request body as its cache blocks, counting a block's tokens once by content."""

    def __init__(self) -> None:
        self._tokens: dict[str, int] = {}

    def _block(self, key: str, count: Any, lifetime: float | None) -> WireBlock:
        tokens = self._tokens.get(key)
        if tokens is None:
            tokens = self._tokens[key] = int(count())
        return WireBlock(key, tokens, lifetime)

    def blocks(self, body: dict[str, Any]) -> list[WireBlock]:
        out: list[WireBlock] = []
        tools = body.get("tools")
        for tool in tools if isinstance(tools, list) else []:
            if isinstance(tool, dict):
                plain = _plain(tool)
                out.append(
                    self._block("T" + canonical(plain), lambda t=plain: count_tool(t),
                                lifetime_of(tool))
                )  # fmt: skip
        system = body.get("system")
        if isinstance(system, str) and system:
            out.append(self._block("S" + canonical(system), lambda: count_system(system), None))
        elif isinstance(system, list):
            for block in system:
                if isinstance(block, dict):
                    plain = _plain(block)
                    out.append(
                        self._block("S" + canonical(plain), lambda b=plain: count_system([b]),
                                    lifetime_of(block))
                    )  # fmt: skip
        messages = body.get("messages")
        for message in messages if isinstance(messages, list) else []:
            if not isinstance(message, dict):
                continue
            role = str(message.get("role"))
            content = message.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            if not isinstance(content, list):
                continue
            for j, block in enumerate(content):
                if not isinstance(block, dict):
                    continue
                plain = _plain(block)
                extra = MESSAGE_OVERHEAD if j == 0 else 0
                out.append(
                    self._block(
                        f"M{role}{j == 0}" + canonical(plain),
                        lambda b=plain, e=extra: count_blocks([b]) + e,
                        lifetime_of(block),
                    )
                )
        return out


@dataclass(frozen=True)
class CacheUse:
    """One request's input side."""

    read: int
    write_5m: int
    write_1h: int
    uncached: int

    @property
    def write(self) -> int:
        return self.write_5m + self.write_1h

    @property
    def total(self) -> int:
        return self.read + self.write + self.uncached

    def usage(self, output_tokens: int = 0) -> Usage:
        """As the API's usage would say it."""
        return Usage(
            input_tokens=self.uncached,
            output_tokens=output_tokens,
            cache_read_input_tokens=self.read,
            cache_creation_input_tokens=self.write,
            cache_creation_1h_input_tokens=self.write_1h,
        )


@dataclass
class WireCache:
    """The prefixes written so far and when each expires; :meth:`use` charges one request."""

    min_tokens: int = 1024
    entries: dict[str, tuple[float, float]] = field(default_factory=dict)
    """A prefix's hash → (when it expires, its lifetime), in seconds."""

    def use(self, blocks: list[WireBlock], at: float) -> CacheUse:
        """Charge one request sent at ``at`` seconds; remember what it writes and reads."""
        hashes: list[str] = []
        cumulative: list[int] = []
        head = b""
        total = 0
        for block in blocks:
            head = hashlib.blake2b(head + block.key.encode(), digest_size=16).digest()
            hashes.append(head.hex())
            total += block.tokens
            cumulative.append(total)
        breakpoints = [i for i, b in enumerate(blocks) if b.lifetime is not None]
        read = 0
        for bp in breakpoints:
            for j in range(bp, max(-1, bp - LOOKBACK_BLOCKS), -1):
                entry = self.entries.get(hashes[j])
                if entry is not None and entry[0] > at:
                    read = max(read, cumulative[j])
                    self.entries[hashes[j]] = (at + entry[1], entry[1])  # a read refreshes
                    break
        cacheable = [bp for bp in breakpoints if cumulative[bp] >= self.min_tokens]
        write_5m = write_1h = 0
        start = read
        for bp in cacheable:
            lifetime = blocks[bp].lifetime or FIVE_MINUTES
            part = max(0, cumulative[bp] - start)
            if lifetime >= ONE_HOUR:
                write_1h += part
            else:
                write_5m += part
            start = max(start, cumulative[bp])
            if hashes[bp] not in self.entries or self.entries[hashes[bp]][0] <= at:
                self.entries[hashes[bp]] = (at + lifetime, lifetime)
        return CacheUse(read, write_5m, write_1h, total - read - write_5m - write_1h)
