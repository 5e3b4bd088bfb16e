"""A proxied session as a conversation: its exact requests and answers built into the store's
ordinary rows (rounds, messages, tool results, usage, compactions), so every command and the
workbench read it as they read an imported session.

The conversation is what its latest request sent plus the answer it got. A compaction
(Claude Code's summary call, ``kind`` ``compaction``) ends one part of it: the requests after
it open with the summary ("This session is being continued from a previous conversation"),
which becomes the recorded compaction of everything before, its call's usage in its stats. Each
assistant message carries the usage of the request that answered it (found by its tool-use
ids or its text), so a session's tokens and cost are the requests' own. Subagents and side
calls are child sessions already (the recorder places them); each is built the same way.

The rows are written as ``ctxscope watch`` writes a growing file: only the last round again
as it grows, the whole conversation again when an earlier part changed (an edited message, a
rewind). The builder keeps, per session, only each part's latest request, the answers' usage
by key and the times messages first appeared: not every body.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from engine.exchanges import Exchange
from engine.models import Message, Observation, Usage
from engine.proxy.identity import (
    CONTINUATION,
    api_of,
    continues_after_compaction,
    thread_of,
    title_of,
    without_cache_control,
)
from engine.recordings.anthropic_jsonl import check_blocks, items_of
from engine.recordings.base import Item, Parsed
from engine.recordings.writer import Resume, check, write
from engine.settings.config import Settings
from engine.store import Store
from engine.store.exchanges import canonical, digest

FORMAT = "proxy"
REMINDER = "<system-reminder>"
"""How Claude Code's reminders open: a user text block that is the harness's, not the user's."""


def answer_key(content: Any) -> str | None:
    """What identifies an assistant message from request to request: its first tool-use id,
    else its text (the thinking blocks and cache markers an agent may drop or move aside)."""
    if not isinstance(content, list):
        return "text:" + digest(str(content)) if isinstance(content, str) else None
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_use" and "id" in block:
            return f"tool:{block['id']}"
    text = "\n".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )
    return "text:" + digest(text) if text else None


@dataclass
class _Part:
    """One part of the conversation between compactions: its latest request."""

    key: str
    latest: Exchange
    seen: list[datetime] = field(default_factory=list)
    """When each message index was first sent (the message's time)."""
    after: Exchange | None = None
    """The compaction call that ended the part before this one."""
    compactions_at: int = 0
    """How many compaction calls had been seen when the part began."""
    memo: list[tuple[Any, list[Item], Counter[str]]] = field(default_factory=list)
    """Per message index: the message last read there, its items and what it left out; a
    request that repeats it (dict equality, in C) reuses them, so a request costs its new
    messages."""


