"""Full-text search over archived raw segments (SQLite FTS5), for Recall.

One row of the ``archive_fts`` virtual table per archived message: its text, its tool calls,
and for a tool message the full observation (what the model saw, not the compressed form).
Rows are written and removed only inside the store's own transactions — a compaction indexes
its segment in the transaction that archives it, an undo unindexes it in the transaction that
restores it — so the index always agrees with the segments, a crash included.

Plain SQL (peewee has no FTS5 model for an external-content-free table with UNINDEXED
columns that we need here); the ``porter unicode61`` tokenizer matches word forms
("retries" finds "retry").
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

from peewee import SqliteDatabase

from engine.models import RecallHit

TABLE = "archive_fts"
CREATE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts5("
    "body, session_id UNINDEXED, segment_id UNINDEXED, message_id UNINDEXED, "
    "round UNINDEXED, role UNINDEXED, tool_name UNINDEXED, "
    "tokenize = 'porter unicode61')"
)
SNIPPET_TOKENS = 24
"""Words around the match in each snippet."""
_WORD = re.compile(r"\w+", re.UNICODE)


def sql(db: SqliteDatabase, statement: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
    """``db.execute_sql`` with a type (peewee's is untyped)."""
    cursor: sqlite3.Cursor = db.execute_sql(statement, params)  # type: ignore[no-untyped-call]
    return cursor


def create(db: SqliteDatabase) -> None:
    """Create the index table (idempotent)."""
    sql(db, CREATE)


def _body(
    role: str, content: str, tool_calls: list[dict[str, Any]], observation: str | None
) -> str:
    parts = [observation if observation is not None else content]
    if role == "tool" and observation is not None and content:
        parts.append(content)
    for call in tool_calls or []:
        args = json.dumps(call.get("input") or {}, ensure_ascii=False)
        parts.append(f"{call.get('name', '')} {args}")
    return "\n".join(p for p in parts if p)


def index_segment(db: SqliteDatabase, segment_id: int) -> int:
    """Index every message of ``segment_id`` (call inside the archiving transaction)."""
    rows = sql(
        db,
        "SELECT m.id, m.session_id, r.number, m.role, m.content, m.tool_calls, m.meta, "
        "(SELECT o.text FROM observation_row o WHERE o.message_id = m.id "
        " ORDER BY o.id DESC LIMIT 1) "
        "FROM message_row m JOIN round_row r ON r.id = m.round_id "
        "WHERE m.segment_id = ? ORDER BY m.id",
        (segment_id,),
    ).fetchall()
    for mid, sid, number, role, content, calls, meta, observation in rows:
        tool_calls = json.loads(calls) if calls else []
        tool_name = (json.loads(meta) if meta else {}).get("tool_name")
        sql(
            db,
            f"INSERT INTO {TABLE} (body, session_id, segment_id, message_id, round, role, "
            "tool_name) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                _body(role, content, tool_calls, observation),
                sid,
                segment_id,
                mid,
                number,
                role,
                tool_name,
            ),
        )
    return len(rows)


def unindex_segment(db: SqliteDatabase, segment_id: int) -> int:
    """Remove ``segment_id`` from the index (its messages are back in history)."""
    cursor = sql(db, f"DELETE FROM {TABLE} WHERE segment_id = ?", (segment_id,))
    return int(cursor.rowcount or 0)


def indexed_messages(db: SqliteDatabase, session_id: int) -> set[int]:
    """The message ids the index holds for a session (for consistency checks)."""
    rows = sql(db, f"SELECT message_id FROM {TABLE} WHERE session_id = ?", (session_id,)).fetchall()
    return {int(r[0]) for r in rows}


def match_expression(query: str, any_word: bool = False) -> str:
    """The user's words as an FTS5 expression: each word quoted (no operator injection),
    all of them required, or any of them."""
    words = [w for w in _WORD.findall(query)]
    return (" OR " if any_word else " ").join(f'"{w}"' for w in words)


def search(db: SqliteDatabase, session_id: int, query: str, limit: int) -> list[RecallHit]:
    """The best ``limit`` archived messages of the session for ``query``, best first.

    Every word must match; when that finds nothing, any word may (ranked by bm25).
    """
    for any_word in (False, True):
        expression = match_expression(query, any_word)
        if not expression:
            return []
        rows = sql(
            db,
            f"SELECT message_id, segment_id, round, role, tool_name, "
            f"snippet({TABLE}, 0, '[', ']', '…', {SNIPPET_TOKENS}), bm25({TABLE}) "
            f"FROM {TABLE} WHERE {TABLE} MATCH ? AND session_id = ? "
            f"ORDER BY bm25({TABLE}) LIMIT ?",
            (expression, session_id, limit),
        ).fetchall()
        if rows:
            return [
                RecallHit(
                    message_id=mid,
                    segment_id=seg,
                    round=rnd,
                    role=role,
                    tool_name=tool,
                    snippet=" ".join(str(snip).split()),
                    score=round(-float(score), 4),
                )
                for mid, seg, rnd, role, tool, snip, score in rows
            ]
    return []
