"""Proxied requests (``ctxscope proxy``): each request and its answer, the pieces of its body
stored once by digest, its messages as the previous request's prefix plus what is new."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from peewee import chunked

from engine.exchanges import Exchange
from engine.models import Usage, utcnow
from engine.store.access import reads, writes
from engine.store.models import ExchangeBlobRow, ExchangeRow, SessionRow
from engine.store.part import StorePart

BLOBS = "$blobs"
"""In a stored shape: the digests that stand for a list (system blocks, tools, messages)."""
BLOB = "$blob"
"""In a stored shape: the digest that stands for a string system prompt."""
PIECES = ("system", "tools", "messages", "instructions", "input")
"""The parts of a request body every request repeats, stored as blobs: the Messages API's
system, tools and messages; the Responses API's instructions, tools and input."""
CHAINED = ("messages", "input")
"""The conversation's list: a request's repeats its predecessor's first ones."""


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))

CHAINS_KEPT = 4
"""Conversations whose last request the store keeps in memory to compare the next with."""


def canonical(value: Any) -> str:
    """The JSON text a piece is stored as (key order kept: the body comes back as sent)."""
    return _ENCODER.encode(value)


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


class ExchangeStore(StorePart):
    """Proxied requests and the blobs they share."""

    _chains: dict[tuple[int, str], tuple[int, list[str], list[Any]]]

    def _chain_cache(self) -> dict[tuple[int, str], tuple[int, list[str], list[Any]]]:
        """The last request of the few latest (session, thread)s: its id, its message digests
        and its messages, so the next request of the thread is compared with it in memory and
        only its new messages are serialised and hashed."""
        if not hasattr(self, "_chains"):
            self._chains = {}
        return self._chains

    @writes
    def add_exchange(
        self,
        exchange: Exchange,
        source: str,
        title: str = "",
        parent_source: str | None = None,
        agent_id: str | None = None,
        agent: str = "",
        agent_version: str = "",
    ) -> Exchange:
        """Store ``exchange`` in the session recorded from ``source`` (created on its first
        request, under the session of ``parent_source`` for a subagent), in one transaction;
        ``agent`` (the agents' registry name, ``claude-code``) is the recorded agent of the
        session, told from the request (``engine.proxy.identity.agent_of_request``)."""
        session_id = self._proxy_session(
            source, title, exchange.model, parent_source, agent_id, agent, agent_version
        )
        body = exchange.request
        shape: dict[str, Any] = dict(body)
        new_blobs: dict[str, str] = {}
        prefix_id: int | None = None
        prefix_len = 0
        message_digests: list[str] | None = None
        chained: list[Any] = []
        for key in PIECES:
            value = body.get(key)
            if key not in CHAINED and isinstance(value, str):
                text = canonical(value)
                shape[key] = {BLOB: _blob(text, new_blobs)}
            elif isinstance(value, list) and key not in CHAINED:
                shape[key] = {BLOBS: [_blob(canonical(piece), new_blobs) for piece in value]}
            elif isinstance(value, list):
                chained = value
                message_digests, prefix_id, prefix_len, texts = self._messages(
                    session_id, exchange.thread, value
                )
                for text in texts:
                    _blob(text, new_blobs)  # the repeated prefix is stored already
                shape[key] = {BLOBS: message_digests[prefix_len:]}
        self._insert_blobs(new_blobs)
        now = exchange.created_at or utcnow()
        row = {
            "session": session_id,
            "kind": exchange.kind,
            "thread": exchange.thread,
            "method": exchange.method,
            "path": exchange.path,
            "status": exchange.status,
            "outcome": exchange.outcome,
            "stream": exchange.stream,
            "model": exchange.model,
            "shape": shape,
            "prefix_id": prefix_id,
            "prefix_len": prefix_len,
            "response": exchange.response,
            "usage": None
            if exchange.usage is None
            else {**exchange.usage.model_dump(), "cache_creation": exchange.cache_creation},
            "headers": exchange.headers,
            "duration_ms": exchange.duration_ms,
            "created_at": now,
            "steering": exchange.steering,
        }
        new_id = self._insert_row(ExchangeRow, row)
        if message_digests is not None:
            chains = self._chain_cache()
            chains.pop((session_id, exchange.thread), None)
            chains[(session_id, exchange.thread)] = (new_id, message_digests, chained)
            while len(chains) > CHAINS_KEPT:
                del chains[next(iter(chains))]
        self._touch(session_id)
        return exchange.model_copy(update={"id": new_id, "session_id": session_id})

    def _proxy_session(
        self,
        source: str,
        title: str,
        model: str,
        parent_source: str | None,
        agent_id: str | None,
        agent: str = "",
        agent_version: str = "",
    ) -> int:
        row = (
            SessionRow.select(
                SessionRow.id, SessionRow.recorded_agent, SessionRow.recorded_agent_version
            )
            .where(SessionRow.source == source)
            .first()
        )
        if row is not None:
            if agent and (row.recorded_agent, row.recorded_agent_version) != (
                agent,
                agent_version or row.recorded_agent_version,
            ):
                # A session made before its agent was told (a side call came first, an older
                # ctxscope recorded it), or a newer version of the agent: said from now on.
                SessionRow.update(
                    recorded_agent=agent,
                    recorded_agent_version=agent_version or row.recorded_agent_version,
                ).where(SessionRow.id == row.id).execute()
            return int(row.id)
        parent_id = None
        if parent_source is not None:
            parent = (
                SessionRow.select(SessionRow.id).where(SessionRow.source == parent_source).first()
            )
            # A side call can come before the conversation's first request: the
            # conversation's session is made now, and its first request finds it.
            parent_id = (
                self._proxy_session(parent_source, "", model, None, None, agent, agent_version)
                if parent is None
                else int(parent.id)
            )
        now = utcnow()
        created = SessionRow.create(
            title=title,
            workspace="",
            provider="proxy",
            model=model,
            strategy="layered",
            created_at=now,
            updated_at=now,
            parent_session_id=parent_id,
            agent_id=agent_id,
            source=source,
            recorded_agent=agent or None,
            recorded_agent_version=agent_version or None,
        )
        return int(created.id)

    def _messages(
        self, session_id: int, thread: str, messages: list[Any]
    ) -> tuple[list[str], int | None, int, list[str]]:
        """The digests of ``messages``, the thread's previous request and how many of its
        messages these repeat, and the JSON texts of the messages after those."""
        cached = self._chain_cache().get((session_id, thread))
        if cached is not None:
            previous_id, previous, previous_messages = cached
            common = 0
            for mine, theirs in zip(messages, previous_messages, strict=False):
                if mine != theirs:
                    break
                common += 1
            texts = [canonical(m) for m in messages[common:]]
            digests = previous[:common] + [digest(t) for t in texts]
            return digests, (previous_id if common else None), common, texts
        texts = [canonical(m) for m in messages]
        digests = [digest(t) for t in texts]
        stored_id, repeated = self._stored_prefix(session_id, thread, digests)
        return digests, stored_id, repeated, texts[repeated:]

    def _stored_prefix(
        self, session_id: int, thread: str, digests: list[str]
    ) -> tuple[int | None, int]:
        """The thread's previous request as stored, and how many of its messages repeat."""
        last = (
            ExchangeRow.select(ExchangeRow.id)
            .where((ExchangeRow.session == session_id) & (ExchangeRow.thread == thread))
            .order_by(ExchangeRow.id.desc())
            .first()
        )
        if last is None:
            return None, 0
        common = 0
        for mine, theirs in zip(digests, self._message_digests(int(last.id)), strict=False):
            if mine != theirs:
                break
            common += 1
        return (int(last.id), common) if common else (None, 0)

    def _message_digests(self, exchange_id: int) -> list[str]:
        """The message digests of a stored request, its prefix chain followed back."""
        chain: list[tuple[int, list[str]]] = []
        next_id: int | None = exchange_id
        while next_id is not None:
            row = ExchangeRow.get_by_id(next_id)
            messages = next(
                (row.shape[k] for k in CHAINED if isinstance(row.shape.get(k), dict)), None
            )
            new = list(messages[BLOBS]) if messages is not None else []
            chain.append((row.prefix_len, new))
            next_id = row.prefix_id
        digests: list[str] = []
        for prefix_len, new in reversed(chain):
            digests = digests[:prefix_len] + new
        return digests

    def _insert_blobs(self, blobs: dict[str, str]) -> None:
        if not blobs:
            return
        known: set[str] = set()
        for batch in chunked(list(blobs), 500):
            known.update(
                r.digest
                for r in ExchangeBlobRow.select(ExchangeBlobRow.digest).where(
                    ExchangeBlobRow.digest.in_(batch)
                )
            )
        fresh = [{"digest": d, "content": t} for d, t in blobs.items() if d not in known]
        self._insert_rows(ExchangeBlobRow, fresh)

    @reads
    def exchanges(self, session_id: int) -> list[Exchange]:
        """The session's proxied requests in order, each body rebuilt exactly as sent."""
        rows = list(
            ExchangeRow.select().where(ExchangeRow.session == session_id).order_by(ExchangeRow.id)
        )
        wanted: set[str] = set()
        for row in rows:
            for key in PIECES:
                value = row.shape.get(key)
                if isinstance(value, dict):
                    wanted.update(value.get(BLOBS, []))
                    if BLOB in value:
                        wanted.add(value[BLOB])
        texts: dict[str, Any] = {}
        for batch in chunked(sorted(wanted), 500):
            for blob in ExchangeBlobRow.select().where(ExchangeBlobRow.digest.in_(batch)):
                texts[blob.digest] = json.loads(blob.content)
        messages_of: dict[int, list[Any]] = {}
        out: list[Exchange] = []
        for row in rows:
            body = dict(row.shape)
            for key in PIECES:
                value = body.get(key)
                if not isinstance(value, dict):
                    continue
                if BLOB in value:
                    body[key] = texts[value[BLOB]]
                elif BLOBS in value:
                    pieces = [texts[d] for d in value[BLOBS]]
                    if key in CHAINED:
                        before = (
                            self._messages_before(row.prefix_id, messages_of, texts)
                            if row.prefix_id is not None
                            else []
                        )
                        pieces = before[: row.prefix_len] + pieces
                        messages_of[row.id] = pieces
                    body[key] = pieces
            out.append(_exchange(row, body))
        return out

    def _messages_before(
        self, exchange_id: int, known: dict[int, list[Any]], texts: dict[str, Any]
    ) -> list[Any]:
        """A request's messages: from this read when it was read, else from its digests."""
        if exchange_id in known:
            return known[exchange_id]
        return [texts.get(d) or _read_blob(d) for d in self._message_digests(exchange_id)]

    @reads
    def proxy_session(self, source: str) -> int | None:
        row = SessionRow.select(SessionRow.id).where(SessionRow.source == source).first()
        return None if row is None else int(row.id)

    @reads
    def latest_headers(self, session_id: int) -> dict[str, str]:
        """The headers kept with the session's latest proxied request (``anthropic-beta``:
        the ``context-1m`` beta decides its window); ``{}`` without one."""
        row = (
            ExchangeRow.select(ExchangeRow.headers)
            .where(ExchangeRow.session == session_id)
            .order_by(ExchangeRow.id.desc())
            .first()
        )
        headers = row.headers if row is not None else None
        return {str(k).lower(): str(v) for k, v in headers.items()} if headers else {}

    @reads
    def exchange_count(self, session_id: int) -> int:
        """How many proxied requests the session holds (a screen following it asks often)."""
        return int(ExchangeRow.select().where(ExchangeRow.session == session_id).count())

    @reads
    def exchange_blob_count(self) -> int:
        """How many distinct pieces the proxied requests stored (a long session: few)."""
        return int(ExchangeBlobRow.select().count())

    @reads
    def proxied_sessions(self) -> list[int]:
        """Sessions that hold proxied requests."""
        rows = ExchangeRow.select(ExchangeRow.session).distinct()
        return sorted(int(r.session_id) for r in rows)


def _blob(text: str, into: dict[str, str]) -> str:
    key = digest(text)
    into[key] = text
    return key


def _read_blob(key: str) -> Any:
    return json.loads(ExchangeBlobRow.get(ExchangeBlobRow.digest == key).content)


def _exchange(row: Any, body: dict[str, Any]) -> Exchange:
    usage = row.usage
    return Exchange(
        id=row.id,
        session_id=row.session_id,
        kind=row.kind,
        thread=row.thread,
        method=row.method,
        path=row.path,
        status=row.status,
        outcome=row.outcome,
        stream=row.stream,
        model=row.model,
        request=body,
        response=row.response,
        usage=None
        if usage is None
        else Usage(**{k: v for k, v in usage.items() if k != "cache_creation"}),
        cache_creation=(usage or {}).get("cache_creation") or {},
        headers=row.headers,
        duration_ms=row.duration_ms,
        created_at=row.created_at,
        steering=row.steering,
    )