@dataclass
class SessionConversation:
    """What the builder keeps of one proxied session to build its conversation."""

    session_id: int
    parts: list[_Part] = field(default_factory=list)
    usage_of: dict[str, tuple[Usage, datetime, str]] = field(default_factory=dict)
    """An answer's key → its request's usage, time and model."""
    compactions: list[Exchange] = field(default_factory=list)
    stored: list[tuple[Any, ...]] = field(default_factory=list)
    """The signatures of the items as last written."""
    round_starts: list[int] = field(default_factory=list)
    """Where each written round starts, by item index."""
    live: list[Message] | None = None
    """The messages no compaction archived, as last written (None: not written by this
    process yet)."""
    observations: list[Observation] = field(default_factory=list)
    """Their observations."""
    signatures: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    """The last items' signatures by the item's id (an item reused is not signed again)."""

    def add(self, exchange: Exchange) -> bool:
        """Take in one stored request; True when it changes the conversation."""
        if api_of(exchange.path) != "messages":
            return False
        body = exchange.request
        messages = body.get("messages")
        if exchange.kind == "compaction":
            # Only its answer and usage are kept: the summary and what writing it cost.
            self.compactions.append(exchange.model_copy(update={"request": {}}))
            return False
        if not isinstance(messages, list) or not messages:
            return False
        response = exchange.response or {}
        key = answer_key(response.get("content")) if response.get("type") == "message" else None
        if key is not None and exchange.usage is not None:
            self.usage_of.setdefault(key, (exchange.usage, exchange.created_at, exchange.model))
        thread = thread_of(body)
        part = self.parts[-1] if self.parts else None
        if part is None or self._compacted(part, thread, body):
            part = _Part(key=thread, latest=exchange, compactions_at=len(self.compactions))
            part.after = self.compactions[-1] if self.compactions and self.parts else None
            self.parts.append(part)
        part.key = thread
        part.latest = exchange
        while len(part.seen) < len(messages):
            part.seen.append(exchange.created_at)
        return True

    def _compacted(self, part: _Part, thread: str, body: dict[str, Any]) -> bool:
        """The request opens a new part: it continues from a summary in a first message of
        its own, after a compaction call (or after a part that was not itself continued)."""
        if thread == part.key or not continues_after_compaction(body):
            return False
        return len(self.compactions) > part.compactions_at or not continues_after_compaction(
            part.latest.request
        )

    def parsed(self) -> Parsed:
        """The conversation as items, as an importer would give them."""
        skipped: Counter[str] = Counter()
        items: list[Item] = []
        line = 0
        for n, part in enumerate(self.parts):
            messages = list(part.latest.request.get("messages") or [])
            seen = list(part.seen)
            response = part.latest.response or {}
            if response.get("type") == "message" and isinstance(response.get("content"), list):
                messages.append({"role": "assistant", "content": response["content"]})
                ended = part.latest.created_at + timedelta(milliseconds=part.latest.duration_ms)
                seen.append(ended)
            if messages and continues_after_compaction(part.latest.request):
                line += 1
                summary, rest = _split_summary(messages[0])
                items.append(self._summary(summary, line, seen[0], part.after if n else None))
                messages[0] = rest
            awaiting: set[str] = set()
            memo = part.memo
            del memo[len(messages) :]
            for index in range(len(messages)):
                line += 1
                message = messages[index]
                if index < len(memo) and memo[index][0] == message:
                    _, made, left = memo[index]
                else:
                    left = Counter()
                    created = seen[min(index, len(seen) - 1)]
                    made = self._items(message, line, created, left)
                    entry = (message, made, left)
                    if index < len(memo):
                        memo[index] = entry
                    else:
                        memo.append(entry)
                skipped.update(left)
                for item in made:
                    if item.kind == "assistant":
                        awaiting = {c.id for c in item.calls}
                    elif item.kind == "user":
                        awaiting = set()
                    elif item.tool_use_id not in awaiting:
                        skipped["result_without_call"] += 1
                        continue
                    else:
                        awaiting.discard(item.tool_use_id)
                    items.append(item)
        first = self.parts[0].latest.request if self.parts else {}
        return Parsed(
            fmt=FORMAT,
            items=items,
            title=title_of(first),
            records=len(items),
            skipped=skipped,
            model=str(first.get("model") or ""),
        )

    def _items(
        self, message: Any, line: int, created: datetime, skipped: Counter[str]
    ) -> list[Item]:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            skipped["not_a_message"] += 1
            return []
        role = str(message["role"])
        content = message.get("content")
        raw = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(raw, list):
            skipped["unexpected_shape"] += 1
            return []
        blocks: list[dict[str, Any]] = []
        for block in raw:
            if not isinstance(block, dict):
                skipped["block:not_an_object"] += 1
                continue
            try:
                check_blocks([block], role)
            except ValueError:
                skipped[f"block:{block.get('type')}"] += 1
                continue
            if (
                role == "user"
                and block.get("type") == "text"
                and str(block.get("text", "")).lstrip().startswith(REMINDER)
            ):
                skipped["system_reminder"] += 1
                continue
            blocks.append(without_cache_control(block))
        if not blocks:
            return []
        usage = None
        model = ""
        if role == "assistant":
            key = answer_key(content)
            found = self.usage_of.get(key) if key is not None else None
            if found is not None:
                usage, created, model = found
        out = items_of(role, blocks, line, created, usage)
        for item in out:
            item.model = model
        return out

    def _summary(self, text: str, line: int, created: datetime, call: Exchange | None) -> Item:
        """The compaction's summary, with the call that wrote it (its usage, its model) and
        the context size it was asked over."""
        item = Item("summary", line, created, text=text)
        if call is not None and call.usage is not None:
            item.recorded_call = {
                "agent_id": f"proxy-request-{call.id}",
                "model": call.model,
                "usage": call.usage.model_dump(),
            }
            item.pre_tokens = call.usage.input_side
            item.created_at = max(created, call.created_at)
        return item


