"""Steering: cache-aware rewrites of an agent's requests in flight (``--steer RULES``).

Each rule works on one conversation's requests in order and knows where the *frozen floor*
is: the part of the request the prompt cache already holds — everything up to the message
that carried the previous request's last cache marker, as long as this request repeats it and
that entry is still alive. Above the floor nothing changes but what was changed before: a
rewrite, once made, is made again identically on every later request (it is what the cache
holds), so the cached prefix keeps matching.

- ``dups``: a tool result identical to an earlier one in the same request (the same file read
  again, unchanged) is replaced by a short reference to the earlier call — only below the
  floor, where the tokens are new anyway.
- ``stale``: tool results more than :attr:`SteerConfig.stale_turns` assistant turns old are
  cleared, but only when the cache would be written again anyway (the entry expired, or the
  agent itself changed the prefix above them) or when what clearing saves over the rest of the
  session (estimated as as many requests again as the conversation has had) at the cache-read
  price exceeds what writing the prefix again costs.
- ``pins``: the user's pinned messages (F10, ``ctxscope pin``) are handed to the agent's own
  compaction call (its prompt asks the summary to keep them verbatim) and kept verbatim after
  it, in the continued conversation's first message.

A rule that fails leaves the request exactly as the agent sent it, and says so
(:attr:`Steered.failed`). Answers are never touched: steering sees requests only.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.messages.tokens import count_blocks
from engine.proxy.cache_sim import FIVE_MINUTES, lifetime_of
from engine.proxy.identity import continues_after_compaction, is_compaction, without_cache_control
from engine.store.exchanges import canonical

RULES = ("dups", "stale", "pins")
"""The rules ``--steer`` takes (a comma-separated list, or ``all``)."""

DUP_MIN_TOKENS = 50
"""A repeated result shorter than this is left alone: its reference would save little."""
WRITE_RATIO = 1.25
"""A 5-minute cache write, per input token, as a share of the input price."""
WRITE_1H_RATIO = 2.0
READ_RATIO = 0.1
"""A cache read, as a share of the input price (Anthropic's prompt-caching prices)."""


def parse_rules(text: str) -> tuple[str, ...]:
    """``dups,stale`` → the rules; ``all`` → every rule; ValueError naming an unknown one."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return RULES
    unknown = [n for n in names if n not in RULES]
    if unknown or not names:
        raise ValueError(
            f"unknown steering rule {', '.join(unknown) or repr(text)}: "
            f"choose from {', '.join(RULES)} or all"
        )
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class SteerConfig:
    """Which rules run, and their numbers."""

    rules: tuple[str, ...] = ()
    stale_turns: int = 10
    """A tool result older than this many assistant turns is stale."""
    horizon: float = 0.25
    """How many more requests the ``stale`` rule expects, as a share of the requests so far
    (0: it clears only when the cache is written again anyway)."""
    pins: Callable[[], list[str]] = field(default=lambda: [])
    """The texts the user pinned in this conversation, in order."""


@dataclass
class Rewrite:
    """One change to a request: where, by which rule, and the tokens it removed."""

    rule: str
    at: str
    """``messages[5].content[0]``."""
    tool_use_id: str = ""
    tokens_before: int = 0
    tokens_after: int = 0
    first: bool = True
    """Made on this request (False: a rewrite made before, carried again)."""
    message: int = 0
    """The index of the message it changed."""

    def as_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "at": self.at,
            "tool_use_id": self.tool_use_id,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "first": self.first,
        }


@dataclass
class Steered:
    """A request after steering: the body to send (None: send the agent's as it came)."""

    body: dict[str, Any] | None
    floor: int = 0
    """Messages above the frozen floor: sent exactly as the request before sent them."""
    held: int = 0
    """Messages the cache held of this request; more than :attr:`floor` when the ``stale``
    rule chose to write part of it again."""
    rewrites: list[Rewrite] = field(default_factory=list)
    failed: str = ""
    """Why a rule failed (the request then went as sent)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "floor": self.floor,
            "held": self.held,
            "rewrites": [r.as_json() for r in self.rewrites],
            "failed": self.failed,
        }


def _reference(first_id: str) -> str:
    return (
        f"[ctxscope: this result is identical to the result of tool call {first_id} above; "
        "not repeated]"
    )


def _cleared(turns: int) -> str:
    return f"[ctxscope: an old tool result ({turns}+ turns ago) cleared to save context]"


PIN_HEADING = "Messages the user pinned (ctxscope), kept verbatim:"
PIN_ASK = (
    "The user pinned the messages below (ctxscope). Quote each of them verbatim in your "
    "summary, under a heading 'Pinned messages'."
)


def _tokens(content: Any) -> int:
    if isinstance(content, str):
        return count_blocks([{"type": "text", "text": content}])
    if isinstance(content, list):
        return count_blocks([b for b in content if isinstance(b, dict)])
    return 0


@dataclass
class _Sent:
    """What the conversation's previous request sent, as the cache holds it."""

    keys: list[str]
    """Each message's content, cache markers aside."""
    last_marker: int
    """The message that carried its last cache marker (-1: none)."""
    lifetime: float
    at: float
    head: str
    """The tools' and system's content."""


class Steerer:
    """The rules over one conversation's requests, in order (one per conversation)."""

    def __init__(self, config: SteerConfig) -> None:
        self.config = config
        self.results: dict[str, tuple[str, Any]] = {}
        """Sticky result rewrites: tool_use id → (rule, the content sent instead)."""
        self.pin_block: dict[str, Any] | None = None
        """The pins' text block appended to the continued conversation's first message."""
        self.pin_first: str = ""
        """That first message's key (the pins follow it while it stays)."""
        self.previous: _Sent | None = None
        self.requests = 0

    def steer(self, body: dict[str, Any], at: float) -> Steered:
        """The request to send for ``body`` (sent at ``at`` seconds), never changing
        ``body`` itself. A failure sends ``body`` as it came."""
        try:
            steered = self._steer(body, at)
        except Exception as exc:  # noqa: BLE001 - a rule's failure must not stop the request
            return Steered(None, failed=f"{type(exc).__name__}: {exc}")
        self.requests += 1
        sent = steered.body if steered.body is not None else body
        self.previous = _remember(sent, at)
        return steered

    def _steer(self, body: dict[str, Any], at: float) -> Steered:
        messages = body.get("messages")
        if not isinstance(messages, list) or not self.config.rules:
            return Steered(None)
        rules = self.config.rules
        out = copy.deepcopy(messages)
        rewrites: list[Rewrite] = []
        compaction = is_compaction(body)
        # What was rewritten before is rewritten again: the cache holds it so.
        for i, message in enumerate(out):
            for j, block in enumerate(_blocks(message)):
                if block.get("type") == "tool_result" and block.get("tool_use_id") in self.results:
                    rule, content = self.results[str(block["tool_use_id"])]
                    rewrites.append(_replace(block, content, rule, i, j, first=False))
        if "pins" in rules and self.pin_block is not None and out:
            if _key(out[0]) == self.pin_first:
                _append(out[0], self.pin_block)
                tokens = _tokens([self.pin_block])
                rewrites.append(Rewrite("pins", "messages[0]", tokens_after=tokens, first=False))
            else:
                self.pin_block = None
        held = self._floor(body, out, at)
        floor = held
        if "dups" in rules:
            rewrites += self._dups(out, held)
        if "stale" in rules and not compaction:
            cleared = self._stale(out, held)
            rewrites += cleared
            floor = min([floor, *(r.message for r in cleared)])
        if "pins" in rules:
            rewrites += self._pins(out, compaction, continues_after_compaction(body))
        if not rewrites:
            return Steered(None, floor=floor, held=held)
        return Steered({**body, "messages": out}, floor=floor, held=held, rewrites=rewrites)

    def _floor(self, body: dict[str, Any], messages: list[Any], at: float) -> int:
        """How many leading messages the cache holds of this request (0: none, expired, or
        the agent changed the tools or system prompt)."""
        before = self.previous
        if before is None or before.last_marker < 0:
            return 0
        if at - before.at > before.lifetime or _head(body) != before.head:
            return 0
        same = 0
        for mine, theirs in zip(messages, before.keys, strict=False):
            if _key(mine) != theirs:
                break
            same += 1
        return min(same, before.last_marker + 1)

    def _dups(self, messages: list[Any], floor: int) -> list[Rewrite]:
        """Results below the floor identical to an earlier one: a reference instead."""
        seen: dict[str, str] = {}
        out: list[Rewrite] = []
        for i, message in enumerate(messages):
            for j, block in enumerate(_blocks(message)):
                if block.get("type") != "tool_result":
                    continue
                tool_id = str(block.get("tool_use_id", ""))
                content = block.get("content")
                if tool_id in self.results:
                    continue
                key = canonical([without_cache_control(content), bool(block.get("is_error"))])
                first = seen.setdefault(key, tool_id)
                if i < floor or first == tool_id or _tokens(content) < DUP_MIN_TOKENS:
                    continue
                self.results[tool_id] = ("dups", _reference(first))
                out.append(_replace(block, _reference(first), "dups", i, j))
        return out

    def _stale(self, messages: list[Any], floor: int) -> list[Rewrite]:
        """Old results cleared when the cache is written again anyway, or when clearing
        them saves more than writing the prefix again costs."""
        turns = [
            i
            for i, m in enumerate(messages)
            if isinstance(m, dict) and m.get("role") == "assistant"
        ]
        if len(turns) <= self.config.stale_turns:
            return []
        limit = turns[-self.config.stale_turns - 1]  # results before this turn are stale
        candidates = [
            (i, j, block)
            for i, message in enumerate(messages[:limit])
            for j, block in enumerate(_blocks(message))
            if block.get("type") == "tool_result"
            and str(block.get("tool_use_id", "")) not in self.results
            and _tokens(block.get("content")) >= DUP_MIN_TOKENS
        ]
        if not candidates:
            return []
        earliest = candidates[0][0]
        if earliest < floor:
            cleared = sum(_tokens(b.get("content")) for _, _, b in candidates)
            rewritten = sum(_tokens(_content(m)) for m in messages[earliest:floor]) - cleared
            lifetime = self.previous.lifetime if self.previous else FIVE_MINUTES
            write = WRITE_1H_RATIO if lifetime > FIVE_MINUTES else WRITE_RATIO
            cost = max(rewritten, 0) * (write - READ_RATIO)
            saved = cleared * READ_RATIO * self.requests * self.config.horizon
            if saved <= cost:
                return []
        out = []
        for i, j, block in candidates:
            text = _cleared(self.config.stale_turns)
            self.results[str(block.get("tool_use_id", ""))] = ("stale", text)
            out.append(_replace(block, text, "stale", i, j))
        return out

    def _pins(self, messages: list[Any], compaction: bool, continued: bool) -> list[Rewrite]:
        pins = self.config.pins()
        if not pins or not messages:
            return []
        quoted = "\n\n".join(f"<pinned>\n{p}\n</pinned>" for p in pins)
        if compaction:
            block = {"type": "text", "text": f"{PIN_ASK}\n\n{quoted}"}
            _append(messages[-1], block)
            at = f"messages[{len(messages) - 1}]"
            return [Rewrite("pins", at, tokens_after=_tokens([block]), message=len(messages) - 1)]
        if continued and self.pin_block is None:
            self.pin_block = {"type": "text", "text": f"{PIN_HEADING}\n\n{quoted}"}
            self.pin_first = _key(messages[0])
            _append(messages[0], self.pin_block)
            return [Rewrite("pins", "messages[0]", tokens_after=_tokens([self.pin_block]))]
        return []


def _content(message: Any) -> Any:
    return message.get("content") if isinstance(message, dict) else None


def _blocks(message: Any) -> list[dict[str, Any]]:
    content = _content(message)
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _append(message: Any, block: dict[str, Any]) -> None:
    """``block`` after the message's blocks, before a cache marker's move: the marker stays on
    the block that had it."""
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = [{"type": "text", "text": content}, block]
    elif isinstance(content, list):
        content.append(block)


def _replace(
    block: dict[str, Any], content: Any, rule: str, i: int, j: int, first: bool = True
) -> Rewrite:
    before = _tokens(block.get("content"))
    block["content"] = content
    return Rewrite(
        rule,
        f"messages[{i}].content[{j}]",
        str(block.get("tool_use_id", "")),
        before,
        _tokens(content),
        first,
        i,
    )


def _key(message: Any) -> str:
    return canonical(without_cache_control(message))


def _head(body: dict[str, Any]) -> str:
    return canonical(without_cache_control([body.get("tools"), body.get("system")]))


def _remember(body: dict[str, Any], at: float) -> _Sent:
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    last, lifetime = -1, FIVE_MINUTES
    for i, message in enumerate(messages):
        for block in _blocks(message):
            found = lifetime_of(block)
            if found is not None:
                last, lifetime = i, found
    return _Sent([_key(m) for m in messages], last, lifetime, at, _head(body))
