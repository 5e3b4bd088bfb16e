"""Issue 30: a fork is a whole copy of a session — every row, its references pointing at the
copy's own rows, its archive searchable — and the original is not touched."""

from __future__ import annotations

from pathlib import Path

from engine.config import Settings
from engine.recordings.importing import import_session
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
    assert strip(store.usages(fid)) == strip(store.usages(sid))
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
