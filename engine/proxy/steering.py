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
    content: Any = None
    """What was sent there instead (a result's content, or the block appended)."""

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

    messages: list[Any]
    last_marker: int
    """The message that carried its last cache marker (-1: none)."""
    lifetime: float
    at: float
    tools: Any
    system: Any


class Steerer:
    """The rules over one conversation's requests, in order (one per conversation).

    Made to run on the proxy's forwarding path: a request is compared with the previous one
    message by message (dict equality, in C), a message is copied only when a rule changes it,
    and what a rule learns of a tool result (its content's key and size) is kept by its
    tool-use id, so a request costs what is new in it."""

    def __init__(self, config: SteerConfig) -> None:
        self.config = config
        self.results: dict[str, tuple[str, Any, int, int]] = {}
        """Sticky result rewrites: tool_use id → (rule, the content sent instead, tokens
        before, tokens after)."""
        self.key_of: dict[str, str] = {}
        """A tool result's content (cache markers aside), by its tool_use id."""
        self.first_of: dict[str, str] = {}
        """The first tool_use id whose result was that content."""
        self.pin_block: dict[str, Any] | None = None
        """The pins' text block appended to the continued conversation's first message."""
        self.pin_first: Any = None
        """That first message as the agent sent it (the pins follow it while it stays)."""
        self.previous: _Sent | None = None
        self.sizes: list[int | None] = []
        """Estimated tokens of each message of the previous request sent (None: not needed
        yet)."""
        self.requests = 0

    def steer(self, body: dict[str, Any], at: float) -> Steered:
        """The request to send for ``body`` (sent at ``at`` seconds), never changing
        ``body`` itself. A failure sends ``body`` as it came."""
        try:
            steered = self._steer(body, at)
        except Exception as exc:  # noqa: BLE001 - a rule's failure must not stop the request
            steered = Steered(None, failed=f"{type(exc).__name__}: {exc}")
        self.requests += 1
        sent = steered.body if steered.body is not None else body
        self.previous = _remember(sent, at)
        count = len(self.previous.messages)
        self.sizes = self.sizes[: min(steered.floor, count)]
        self.sizes += [None] * (count - len(self.sizes))
        return steered

    def _steer(self, body: dict[str, Any], at: float) -> Steered:
        messages = body.get("messages")
        if not isinstance(messages, list) or not self.config.rules:
            return Steered(None)
        rules = self.config.rules
        out = list(messages)
        owned: set[int] = set()

        def own(i: int) -> dict[str, Any]:
            """Message ``i`` of the request to send, copied before its first change."""
            if i not in owned:
                m = out[i]
                content = m.get("content")
                copied = (
                    [dict(b) if isinstance(b, dict) else b for b in content]
                    if isinstance(content, list)
                    else content
                )
                out[i] = {**m, "content": copied}
                owned.add(i)
            message: dict[str, Any] = out[i]
            return message

        rewrites: list[Rewrite] = []
        compaction = is_compaction(body)
        if self.results:  # what was rewritten before is rewritten again: the cache holds it so
            for i, message in enumerate(messages):
                for j, block in enumerate(_blocks(message)):
                    found = self.results.get(str(block.get("tool_use_id", "")))
                    if found is not None and block.get("type") == "tool_result":
                        rule, content, before, after = found
                        own(i)["content"][j]["content"] = content
                        rewrites.append(
                            Rewrite(rule, _at(i, j), str(block["tool_use_id"]), before, after,
                                    False, i, content)
                        )  # fmt: skip
        if "pins" in rules and self.pin_block is not None and out:
            if _same(messages[0], self.pin_first):
                _append(own(0), self.pin_block)
                tokens = _tokens([self.pin_block])
                rewrites.append(
                    Rewrite("pins", "messages[0]", tokens_after=tokens, first=False,
                            content=self.pin_block)
                )  # fmt: skip
            else:
                self.pin_block = None
        held = self._floor(body, out, at)
        floor = held
        if "dups" in rules:
            rewrites += self._dups(messages, held, own)
        if "stale" in rules and not compaction:
            cleared = self._stale(messages, out, held, own)
            rewrites += cleared
            floor = min([floor, *(r.message for r in cleared)])
        if "pins" in rules:
            rewrites += self._pins(messages, own, compaction, continues_after_compaction(body))
        if not rewrites:
            return Steered(None, floor=floor, held=held)
        return Steered({**body, "messages": out}, floor=floor, held=held, rewrites=rewrites)

    def _floor(self, body: dict[str, Any], messages: list[Any], at: float) -> int:
        """How many leading messages the cache holds of this request (0: none, expired, or
        the agent changed the tools or system prompt)."""
        before = self.previous
        if before is None or before.last_marker < 0 or at - before.at > before.lifetime:
            return 0
        if not _same(body.get("tools"), before.tools) or not _same(
            body.get("system"), before.system
        ):
            return 0
        same = 0
        for mine, theirs in zip(messages[: before.last_marker + 1], before.messages, strict=False):
            if not _same(mine, theirs):
                break
            same += 1
        return same

    def _key(self, tool_id: str, block: dict[str, Any]) -> str:
        """A result's content key, computed once per tool_use id."""
        key = self.key_of.get(tool_id)
        if key is None:
            content = without_cache_control(block.get("content"))
            key = self.key_of[tool_id] = canonical([content, bool(block.get("is_error"))])
        return key

    def _dups(self, messages: list[Any], floor: int, own: Callable[[int], Any]) -> list[Rewrite]:
        """Results below the floor identical to an earlier one of the request, still sent
        whole: a reference to it instead."""
        present: set[str] = set()
        out: list[Rewrite] = []
        for i, message in enumerate(messages):
            for j, block in enumerate(_blocks(message)):
                if block.get("type") != "tool_result":
                    continue
                tool_id = str(block.get("tool_use_id", ""))
                key = self._key(tool_id, block)
                first = self.first_of.setdefault(key, tool_id)
                if first not in present or first in self.results:
                    # The first copy is gone (a compaction) or not sent whole: this one is
                    # the copy later repeats refer to.
                    first = self.first_of[key] = tool_id
                present.add(tool_id)
                if i < floor or first == tool_id or tool_id in self.results:
                    continue
                if len(key) // 4 < DUP_MIN_TOKENS:
                    continue
                out.append(self._rewrite(own(i), i, j, tool_id, "dups", _reference(first)))
        return out

    def _rewrite(
        self, message: dict[str, Any], i: int, j: int, tool_id: str, rule: str, content: Any
    ) -> Rewrite:
        block = message["content"][j]
        before, after = _tokens(block.get("content")), _tokens(content)
        block["content"] = content
        self.results[tool_id] = (rule, content, before, after)
        return Rewrite(rule, _at(i, j), tool_id, before, after, True, i, content)

    def _size(self, i: int, message: Any) -> int:
        """Estimated tokens of message ``i`` (its JSON's length / 4), kept while it stays."""
        while len(self.sizes) <= i:
            self.sizes.append(None)
        size = self.sizes[i]
        if size is None:
            size = self.sizes[i] = len(canonical(message)) // 4
        return size

    def _stale(
        self, messages: list[Any], out: list[Any], floor: int, own: Callable[[int], Any]
    ) -> list[Rewrite]:
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
        candidates = []
        for i in range(limit):
            for j, block in enumerate(_blocks(messages[i])):
                tool_id = str(block.get("tool_use_id", ""))
                if block.get("type") != "tool_result" or tool_id in self.results:
                    continue
                size = len(self._key(tool_id, block)) // 4
                if size >= DUP_MIN_TOKENS:
                    candidates.append((i, j, tool_id, size))
        if not candidates:
            return []
        earliest = candidates[0][0]
        if earliest < floor:
            cleared = sum(size for *_, size in candidates)
            rewritten = sum(self._size(i, out[i]) for i in range(earliest, floor)) - cleared
            lifetime = self.previous.lifetime if self.previous else FIVE_MINUTES
            write = WRITE_1H_RATIO if lifetime > FIVE_MINUTES else WRITE_RATIO
            cost = max(rewritten, 0) * (write - READ_RATIO)
            saved = cleared * READ_RATIO * self.requests * self.config.horizon
            if saved <= cost:
                return []
        text = _cleared(self.config.stale_turns)
        return [
            self._rewrite(own(i), i, j, tool_id, "stale", text) for i, j, tool_id, _ in candidates
        ]

    def _pins(
        self, messages: list[Any], own: Callable[[int], Any], compaction: bool, continued: bool
    ) -> list[Rewrite]:
        if not messages or not (compaction or (continued and self.pin_block is None)):
            return []
        pins = self.config.pins()
        if not pins:
            return []
        quoted = "\n\n".join(f"<pinned>\n{p}\n</pinned>" for p in pins)
        if compaction:
            block = {"type": "text", "text": f"{PIN_ASK}\n\n{quoted}"}
            last = len(messages) - 1
            _append(own(last), block)
            return [Rewrite("pins", f"messages[{last}]", tokens_after=_tokens([block]),
                            message=last, content=block)]  # fmt: skip
        self.pin_block = {"type": "text", "text": f"{PIN_HEADING}\n\n{quoted}"}
        self.pin_first = messages[0]
        _append(own(0), self.pin_block)
        tokens = _tokens([self.pin_block])
        return [Rewrite("pins", "messages[0]", tokens_after=tokens, content=self.pin_block)]


def _at(i: int, j: int) -> str:
    return f"messages[{i}].content[{j}]"


def _same(mine: Any, theirs: Any) -> bool:
    """Equal, cache markers aside (a marker moves from request to request)."""
    return bool(mine == theirs) or without_cache_control(mine) == without_cache_control(theirs)


def _content(message: Any) -> Any:
    return message.get("content") if isinstance(message, dict) else None


def _blocks(message: Any) -> list[dict[str, Any]]:
    """A message's content blocks (a block that is not an object makes a rule fail, and the
    request go as it came)."""
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _append(message: dict[str, Any], block: dict[str, Any]) -> None:
    """``block`` after the message's blocks (a cache marker stays on the block that had
    it)."""
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = [{"type": "text", "text": content}, block]
    elif isinstance(content, list):
        content.append(block)


def _remember(body: dict[str, Any], at: float) -> _Sent:
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    last, lifetime = -1, FIVE_MINUTES
    for i, message in enumerate(messages):
        for block in _blocks(message):
            found = lifetime_of(block)
            if found is not None:
                last, lifetime = i, found
    return _Sent(messages, last, lifetime, at, body.get("tools"), body.get("system"))
