"""Steering in flight (``ctxscope proxy --steer RULES``): each Messages request the proxy
forwards goes through :class:`~engine.proxy.steering.Steerer` of its conversation, and what
was changed is kept with the capture, beside the body the agent sent.

A request no rule changes is forwarded as the very bytes that came; a changed one is the
agent's JSON values with the rewrites in place, serialised compactly (key order kept, so the
API reads the same content: the cache matches on content, not on whitespace). A conversation
is the agent's session id with its system prompt (a subagent has its own); a call without
tools that is not a compaction (a title, a quota check) passes as it came. Answers are never
touched: the proxy relays them as they arrive.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from engine.proxy import identity
from engine.proxy.steering import SteerConfig, Steerer

CONVERSATIONS_KEPT = 64
"""Conversations whose steering state is kept (the oldest forgotten first)."""

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


class LiveSteering:
    """The proxy's steering: one :class:`Steerer` per conversation, and the pins each sees."""

    def __init__(
        self,
        rules: tuple[str, ...],
        stale_turns: int = 10,
        horizon: float = 0.25,
        pins_of: Callable[[str], list[str]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rules = rules
        self.clock = clock
        """Seconds, for the cache's lifetimes (a test gives the fake API's clock)."""
        self.stale_turns = stale_turns
        self.horizon = horizon
        self.pins_of = pins_of or (lambda _client: [])
        """The texts pinned in the session an agent's session id names."""
        self.off: set[str] = set()
        """Rules turned off while the agent runs (:meth:`turn_off`)."""
        self._steerers: OrderedDict[tuple[str, str], Steerer] = OrderedDict()
        self._lock = threading.Lock()

    def turn_off(self, rule: str) -> None:
        """Stop a rule from the next request on (its rewrites already made stay, as the
        cache holds them)."""
        self.off.add(rule)

    def rewrite(
        self, path: str, body: bytes
    ) -> tuple[bytes, dict[str, Any] | None, dict[str, Any] | None]:
        """The bytes to send for ``body``, what was done (None: not a request steering looks
        at), and the body's JSON as read (never changed: the recorder stores it). Never
        raises: a failure sends ``body`` as it came, and says why."""
        if identity.api_of(path) != "messages":
            return body, None, None
        try:
            parsed = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return body, None, None
        if not isinstance(parsed, dict) or not isinstance(parsed.get("messages"), list):
            return body, None, None
        if not parsed.get("tools") and not identity.is_compaction(parsed):
            return body, None, parsed  # a side call
        rules = tuple(r for r in self.rules if r not in self.off)
        client = identity.client_session(parsed) or ""
        key = (client, identity.system_of(parsed))
        with self._lock:  # one conversation's requests are steered in their order
            steerer = self._steerers.pop(key, None) or Steerer(SteerConfig())
            self._steerers[key] = steerer
            while len(self._steerers) > CONVERSATIONS_KEPT:
                self._steerers.popitem(last=False)
            steerer.config = SteerConfig(
                rules, self.stale_turns, self.horizon, lambda: self.pins_of(client)
            )
            steered = steerer.steer(parsed, self.clock())
        record = {"rules": list(rules), **steered.as_json()}
        if steered.body is None:
            return body, record, parsed
        record["sent_bytes"] = len(sent := _ENCODER.encode(steered.body).encode())
        record["rewrites"] = [{**r.as_json(), "content": r.content} for r in steered.rewrites]
        return sent, record, parsed


def sent_body(request: dict[str, Any], steering: dict[str, Any] | None) -> dict[str, Any]:
    """The body the proxy sent: the agent's with the stored rewrites in place."""
    if not steering or not steering.get("rewrites"):
        return request
    messages = json.loads(_ENCODER.encode(request.get("messages")))
    for rewrite in steering["rewrites"]:
        parts = [
            int(p.rstrip("]")) for p in rewrite["at"].replace("messages[", "").split(".content[")
        ]
        blocks = messages[parts[0]]["content"]
        if len(parts) == 2:
            blocks[parts[1]]["content"] = rewrite["content"]
        elif isinstance(blocks, str):
            messages[parts[0]]["content"] = [{"type": "text", "text": blocks}, rewrite["content"]]
        else:
            blocks.append(rewrite["content"])
    return {**request, "messages": messages}
