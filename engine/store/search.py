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
import math
import re
import sqlite3
import threading
from typing import Any

from peewee import Database

from engine.models import RecallHit
from engine.store import json_text
from engine.store.dialect import dialect_of, execute_many, sql

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
    _index(db).create(db)


_to_json = json_text.encoder(ensure_ascii=False)
"""``json.dumps(value, ensure_ascii=False)``, its encoder made once."""


def _body(
    role: str, content: str, tool_calls: list[dict[str, Any]], observation: str | None
) -> str:
    parts = [observation if observation is not None else content]
    if role == "tool" and observation is not None and content:
        parts.append(content)
    for call in tool_calls or []:
        args = _to_json(call.get("input") or {})
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
    entries = []
    for mid, sid, number, role, content, calls, meta, observation in rows:
        tool_calls = json.loads(calls) if calls else []
        tool_name = (json.loads(meta) if meta else {}).get("tool_name")
        body = _body(role, content, tool_calls, observation)
        entries.append((body, (sid, segment_id, mid, number, role, tool_name)))
    _index(db).insert_all(db, entries)
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

    Every word must match; when that finds nothing, any word may (ranked by bm25: FTS5's,
    or on PostgreSQL the same formula over the same figures).
    """
    for any_word in (False, True):
        rows = _index(db).matches(db, session_id, query, any_word, limit)
        if rows is None:
            return []
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
# the same terms and find the same messages; they are ranked by FTS5's bm25, computed here
# from the same figures, and the snippet is FTS5's too, made from the hit's text. A term
# past position 16 383 (PostgreSQL's last) is stored at that one: a phrase that far into one
# message the index may miss; one it finds wrongly is dropped when its terms are counted.
PG_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (body TEXT NOT NULL, session_id INTEGER NOT NULL, "
    "segment_id INTEGER NOT NULL, message_id INTEGER NOT NULL, round INTEGER, role TEXT, "
    "tool_name TEXT, words TSVECTOR NOT NULL, size INTEGER NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_words ON {TABLE} USING GIN (words)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_session ON {TABLE} (session_id)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_segment ON {TABLE} (segment_id)",
)
INSERT = (
    f"INSERT INTO {TABLE} (body, session_id, segment_id, message_id, round, role, tool_name) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
PG_INSERT = (
    f"INSERT INTO {TABLE} (body, words, size, session_id, segment_id, message_id, round, role, "
    "tool_name) VALUES (?, ?::tsvector, ?, ?, ?, ?, ?, ?, ?)"
)
PG_MATCHES = (
    "SELECT message_id, segment_id, round, role, tool_name, body, words::text, size "
    f"FROM {TABLE} WHERE words @@ CAST(? AS tsquery) AND session_id = ? ORDER BY message_id"
)
BM25_K1, BM25_B = 1.2, 0.75
"""FTS5's bm25 parameters (its documentation: k1 = 1.2, b = 0.75)."""
LAST_POSITION = 16383
MAX_POSITIONS = 256
"""PostgreSQL keeps at most this many positions of one term in a ``tsvector``."""
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


def tsvector(text: str) -> tuple[str, int]:
    """``text``'s FTS5 terms as a ``tsvector`` literal, each at its positions; and how many
    terms it has (bm25's document length)."""
    positions: dict[str, list[int]] = {}
    found = terms(text)
    for n, term in enumerate(found, start=1):
        positions.setdefault(term, []).append(min(n, LAST_POSITION))
    literal = " ".join(
        f"{_lexeme(t)}:{','.join(map(str, sorted(set(p))))}" for t, p in positions.items()
    )
    return literal, len(found)


def query_phrases(query: str) -> list[list[str]]:
    """The user's words, each as the phrase of terms FTS5 reads a quoted word as."""
    return [p for p in (terms(w) for w in _WORD.findall(query)) if p]


PG_MAX_WORD_BYTES = 2047
"""The longest word PostgreSQL's text search takes (``word is too long``)."""


def tsquery(phrases: list[list[str]], any_word: bool) -> str:
    """``phrases`` as a ``tsquery`` literal: all of them required, or any."""
    return (" | " if any_word else " & ").join(
        "(" + " <-> ".join(_lexeme(t) for t in p) + ")" for p in phrases
    )


_TSVECTOR_ENTRY = re.compile(r"'((?:[^']|'')*)':([0-9,]+)")


def _positions(stored: str) -> dict[str, set[int]]:
    """A stored ``tsvector``'s terms and their positions (its text form: ``'term':1,5``)."""
    return {
        term.replace("''", "'"): {int(p) for p in places.split(",")}
        for term, places in _TSVECTOR_ENTRY.findall(stored)
    }


def _occurrences(phrase: list[str], positions: dict[str, set[int]]) -> int:
    """How many times the text holds ``phrase``, its terms one after the other."""
    rest = [positions.get(t, set()) for t in phrase[1:]]
    return sum(
        all(start + k in places for k, places in enumerate(rest, start=1))
        for start in positions.get(phrase[0], ())
    )


