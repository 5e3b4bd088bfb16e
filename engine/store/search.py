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

import functools
import json
import re
import unicodedata
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
                *((body.replace("\0", " "), words(body)) if is_postgres(db) else (body,)),
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
            phrases = [words(w) for w in _WORD.findall(query)]
            phrases = [p for p in phrases if p]
            if not phrases:
                return []
            rows = sql(db, _pg_search(len(phrases), any_word), (*phrases, session_id, limit))
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
# The same index as a table with a ``tsvector`` column under a GIN index. FTS5's tokenizer is
# matched in Python (:func:`words`: runs of letters and digits, lower case, diacritics
# removed, as ``unicode61`` splits and folds), and the words are stemmed by PostgreSQL's
# Snowball English stemmer (Porter's successor) without a stop-word list, as FTS5's
# ``porter`` keeps every word: a text configuration of our own over ``simple``.
TS_CONFIG = "ctxscope_porter"
PG_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (body TEXT NOT NULL, session_id INTEGER NOT NULL, "
    "segment_id INTEGER NOT NULL, message_id INTEGER NOT NULL, round INTEGER, role TEXT, "
    "tool_name TEXT, words TSVECTOR NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_words ON {TABLE} USING GIN (words)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_session ON {TABLE} (session_id)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_segment ON {TABLE} (segment_id)",
    "DO $$ BEGIN "
    f"IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = '{TS_CONFIG}' "
    "AND cfgnamespace = current_schema()::regnamespace) THEN "
    f"CREATE TEXT SEARCH DICTIONARY {TS_CONFIG}_stem (TEMPLATE = snowball, LANGUAGE = english); "
    f"CREATE TEXT SEARCH CONFIGURATION {TS_CONFIG} (COPY = simple); "
    f"ALTER TEXT SEARCH CONFIGURATION {TS_CONFIG} ALTER MAPPING FOR asciiword, word, numword, "
    f"asciihword, hword, numhword, hword_asciipart, hword_part, hword_numpart "
    f"WITH {TS_CONFIG}_stem; "
    "END IF; END $$",
)
INSERT = (
    f"INSERT INTO {TABLE} (body, session_id, segment_id, message_id, round, role, tool_name) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
PG_INSERT = (
    f"INSERT INTO {TABLE} (body, words, session_id, segment_id, message_id, round, role, "
    f"tool_name) VALUES (?, to_tsvector('{TS_CONFIG}', ?), ?, ?, ?, ?, ?, ?)"
)
_ALNUM = re.compile(r"[^\W_]+", re.UNICODE)


def words(text: str) -> str:
    """``text`` as FTS5's ``unicode61`` tokenizer reads it: its runs of letters and digits,
    in lower case and without diacritics, one space apart."""
    plain = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in plain if not unicodedata.combining(c))
    return " ".join(_ALNUM.findall(plain.lower()))


@functools.cache
def _pg_search(count: int, any_word: bool) -> str:
    """The PostgreSQL search for ``count`` words, each a phrase of its parts (as FTS5 reads
    a quoted word), all of them required or any."""
    joined = (" || " if any_word else " && ").join([f"phraseto_tsquery('{TS_CONFIG}', ?)"] * count)
    options = f"StartSel=[, StopSel=], MaxWords={SNIPPET_TOKENS}, MinWords=8, ShortWord=0"
    return (
        f"WITH q AS (SELECT ({joined}) AS q) "
        "SELECT message_id, segment_id, round, role, tool_name, "
        f"ts_headline('{TS_CONFIG}', body, q.q, '{options}'), -ts_rank_cd(words, q.q) "
        f"FROM {TABLE}, q WHERE words @@ q.q AND session_id = ? "
        "ORDER BY ts_rank_cd(words, q.q) DESC, message_id LIMIT ?"
    )
