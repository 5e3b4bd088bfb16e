"""Recall finds the same archived messages on PostgreSQL (a ``tsvector`` under a GIN index) as
on SQLite (FTS5, ``porter unicode61``): the corpus imported into both, every round but the
last of each session archived the same way, then the same queries asked of both.

Hits are compared whole (message, place, snippet, score) and in order: Recall's five best,
and every hit (a limit no session reaches)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.models import Compaction, Summary, Trigger
from engine.recordings.importing import import_parsed, parse_path
from engine.settings.config import Settings
from engine.store import Store, dialect
from engine.store.search import terms
from tests.engine.recordings.corpus import CORPUS
from tests.postgres_server import PostgresServer

FIXED_QUERIES = [
    "beads epic",
    "retry",
    "retries",
    "commit",
    "git push",
    "pomodoro timer",
    "timers",
    "Running tests",
    "spotter-gqc",
    "error",
    "import complete",
    "npm install",
    "file_path",
    "README.md",
    "café",
    "zzz-no-such-word",
]
"""Words the corpus holds in several forms (stems, paths, snake_case, hyphens), and one it
does not; the rest are sampled from the archived text itself."""


def _fill(store: Store) -> list[int]:
    """The corpus imported, and in each session every round but the last archived; the ids of
    the sessions with an archive."""
    settings = Settings()
    import_parsed(store, parse_path(CORPUS), "/w", settings)
    archived = []
    for info in store.list_sessions():
        sid = info.session.id
        assert sid is not None
        rounds = store.rounds(sid)
        ids = [
            m.id
            for rnd in rounds[:-1]
            if not rnd.archived
            for m in store.round_messages(sid, rnd.index)
            if m.id is not None
        ]
        if not ids:
            continue
        summary = Summary(session_id=sid, content="s", first_round=1, last_round=len(rounds) - 1)
        store.apply_compaction(
            sid, ids, summary, Compaction(session_id=sid, trigger=Trigger.AUTO, strategy="layered")
        )
        archived.append(sid)
    return archived


Filled = tuple[Store, Store, list[int], list[int]]


@pytest.fixture(scope="module")
def filled(
    postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Filled]:
    """Both stores filled once (:func:`_fill`) for this module's tests, which only read them
    (the corpus imported into PostgreSQL once, not once a test), with the sessions each
    archived."""
    url = postgres_server.create_database("recall")
    lite = Store.open(tmp_path_factory.mktemp("recall") / "r.db")
    pg = Store.open(url)
    yield lite, pg, _fill(lite), _fill(pg)
    lite.close()
    pg.close()
    postgres_server.drop_database(url)


def test_recall_finds_the_same_messages_on_both(filled: Filled) -> None:
    lite, pg, sessions, on_pg = filled
    assert on_pg == sessions
    assert len(sessions) >= 4  # the corpus has several sessions of more than one round
    asked_of: dict[int, list[str]] = {}
    for sid in sessions:
        indexed = sorted(lite.indexed_messages(sid))
        assert sorted(pg.indexed_messages(sid)) == indexed
        # words taken from the archive itself, every 50th distinct one (at most 40 a session:
        # the corpus' 2.1.2xx files hold tens of thousands), and pairs of them; asked of this
        # session, with the fixed ones
        bodies = dialect.sql(lite.db, "SELECT body FROM archive_fts WHERE session_id = ?", (sid,))
        vocabulary = sorted({w for (body,) in bodies.fetchall() for w in terms(body)})
        sample = vocabulary[:: max(50, len(vocabulary) // 40 + 1)]
        pairs = [f"{a} {b}" for a, b in zip(sample, sample[1:], strict=False)]
        asked_of[sid] = [*FIXED_QUERIES, *sample, *pairs]
    asked = found = 0
    for sid in sessions:
        for query in asked_of[sid]:
            on_sqlite = lite.search_archive(sid, query, limit=100_000)
            assert pg.search_archive(sid, query, limit=100_000) == on_sqlite, (sid, query)
            assert pg.search_archive(sid, query) == lite.search_archive(sid, query)
            asked += 1
            found += bool(on_sqlite)
    assert found > asked // 4  # the comparison is over real hits, not empty answers


def test_a_hit_on_postgresql_carries_its_snippet_and_place(filled: Filled) -> None:
    _, pg, _, on_pg = filled
    sid = on_pg[0]
    hits = pg.search_archive(sid, "the", limit=3)
    assert hits and all(h.segment_id and h.round >= 1 and h.score > 0 for h in hits)
    assert all("[" in h.snippet and "]" in h.snippet for h in hits)