def _pg_search(
    db: Database,
    session_id: int,
    query: str,
    phrases: list[list[str]],
    any_word: bool,
    limit: int,
) -> list[tuple[Any, ...]]:
    """The session's best ``limit`` hits, ranked by FTS5's own bm25: the candidates come
    from the GIN index, the figures bm25 needs from the whole index (rows, their mean length,
    the rows holding each phrase), each candidate's from its terms."""
    # PostgreSQL refuses a query word over 2,047 bytes, and never indexes one: a phrase with
    # such a word is in no row (what FTS5 answers too).
    findable = [p for p in phrases if all(len(t.encode()) <= PG_MAX_WORD_BYTES for t in p)]
    if not findable or (len(findable) < len(phrases) and not any_word):
        return []
    phrases = findable
    found = sql(db, PG_MATCHES, (tsquery(phrases, any_word), session_id)).fetchall()
    if not found:
        return []
    rows, total = sql(db, f"SELECT count(*), COALESCE(SUM(size), 0) FROM {TABLE}").fetchone()
    avgdl = total / rows if rows else 0.0
    idf = []
    for phrase in phrases:
        (hits,) = sql(
            db,
            f"SELECT count(*) FROM {TABLE} WHERE words @@ CAST(? AS tsquery)",
            (tsquery([phrase], False),),
        ).fetchone()
        value = math.log((rows - hits + 0.5) / (hits + 0.5))
        idf.append(value if value > 0 else 1e-6)
    scored = []
    for mid, seg, rnd, role, tool, body, stored, length in found:
        positions = _positions(stored)
        wanted = {t for p in phrases for t in p}
        if length > LAST_POSITION or any(
            len(positions.get(t, ())) >= MAX_POSITIONS for t in wanted
        ):
            # positions the tsvector could not keep: count on the text's own terms
            positions = {}
            for n, term in enumerate(terms(body)):
                positions.setdefault(term, set()).add(n)
        tf = [_occurrences(p, positions) for p in phrases]
        if not (any(tf) if any_word else all(tf)):
            continue  # a phrase seen only where positions past the last were merged
        score = 0.0
        for weight, freq in zip(idf, tf, strict=True):
            score += (
                weight
                * freq
                * (BM25_K1 + 1)
                / (freq + BM25_K1 * (1 - BM25_B + BM25_B * length / avgdl))
            )
        scored.append((-score, mid, seg, rnd, role, tool, body))
    scored.sort(key=lambda r: (r[0], r[1]))
    return [
        (mid, seg, rnd, role, tool, fts5_snippet(body, query, any_word), score)
        for score, mid, seg, rnd, role, tool, body in scored[:limit]
    ]


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


# ---------------------------------------------------------------------- one index per kind
Row = tuple[Any, ...]


class _Fts5:
    """SQLite's index: the FTS5 table :data:`CREATE` makes."""

    def create(self, db: Database) -> None:
        sql(db, CREATE)

    def insert(self, db: Database, body: str, row: Row) -> None:
        sql(db, INSERT, (body, *row))

    def insert_all(self, db: Database, entries: list[tuple[str, Row]]) -> None:
        """:meth:`insert` of each entry, one prepared statement for all."""
        execute_many(db, INSERT, [(body, *row) for body, row in entries])

    def matches(
        self, db: Database, session_id: int, query: str, any_word: bool, limit: int
    ) -> list[Row] | None:
        """The best ``limit`` hits (None: the query has no word)."""
        expression = match_expression(query, any_word)
        if not expression:
            return None
        rows: list[Row] = sql(
            db,
            f"SELECT message_id, segment_id, round, role, tool_name, "
            f"snippet({TABLE}, 0, '[', ']', '…', {SNIPPET_TOKENS}), bm25({TABLE}) "
            f"FROM {TABLE} WHERE {TABLE} MATCH ? AND session_id = ? "
            f"ORDER BY bm25({TABLE}) LIMIT ?",
            (expression, session_id, limit),
        ).fetchall()
        return rows


class _Tsvector:
    """PostgreSQL's index: the table of :data:`PG_CREATE`, FTS5's terms in a ``tsvector``."""

    def create(self, db: Database) -> None:
        for statement in PG_CREATE:
            sql(db, statement)

    def insert(self, db: Database, body: str, row: Row) -> None:
        sql(db, PG_INSERT, (body, *tsvector(body), *row))

    def insert_all(self, db: Database, entries: list[tuple[str, Row]]) -> None:
        for body, row in entries:
            self.insert(db, body, row)

    def matches(
        self, db: Database, session_id: int, query: str, any_word: bool, limit: int
    ) -> list[Row] | None:
        phrases = query_phrases(query)
        if not phrases:
            return None
        return _pg_search(db, session_id, query, phrases, any_word, limit)


_INDEXES: dict[str, _Fts5 | _Tsvector] = {"fts5": _Fts5(), "tsvector": _Tsvector()}
"""Each kind of full-text index a dialect may have (:attr:`Dialect.full_text`)."""


def _index(db: Database) -> _Fts5 | _Tsvector:
    return _INDEXES[dialect_of(db).full_text]
