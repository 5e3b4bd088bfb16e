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
import threading
from typing import Any

from peewee import Database

from engine.models import RecallHit
from engine.store.dialect import is_postgres, sql

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


def create(db: Database) -> None:
    """Create the index table (idempotent)."""
    if is_postgres(db):
        for statement in PG_CREATE:
            sql(db, statement)
    else:
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


def index_segment(db: Database, segment_id: int) -> int:
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
        body = _body(role, content, tool_calls, observation)
        sql(
            db,
            PG_INSERT if is_postgres(db) else INSERT,
            (
                *((body, tsvector(body)) if is_postgres(db) else (body,)),
                sid,
                segment_id,
                mid,
                number,
                role,
                tool_name,
            ),
        )
    return len(rows)


def unindex_segment(db: Database, segment_id: int) -> int:
    """Remove ``segment_id`` from the index (its messages are back in history)."""
    cursor = sql(db, f"DELETE FROM {TABLE} WHERE segment_id = ?", (segment_id,))
    return int(cursor.rowcount or 0)


def indexed_messages(db: Database, session_id: int) -> set[int]:
    """The message ids the index holds for a session (for consistency checks)."""
    rows = sql(db, f"SELECT message_id FROM {TABLE} WHERE session_id = ?", (session_id,)).fetchall()
    return {int(r[0]) for r in rows}


def match_expression(query: str, any_word: bool = False) -> str:
    """The user's words as an FTS5 expression: each word quoted (no operator injection),
    all of them required, or any of them."""
    words = [w for w in _WORD.findall(query)]
    return (" OR " if any_word else " ").join(f'"{w}"' for w in words)


def search(db: Database, session_id: int, query: str, limit: int) -> list[RecallHit]:
    """The best ``limit`` archived messages of the session for ``query``, best first.

    Every word must match; when that finds nothing, any word may (ranked by bm25 on SQLite,
    ``ts_rank_cd`` on PostgreSQL).
    """
    for any_word in (False, True):
        if is_postgres(db):
            wanted = tsquery(query, any_word)
            if wanted is None:
                return []
            found = sql(db, PG_SEARCH, (wanted, session_id, limit)).fetchall()
            rows = [(*r[:5], fts5_snippet(r[5], query, any_word), r[6]) for r in found]
        else:
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
            )
            rows = rows.fetchall()
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


# ---------------------------------------------------------------------- PostgreSQL
# The same index as a table with a ``tsvector`` column under a GIN index. Its words are not
# PostgreSQL's: each text is read by SQLite's own FTS5 tokenizer (``porter unicode61``, the
# one above) in a private in-memory table, and its terms go into the ``tsvector`` with their
# positions as they are. A query's words are read the same way, so both databases compare
# the same terms and find the same messages. The snippet is FTS5's too, made from the hit's
# text. (A position past 16 383, PostgreSQL's last, counts as that one: a phrase that far
# into one message may match where FTS5 would not.)
PG_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (body TEXT NOT NULL, session_id INTEGER NOT NULL, "
    "segment_id INTEGER NOT NULL, message_id INTEGER NOT NULL, round INTEGER, role TEXT, "
    "tool_name TEXT, words TSVECTOR NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_words ON {TABLE} USING GIN (words)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_session ON {TABLE} (session_id)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_segment ON {TABLE} (segment_id)",
)
INSERT = (
    f"INSERT INTO {TABLE} (body, session_id, segment_id, message_id, round, role, tool_name) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
PG_INSERT = (
    f"INSERT INTO {TABLE} (body, words, session_id, segment_id, message_id, round, role, "
    "tool_name) VALUES (?, ?::tsvector, ?, ?, ?, ?, ?, ?)"
)
PG_SEARCH = (
    "SELECT message_id, segment_id, round, role, tool_name, body, -ts_rank_cd(words, q) "
    f"FROM {TABLE}, CAST(? AS tsquery) AS q WHERE words @@ q AND session_id = ? "
    "ORDER BY ts_rank_cd(words, q) DESC, message_id LIMIT ?"
)
LAST_POSITION = 16383
_tokenizer = threading.local()


def _fts5() -> sqlite3.Connection:
    """This thread's in-memory FTS5 table, with the index's tokenizer."""
    con: sqlite3.Connection | None = getattr(_tokenizer, "con", None)
    if con is None:
        con = sqlite3.connect(":memory:")
        con.execute(CREATE.replace(f"EXISTS {TABLE} ", "EXISTS t "))
        con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        _tokenizer.con = con
    return con


def terms(text: str) -> list[str]:
    """``text``'s terms as FTS5 indexes them, in order."""
    con = _fts5()
    con.execute("INSERT INTO t (rowid, body) VALUES (1, ?)", (text,))
    try:
        rows = con.execute('SELECT term FROM v ORDER BY "offset"').fetchall()
    finally:
        con.execute("DELETE FROM t")
    return [r[0] for r in rows]


def _lexeme(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector(text: str) -> str:
    """``text``'s FTS5 terms as a ``tsvector`` literal, each at its positions."""
    positions: dict[str, list[int]] = {}
    for n, term in enumerate(terms(text), start=1):
        positions.setdefault(term, []).append(min(n, LAST_POSITION))
    return " ".join(
        f"{_lexeme(t)}:{','.join(map(str, sorted(set(p))))}" for t, p in positions.items()
    )


def tsquery(query: str, any_word: bool) -> str | None:
    """The user's words as a ``tsquery`` literal, each a phrase of its terms as FTS5 reads a
    quoted word; all of them required, or any. None: no word."""
    phrases = []
    for word in _WORD.findall(query):
        parts = terms(word)
        if parts:
            phrases.append("(" + " <-> ".join(_lexeme(t) for t in parts) + ")")
    return (" | " if any_word else " & ").join(phrases) or None


def fts5_snippet(body: str, query: str, any_word: bool) -> str:
    """FTS5's snippet of ``body`` for ``query``, as the SQLite index gives it."""
    con = _fts5()
    con.execute("INSERT INTO t (rowid, body) VALUES (1, ?)", (body,))
    try:
        row = con.execute(
            f"SELECT snippet(t, 0, '[', ']', '…', {SNIPPET_TOKENS}) FROM t WHERE t MATCH ?",
            (match_expression(query, any_word),),
        ).fetchone()
    finally:
        con.execute("DELETE FROM t")
    return str(row[0]) if row else body[:200]