def _split_summary(message: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The summary in the continued conversation's first message, and the rest of that
    message (an agent sends the user's next words in the same message)."""
    content = message.get("content")
    if isinstance(content, str):
        return content, {**message, "content": []}
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    at = next(
        (
            i
            for i, b in enumerate(blocks)
            if str(b.get("text", "")).lstrip().startswith(CONTINUATION)
        ),
        0,
    )
    summary = str(blocks[at].get("text", "")) if blocks else ""
    return summary, {**message, "content": blocks[:at] + blocks[at + 1 :]}


def _signature(item: Item) -> tuple[Any, ...]:
    return (
        item.kind,
        item.text,
        tuple((c.id, c.name, canonical(c.input)) for c in item.calls),
        item.tool_use_id,
        item.is_error,
        repr(item.usage.model_dump() if item.usage else None),
        item.pre_tokens,
        canonical(item.thinking),
    )


def save(store: Store, state: SessionConversation, settings: Settings) -> bool:
    """Write what changed of the conversation into its session; True when written whole."""
    parsed = state.parsed()
    if not parsed.items:
        return False
    problems = check(parsed)
    if problems:
        # The writer numbers items by line; here a line is a message of the conversation.
        raise ValueError("; ".join(p.replace("line ", "message ", 1) for p in problems[:3]))
    known = state.signatures
    sigs = [known.get(id(i)) or _signature(i) for i in parsed.items]
    state.signatures = {id(i): sig for i, sig in zip(parsed.items, sigs, strict=True)}
    common = 0
    for old, new in zip(state.stored, sigs, strict=False):
        if old != new:
            break
        common += 1
    if common == len(sigs) == len(state.stored):
        return False
    sid = state.session_id
    resume_at, resume_round = _resume_point(state.round_starts, state.stored)
    with store.begin_write():
        session = store.get_session(sid)
        whole = not state.stored or common < resume_at or state.live is None
        if whole:
            dropped = store.all_messages(sid)
            store.clear_session(sid)
            start, rounds, live, observations = 0, 0, [], []
            state.round_starts = []
        else:
            assert state.live is not None
            start, rounds = resume_at, resume_round
            last = max((m.meta.round or 0 for m in state.live), default=rounds)
            dropped = [m for r in range(rounds + 1, last + 1) for m in store.round_messages(sid, r)]
            store.drop_rounds(sid, rounds + 1)
            # What stays live is kept in memory from the last write: no read of the history.
            live = [m for m in state.live if (m.meta.round or 0) <= rounds]
            observations = [o for o in state.observations if (o.round_index or 0) <= rounds]
            state.round_starts = [p for p in state.round_starts if p < start]
        pinned = {_pin_key(m) for m in dropped if m.pinned}
        tail = Parsed(fmt=FORMAT, items=copy.copy(parsed.items[start:]), title=parsed.title)
        report = write(
            store, tail, "", settings, resume=Resume(session, rounds, live, observations)
        )
        if pinned:  # the user's pins outlive the rows written again
            again = [
                m.id
                for m in (_messages(store, sid) if whole else live)
                if m.id is not None and not m.pinned and _pin_key(m) in pinned
            ]
            store.pin(sid, again)
    # The writer extends ``live`` and ``observations`` with what it stored (and empties them
    # at a compaction): the next write starts from them.
    state.live, state.observations = live, observations
    state.round_starts += [start + p for p in report.round_starts]
    state.stored = sigs
    return whole


def _messages(store: Store, session_id: int) -> list[Message]:
    """Every message of the session: archived, then in history."""
    archived = [m for segment in store.segments(session_id) for m in segment.messages]
    return archived + store.history(session_id).messages


def _pin_key(message: Message) -> tuple[str, str, str | None]:
    return message.role, message.content, message.meta.tool_use_id


def pinned_texts(store: Store, session_id: int) -> list[str]:
    """What the user pinned in a proxied session, in order (for the ``pins`` rule)."""
    return [m.content for m in _messages(store, session_id) if m.pinned and m.content]


def _resume_point(round_starts: list[int], stored: list[tuple[Any, ...]]) -> tuple[int, int]:
    """Where the next write starts: the last round (written again as it grows), or just after
    a compaction no round follows yet."""
    last_start = round_starts[-1] if round_starts else 0
    summaries = [n for n, sig in enumerate(stored) if sig[0] == "summary"]
    if summaries and summaries[-1] > last_start:
        return summaries[-1] + 1, len(round_starts)
    if round_starts:
        return last_start, len(round_starts) - 1
    return 0, 0


def build(store: Store, session_id: int, settings: Settings) -> SessionConversation:
    """Build a proxied session's conversation whole from its stored requests (a session
    recorded before, or by another process); the state a recorder goes on from."""
    state = SessionConversation(session_id)
    for exchange in store.exchanges(session_id):
        state.add(exchange)
    save(store, state, settings)
    return state
