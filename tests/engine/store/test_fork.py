"""Issue 30: a fork is a whole copy of a session — every row, its references pointing at the
copy's own rows, its archive searchable — and the original is not touched."""

from __future__ import annotations

from pathlib import Path

from engine.recordings.importing import import_session
from engine.settings.config import Settings
from engine.store import Store

MAROT = (
    Path(__file__).resolve().parents[2]
    / "data"
    / "corpus"
    / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
)


def test_a_fork_copies_everything_and_changes_nothing(tmp_path: Path, store: Store) -> None:
    """On SQLite and on PostgreSQL (the ``store`` fixture: tests/engine/store/conftest.py)."""
    sid = import_session(store, MAROT, str(tmp_path), settings=Settings()).session.id
    assert sid is not None
    original = store.get_session(sid)
    assert original.recorded
    fork = store.fork_to_change(original)
    assert fork is not None and fork.session.id is not None
    fid = fork.session.id
    assert fork.source == "fork of #1 at round 8" == fork.session.source
    assert not fork.session.recorded and fork.session.model == "claude-opus-4-6"
    assert store.get_session(sid) == original

    def strip(rows: list, *fields: str) -> list:  # type: ignore[type-arg]
        return [r.model_dump(exclude={"id", "session_id", *fields}) for r in rows]

    assert strip(store.rounds(fid)) == strip(store.rounds(sid))
    assert strip(store.usages(fid), "copied") == strip(store.usages(sid), "copied")
    # the copies are marked, so the report bills them once, with the original (issue 39)
    assert {u.copied for u in store.usages(fid)} == {True}
    assert {u.copied for u in store.usages(sid)} == {False}
    assert strip(store.compactions(fid), "summary_id") == strip(
        store.compactions(sid), "summary_id"
    )
    ours, theirs = store.history(fid), store.history(sid)
    assert [m.content for m in ours.messages] == [m.content for m in theirs.messages]
    assert [s.content for s in ours.summaries] == [s.content for s in theirs.summaries]
    # every copied id is the fork's own, and the maps say which is which
    assert [fork.messages[m.id or 0] for m in theirs.messages] == [m.id for m in ours.messages]
    (segment,) = store.segments(fid)
    (recorded,) = store.segments(sid)
    assert len(segment.messages) == len(recorded.messages) == 231  # 229 recorded + 2 queued inputs
    assert segment.compaction_id == fork.compactions[recorded.compaction_id]
    assert len(store.observations(fid)) == len(store.observations(sid))
    # the archive is searchable in the fork as in the original (Recall)
    hits = store.search_archive(sid, "test", 5)
    assert hits and len(store.search_archive(fid, "test", 5)) == len(hits)
    # a fork is an ordinary session: it changes itself
    assert store.fork_to_change(fork.session) is None


def test_the_migration_marks_the_copies_of_forks_stored_before_it(
    tmp_path: Path, store: Store
) -> None:
    """Schema 15 -> 16 on forks made before the mark existed: a copied usage record keeps its
    original's time (before the fork was made), an observation its round (up to the fork's
    ``at round 8``); the fork's own records come after and stay counted."""
    from engine.models import Usage, UsageRecord
    from engine.store.models import CompactionRow, ObservationRow, UsageRow
    from engine.store.schema import _fork_copies, sql

    sid = import_session(store, MAROT, str(tmp_path), settings=Settings()).session.id
    assert sid is not None
    fork = store.fork_to_change(store.get_session(sid))
    assert fork is not None and fork.session.id is not None
    fid = fork.session.id
    own = store.add_usage(
        UsageRecord(session_id=fid, round_index=9, step=1, usage=Usage(input_tokens=5))
    )
    copies = len(store.usages(sid))
    with store.db.atomic():
        for row in (UsageRow, CompactionRow, ObservationRow):
            sql(store.db, f'UPDATE "{row._meta.table_name}" SET copied = FALSE')
        _fork_copies(store.db)
    marks = [u.copied for u in store.usages(fid)]
    assert marks == [True] * copies + [False] and store.usages(fid)[-1].id == own.id
    assert {u.copied for u in store.usages(sid)} == {False}
    assert [c.copied for c in _compaction_rows(fid)] == [True]
    assert {o.copied for o in _observation_rows(fid)} == {True}
    assert {o.copied for o in _observation_rows(sid)} == {False}


def _compaction_rows(session_id: int) -> list:  # type: ignore[type-arg]
    from engine.store.models import CompactionRow

    return list(CompactionRow.select().where(CompactionRow.session == session_id))


def _observation_rows(session_id: int) -> list:  # type: ignore[type-arg]
    from engine.store.models import ObservationRow

    return list(ObservationRow.select().where(ObservationRow.session == session_id))
