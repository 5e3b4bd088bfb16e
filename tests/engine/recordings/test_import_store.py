"""The store's batch writes an import uses, and the order and links of what an import stores.

``Store.append_rounds`` writes many rounds in a few statements (``executemany`` with ids
assigned in conversation order); these tests hold it to what the one-row-at-a-time writes
store, and hold an import to ids in conversation order and observations linked to their
``tool`` messages.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engine.messages.tokens import count_summary
from engine.models import (
    Message,
    MessageMeta,
    Observation,
    RoundStatus,
    ToolCall,
    Usage,
    UsageRecord,
)
from engine.recordings.importing import import_session
from engine.store import Store

DATA = Path(__file__).parents[2] / "data"
CLAUDE = DATA / "claude_code" / "resumed_session.jsonl"
MINI = DATA / "mini_swe_agent.traj.json"
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def a_round(n: int) -> list[Message]:
    """User, a tool call, its result, the answer: round ``n``'s messages, one minute apart."""
    at = [T0 + timedelta(hours=n, minutes=i) for i in range(4)]
    call = ToolCall(id=f"toolu_{n}", name="Bash", input={"command": f"echo {n}"})
    return [
        Message(role="user", content=f"question {n}", created_at=at[0], tokens=7),
        Message(
            role="assistant",
            content="",
            tool_calls=[call],
            meta=MessageMeta(step=1, origin={"thinking": [{"thinking": "ü"}]}),
            created_at=at[1],
            tokens=12,
        ),
        Message(
            role="tool",
            content='{"status":"ok"}',
            meta=MessageMeta(step=1, tool_name="Bash", tool_use_id=call.id),
            created_at=at[2],
            tokens=9,
        ),
        Message(
            role="assistant",
            content=f"answer {n}",
            meta=MessageMeta(step=2, final=True),
            created_at=at[3],
            tokens=6,
        ),
    ]


def rows(store: Store, table: str, session_id: int) -> list[tuple[Any, ...]]:
    """Every column of the session's rows but the ids, in id order, as SQLite holds them."""
    con = sqlite3.connect(store.path)
    try:
        cursor = con.execute(
            f'SELECT * FROM "{table}" WHERE session_id = ? ORDER BY id', (session_id,)
        )
        names = [d[0] for d in cursor.description]
        keep = [i for i, name in enumerate(names) if name not in ("id", "session_id", "round_id")]
        return [tuple(row[i] for i in keep) for row in cursor]
    finally:
        con.close()


def new_session(store: Store) -> int:
    sid = store.create_session("/ws", "t").id
    assert sid is not None
    return sid


def test_append_rounds_stores_what_append_round_stores_round_by_round(store: Store) -> None:
    one_by_one, batched = new_session(store), new_session(store)
    statuses = [RoundStatus.FINISHED, RoundStatus.INTERRUPTED, RoundStatus.FINISHED]
    for n, status in enumerate(statuses, start=1):
        store.append_round(one_by_one, a_round(n), status)
    written = store.append_rounds(
        batched, [(a_round(n), s) for n, s in enumerate(statuses, start=1)]
    )

    assert rows(store, "round_row", batched) == rows(store, "round_row", one_by_one)
    assert rows(store, "message_row", batched) == rows(store, "message_row", one_by_one)
    assert [(r.index, r.status, r.started_at, r.finished_at) for r, _ in written] == [
        (n, s, T0 + timedelta(hours=n), T0 + timedelta(hours=n, minutes=3))
        for n, s in enumerate(statuses, start=1)
    ]
    # the returned ids are the stored ones, consecutive, in conversation order
    ids = [m.id for _, msgs in written for m in msgs]
    assert ids == [m.id for m in store.all_messages(batched)]
    assert ids == list(range(ids[0], ids[0] + 12))
    assert [r.id for r, _ in written] == [r.id for r in store.rounds(batched)]
    # defaults filled as peewee fills them: not pinned, not archived, in history
    assert [m.pinned for m in store.all_messages(batched)] == [False] * 12
    assert [r.archived for r in store.rounds(batched)] == [False] * 3
    assert len(store.history(batched).messages) == 12


