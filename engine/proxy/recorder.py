"""Storing what went through the proxy, off the forwarding path.

The proxy hands over each captured request and answer as bytes (:class:`Capture`); one
thread parses them, tells which conversation they belong to (:mod:`engine.proxy.identity`)
and writes them in one transaction each, so the event loop only forwards bytes. Closing waits
for every capture handed over: a request is stored whole or, if the process dies first, not
at all. Headers are never stored but the few that shape the answer (:data:`KEPT_HEADERS`):
no key, no token.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from engine.exchanges import Exchange, ExchangeKind
from engine.models import Usage
from engine.proxy import identity
from engine.proxy.conversation import SessionConversation, build, pinned_texts, save
from engine.proxy.identity import api_of
from engine.proxy.stream import decompressed, reassemble, responses_stream, responses_usage
from engine.settings.config import Settings
from engine.store import Store

log = logging.getLogger(__name__)

KEPT_HEADERS = ("anthropic-version", "anthropic-beta")
"""The request headers stored with a request: they decide what the API does with it (the
``context-1m`` beta gives a model its 1M window)."""
CAPTURED_HEADERS = (*KEPT_HEADERS, "user-agent")
"""The request headers a capture carries: the stored ones, and ``User-Agent``, read to tell
the agent (Claude Code's ``claude-cli/…``) and then dropped."""

CONVERSATIONS_KEPT = 32
"""Sessions whose conversation the recorder keeps building in memory; another is built
again from its stored requests when its next request comes."""

RECORD_LIMIT = 32 * 1024 * 1024
"""Bytes of one answer the recorder keeps (``ProxyConfig.record_limit``); a longer answer is
forwarded whole but stored without its body, as ``{"_not_recorded": {"bytes": …, "limit":
…}}``: named, with its size."""


@dataclass
class Capture:
    """One request through the proxy as bytes, filled in while it is forwarded."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    started: float = field(default_factory=time.time)
    """When the request came in, in seconds since the epoch: a float, not a ``datetime``,
    which costs the forwarding process about 50 µs more to pickle into the recorder's pipe
    (its ``copyreg`` reduction, with caches cold between requests; issue 44)."""
    status: int = 0
    content_type: str = ""
    content_encoding: str = ""
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    overflow: bool = False
    outcome: str = "complete"
    duration_ms: float = 0.0
    steering: dict[str, Any] | None = None
    """What ``--steer`` changed before sending (the body above is the agent's)."""
    parsed: dict[str, Any] | None = None
    """The body's JSON as steering read it (never changed), so it is not parsed twice."""
    limit: int = RECORD_LIMIT
    """Bytes of the answer kept at most (:data:`RECORD_LIMIT`)."""

    def add(self, chunk: bytes) -> None:
        """Keep a piece of the answer, up to :attr:`limit` bytes in all (the memory one answer
        can take in the proxy)."""
        self.size += len(chunk)
        if self.size > self.limit:
            self.overflow = True
            self.chunks.clear()
        elif not self.overflow:
            self.chunks.append(chunk)


class CaptureSink(Protocol):
    """What the proxy hands its captures to: a :class:`Recorder` (a thread) or a
    :class:`~engine.proxy.recorder_process.RecorderProcess`."""

    def submit(self, capture: Capture) -> object: ...

    @property
    def behind(self) -> bool:
        """So much waits to be stored that the proxy should forward no new request yet."""
        ...

    def when_caught_up(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` on the proxy's event loop once no longer :attr:`behind`."""
        ...

    def close(self) -> None: ...


def recorded_path(method: str, path: str) -> bool:
    """The requests the proxy records: Messages calls (not ``count_tokens``, not models), and
    the OpenAI Responses API's (``…/responses``, Codex; ``…/responses/compact``, its
    compaction)."""
    return method == "POST" and api_of(path) != ""


def pins_in(path: Path | str, client: str) -> list[str]:
    """The texts pinned in the conversation the agent's session id ``client`` names, in the
    database at ``path`` (a read of its own)."""
    store = Store.open(path, read_only=True)
    try:
        sid = store.proxy_session(f"proxy:{client}")
        return [] if sid is None else pinned_texts(store, sid)
    finally:
        store.close()


class Recorder:
    """Stores captures into the database at ``path`` on one thread of its own."""

    def __init__(
        self,
        path: Path | str,
        on_stored: Callable[[Exchange], None] | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.path = path
        self.on_stored = on_stored
        self.settings = settings or Settings()
        self._conversations: OrderedDict[int, SessionConversation] = OrderedDict()
        """The sessions whose conversation this recorder builds, the latest last."""
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxscope-record")
        self._store: Store | None = None
        self._main_threads: dict[str, tuple[str, frozenset[str], str]] = {}
        """Per client session: its conversation's thread name, the first-message digests it
        has had, and its latest system prompt's digest."""
        self._lock = threading.Lock()
        self.conversations: dict[int, str] = {}
        """The conversations this recorder stored requests of (not subagents' or side
        calls'): session id → the source it was recorded under (``proxy:<agent's id>``)."""
        self.failures: deque[str] = deque(maxlen=100)
        """Why the latest requests that could not be stored were not (they were forwarded)."""
        self.failed = 0
        """How many failures there were in all (the deque keeps the latest 100)."""

    def submit(self, capture: Capture) -> Future[Exchange | None]:
        """Store ``capture`` on the recorder's thread; returns at once."""
        return self._executor.submit(self.record, capture)

    behind = False
    """Never: a capture waits in the executor's queue (the thread's recorder serves the
    recorder's own process, which reads the next capture only once it stored the last, and
    the tests)."""

    def when_caught_up(self, callback: Callable[[], None]) -> None:
        callback()

    def close(self) -> None:
        """Wait for every capture handed over to be stored, then close the database."""
        self._executor.submit(self.close_store)
        self._executor.shutdown(wait=True)

    def close_store(self) -> None:
        """Close the database, in the thread that recorded (peewee's connections are per
        thread)."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def record(self, capture: Capture) -> Exchange | None:
        """Store ``capture`` in the calling thread (what :meth:`submit` runs); what cannot be
        stored is said in :attr:`failures`."""
        try:
            exchange, where = self.exchange_of(capture)
            if exchange is None:
                return None
            if self._store is None:
                self._store = Store.open(self.path)
            stored = self._store.add_exchange(exchange, **where)
        except Exception as exc:  # noqa: BLE001 - a request the recorder cannot store is still forwarded
            log.warning("ctxscope proxy: a request was forwarded but not stored: %s", exc)
            self._fail(str(exc))
            return None
        if stored.kind in ("main", "compaction") and stored.session_id is not None:
            self.conversations.setdefault(stored.session_id, str(where.get("source", "")))
        self._build(self._store, stored)
        if self.on_stored is not None:
            self.on_stored(stored)
        return stored

    def _build(self, store: Store, stored: Exchange) -> None:
        """The stored request into its session's conversation (rounds, messages, usage); a
        conversation that cannot be built is said, and built whole at its next request."""
        sid = stored.session_id
        assert sid is not None
        try:
            state = self._conversations.pop(sid, None)
            if state is None:
                state = build(store, sid, self.settings)  # this process has not built it yet
            elif state.add(stored):
                save(store, state, self.settings)
            self._conversations[sid] = state
            while len(self._conversations) > CONVERSATIONS_KEPT:
                self._conversations.popitem(last=False)
        except Exception as exc:  # noqa: BLE001 - the request is stored; its reading is not
            log.warning("ctxscope proxy: session %s: conversation not built: %s", sid, exc)
            self._fail(f"session {sid}: conversation not built: {exc}")

    def _fail(self, why: str) -> None:
        self.failures.append(why)
        self.failed += 1

    def pins_of(self, client: str) -> list[str]:
        """The texts pinned in the conversation an agent's session id names (the ``pins``
        steering rule asks at a compaction call and the request after it only: a read of its
        own, off the recorder's thread)."""
        return pins_in(self.path, client)

    def exchange_of(self, capture: Capture) -> tuple[Exchange | None, dict[str, Any]]:
        """The exchange a capture records, and where it goes (its session's source)."""
        try:
            body = capture.parsed if capture.parsed is not None else json.loads(capture.body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None, {}  # not a Messages request: the upstream answered what it answered
        if not isinstance(body, dict):
            return None, {}
        response, usage, cache_creation, outcome = self._answer(capture)
        api = api_of(capture.path)
        kind, thread, where = (
            self._place(body) if api == "messages" else self._place_responses(body, api)
        )
        if api == "messages":
            agent, version = identity.agent_of_request(capture.headers, body)
            if agent:
                where.update(agent=agent, agent_version=version)
        exchange = Exchange(
            kind=kind,
            thread=thread,
            method=capture.method,
            path=capture.path,
            status=capture.status,
            outcome=outcome,
            stream=bool(body.get("stream")),
            model=str(body.get("model") or ""),
            request=body,
            response=response,
            usage=usage,
            cache_creation=cache_creation,
            headers={k: v for k, v in capture.headers.items() if k.lower() in KEPT_HEADERS},
            duration_ms=capture.duration_ms,
            created_at=datetime.fromtimestamp(capture.started, UTC),
            steering=capture.steering,
        )
        return exchange, where

    def _answer(
        self, capture: Capture
    ) -> tuple[dict[str, Any] | None, Usage | None, dict[str, int], str]:
        outcome = capture.outcome
        if capture.overflow:
            # Forwarded whole; its body not kept: said, with its size.
            kept = {"_not_recorded": {"bytes": capture.size, "limit": capture.limit}}
            return kept, None, {}, outcome
        if capture.status == 0:
            return None, None, {}, "error"
        try:
            data = decompressed(capture.chunks, capture.content_encoding)
        except (ValueError, OSError) as exc:
            return {"_unreadable": str(exc)}, None, {}, outcome
        response: dict[str, Any] | None
        api = api_of(capture.path)
        if capture.content_type.startswith("text/event-stream") and api != "messages":
            response, done = responses_stream(data)
            if outcome == "complete" and not done:
                outcome = "incomplete"
        elif capture.content_type.startswith("text/event-stream"):
            assembled = reassemble(data)
            response = assembled.message if assembled.error is None else assembled.error
            if outcome == "complete" and not assembled.complete:
                outcome = "incomplete"
        else:
            try:
                parsed = json.loads(data)
            except (json.JSONDecodeError, UnicodeDecodeError):
                parsed = {"_text": data.decode("utf-8", "replace")}
            response = parsed if isinstance(parsed, dict) else {"_json": parsed}
        if capture.status >= 400 and outcome == "complete":
            outcome = "error"
        raw = (response or {}).get("usage")
        if not isinstance(raw, dict):
            return response, None, {}, outcome
        if api != "messages":
            return response, responses_usage(raw), {}, outcome
        usage = Usage(
            **{
                name: int(raw.get(name) or 0)
                for name in (
                    "input_tokens",
                    "output_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                )
            }
        )
        creation = raw.get("cache_creation")
        breakdown = (
            {k: int(v) for k, v in creation.items() if isinstance(v, int)}
            if isinstance(creation, dict)
            else {}
        )
        usage.cache_creation_1h_input_tokens = breakdown.get("ephemeral_1h_input_tokens", 0)
        return response, usage, breakdown, outcome

    def _place_responses(
        self, body: dict[str, Any], api: str
    ) -> tuple[ExchangeKind, str, dict[str, Any]]:
        """A Responses API request: Codex names its conversation in ``prompt_cache_key``;
        its compaction goes to ``…/responses/compact``."""
        thread = identity.thread_of(body)
        kind: ExchangeKind = "compaction" if api == "responses-compact" else "main"
        key = body.get("prompt_cache_key")
        client = key if isinstance(key, str) and key else None
        with self._lock:
            if client is not None:
                name = self._main_threads.setdefault(client, (thread, frozenset(), ""))[0]
                return kind, name, {"source": f"proxy:{client}", "title": identity.title_of(body)}
        return kind, thread, {"source": f"proxy:thread:{thread}", "title": identity.title_of(body)}

    def _place(self, body: dict[str, Any]) -> tuple[ExchangeKind, str, dict[str, Any]]:
        """What the request is to its conversation, its thread, and the session it goes to.

        Under one client session id the conversation keeps its first thread's name while its
        first message or its system prompt stays the same (a reminder edited in the first
        message, a changed system block, a compaction's summary: one of the two remains); a
        request with tools that shares neither is a subagent's, one without tools a side call.
        """
        thread = identity.thread_of(body)
        title = identity.title_of(body)
        client = identity.client_session(body)
        if client is None:
            # No session named: a conversation is its first message.
            kind: ExchangeKind = "compaction" if identity.is_compaction(body) else "main"
            return kind, thread, {"source": f"proxy:thread:{thread}", "title": title}
        main = f"proxy:{client}"
        system = identity.system_of(body)
        with self._lock:
            known = self._main_threads.get(client)
            if identity.is_compaction(body):
                return "compaction", known[0] if known else thread, {"source": main, "title": title}
            if body.get("tools") and (
                known is None
                or thread in known[1]
                or system == known[2]
                or identity.continues_after_compaction(body)
            ):
                name = known[0] if known else thread
                threads = (known[1] if known else frozenset()) | {thread}
                self._main_threads[client] = (name, threads, system)
                return "main", name, {"source": main, "title": title}
        kind = "subagent" if body.get("tools") else "side"
        return (
            kind,
            thread,
            {
                "source": f"{main}:{thread[:12]}",
                "title": title,
                "parent_source": main,
                "agent_id": f"{kind}-{thread[:12]}",
            },
        )