def test_append_rounds_continues_after_what_is_stored(store: Store) -> None:
    earlier, sid = new_session(store), new_session(store)
    store.append_round(sid, a_round(1), RoundStatus.FINISHED)
    store.append_round(earlier, a_round(9), RoundStatus.FINISHED)
    highest = max(m.id or 0 for m in store.all_messages(earlier))

    written = store.append_rounds(sid, [(a_round(2), RoundStatus.FINISHED)])

    assert written[0][0].index == 2
    assert [m.id for m in written[0][1]] == list(range(highest + 1, highest + 5))
    assert [m.meta.round for m in store.all_messages(sid)] == [1] * 4 + [2] * 4
    assert [m.content for m in store.all_messages(earlier)][0] == "question 9"


def test_append_rounds_refuses_a_round_without_messages(store: Store) -> None:
    sid = new_session(store)
    with pytest.raises(ValueError, match="at least its user message"):
        store.append_rounds(sid, [(a_round(1), RoundStatus.FINISHED), ([], RoundStatus.FINISHED)])
    assert store.rounds(sid) == []


def test_batched_observations_and_usages_store_what_single_writes_store(store: Store) -> None:
    single, batched = new_session(store), new_session(store)

    def observations(sid: int) -> list[Observation]:
        return [
            Observation(
                session_id=sid,
                round_index=1,
                step=n,
                tool_use_id=f"toolu_{n}",
                tool_name="Read",
                result={"status": "ok", "data": {"content": "é\n" * n}},
                text="é\n" * n,
                tokens_full=n,
            )
            for n in (1, 2)
        ]

    def usages(sid: int) -> list[UsageRecord]:
        return [
            UsageRecord(
                session_id=sid,
                round_index=1,
                step=n,
                usage=Usage(input_tokens=n, cache_read_input_tokens=100),
                source="import",
                created_at=T0,
            )
            for n in (1, 2)
        ]

    for obs in observations(single):
        store.add_observation(obs)
    for rec in usages(single):
        store.add_usage(rec)
    store.add_observations(observations(batched))
    store.add_usages(usages(batched))

    assert rows(store, "observation_row", batched) == rows(store, "observation_row", single)
    assert rows(store, "usage_row", batched) == rows(store, "usage_row", single)
    assert len(rows(store, "usage_row", batched)) == 2


@pytest.mark.parametrize("path", [CLAUDE, MINI], ids=["claude-code", "mini-swe-agent"])
def test_an_import_stores_messages_in_conversation_order(store: Store, path: Path) -> None:
    report = import_session(store, path, "/ws")
    sid = report.session.id
    assert sid is not None
    messages = store.all_messages(sid)  # archived ones too, by id

    rounds = [m.meta.round for m in messages]
    assert rounds == sorted(rounds)
    assert len(set(rounds)) == report.rounds == len(store.rounds(sid))
    firsts = {}
    for m in messages:
        firsts.setdefault(m.meta.round, m)
    assert {m.role for m in firsts.values()} == {"user"}
    # every result follows the step that called it
    called: set[str] = set()
    for m in messages:
        called |= {c.id for c in m.tool_calls}
        if m.role == "tool":
            assert m.meta.tool_use_id in called


@pytest.mark.parametrize("path", [CLAUDE, MINI], ids=["claude-code", "mini-swe-agent"])
def test_an_import_links_each_observation_to_its_tool_message(store: Store, path: Path) -> None:
    report = import_session(store, path, "/ws")
    sid = report.session.id
    assert sid is not None
    by_id = {m.id: m for m in store.all_messages(sid)}
    observations = store.observations(sid)

    assert len(observations) == report.observations > 0
    for obs in observations:
        message = by_id[obs.message_id]
        assert (message.role, message.meta.tool_use_id) == ("tool", obs.tool_use_id)
        assert (message.meta.round, message.meta.step) == (obs.round_index, obs.step)
        assert obs.tokens_compressed == message.tokens


@pytest.mark.parametrize("path", [CLAUDE, MINI], ids=["claude-code", "mini-swe-agent"])
def test_an_imports_stored_tokens_are_its_history_as_stored(store: Store, path: Path) -> None:
    report = import_session(store, path, "/ws")
    sid = report.session.id
    assert sid is not None
    history = store.history(sid)

    assert report.tokens_stored == sum(m.tokens or 0 for m in history.messages) + sum(
        count_summary(s) for s in history.summaries
    )
    assert [s.tokens for s in history.summaries] == [count_summary(s) for s in history.summaries]
    assert report.compactions == (1 if path == CLAUDE else 0)
