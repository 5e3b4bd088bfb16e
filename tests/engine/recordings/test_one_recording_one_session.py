"""One recording, one session: a file imported, grown and imported again, watched after it was
imported, or imported after it was watched is stored once, in the session that first held it
(count each thing once: a second session of the same recording doubles its requests and cost
in ``report``, which sums every session).

The figures are the corpus's pomodoro Claude Code session (124 lines): 40 API calls in the
whole file and 33 in its first 100 lines, counted as the distinct ``message.id`` of the
assistant records that carry ``usage`` (a one-line ``json`` loop over the file, run once).
"""

from __future__ import annotations

from pathlib import Path

from engine.recordings.follow import Follower
from engine.recordings.history import import_one_file
from engine.recordings.importing import import_parsed, parse_path
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.helpers import CORPUS

POMODORO = CORPUS / "yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl"
CALLS_WHOLE, CALLS_FIRST_100 = 40, 33


def grow(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines))


def import_file(store: Store, path: Path) -> list[int]:
    reports = import_parsed(store, parse_path(path), str(path.parent), Settings())
    return [r.session.id for r in reports if r.session.id is not None]


def top_sessions(store: Store) -> list[int]:
    infos = store.list_sessions()
    return [i.session.id for i in infos if i.session.parent_session_id is None and i.session.id]


def test_a_grown_file_imported_again_goes_into_its_session(tmp_path: Path) -> None:
    lines = POMODORO.read_text().splitlines()
    f = tmp_path / "s.jsonl"
    store = Store.open(tmp_path / "db.sqlite")
    grow(f, lines[:100])
    (first,) = import_file(store, f)
    assert len(store.usages(first)) == CALLS_FIRST_100
    grow(f, lines)
    assert import_file(store, f) == [first]
    assert top_sessions(store) == [first]
    assert len(store.usages(first)) == CALLS_WHOLE


def test_watching_an_imported_file_follows_its_session(tmp_path: Path) -> None:
    lines = POMODORO.read_text().splitlines()
    f = tmp_path / "s.jsonl"
    store = Store.open(tmp_path / "db.sqlite")
    grow(f, lines[:100])
    (first,) = import_file(store, f)
    grow(f, lines)
    follower = Follower(f, Settings(), store)
    follower.poll()
    assert follower.session is not None and follower.session.id == first
    assert top_sessions(store) == [first]
    assert len(store.usages(first)) == CALLS_WHOLE


def test_importing_a_watched_file_goes_into_the_watched_session(tmp_path: Path) -> None:
    lines = POMODORO.read_text().splitlines()
    f = tmp_path / "s.jsonl"
    store = Store.open(tmp_path / "db.sqlite")
    grow(f, lines[:100])
    follower = Follower(f, Settings(), store)
    follower.poll()
    assert follower.session is not None
    watched = follower.session.id
    grow(f, lines)
    assert import_file(store, f) == [watched]
    reports, state = import_one_file(store, f, str(tmp_path), Settings())
    assert [r.session.id for r in reports] in ([watched], [])  # grown, or seen as unchanged
    assert top_sessions(store) == [watched]
    assert len(store.usages(watched)) == CALLS_WHOLE


def test_a_copy_elsewhere_with_the_same_bytes_is_stored_once(tmp_path: Path) -> None:
    """The same bytes under another name (a backup of the folder) are the same recording,
    as before this change."""
    store = Store.open(tmp_path / "db.sqlite")
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(POMODORO.read_bytes())
    b.write_bytes(POMODORO.read_bytes())
    (first,) = import_file(store, a)
    assert import_file(store, b) == [first]
    assert top_sessions(store) == [first]


def test_the_whole_history_import_on_every_core_finds_a_watched_recording(tmp_path: Path) -> None:
    """``import`` without a path, its new files written by worker processes into scratch
    databases (``jobs=2`` and more than one file): a file a watch stored is stored again into
    the watched session, not copied in as a second one; the other file is copied in."""
    from engine.recordings.agents.protocol import Folder
    from engine.recordings.history import import_history

    folder = tmp_path / "projects" / "p"
    folder.mkdir(parents=True)
    f = folder / "s.jsonl"
    lines = POMODORO.read_text().splitlines()
    store = Store.open(tmp_path / "db.sqlite")
    grow(f, lines[:100])
    follower = Follower(f, Settings(), store)
    follower.poll()
    assert follower.session is not None
    watched = follower.session.id
    grow(f, lines)
    other = CORPUS / "moredip__session-share__4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl"
    (folder / "other.jsonl").write_bytes(other.read_bytes())
    result = import_history(store, [Folder(folder, "claude-code")], "/ws", Settings(), jobs=2)
    assert watched in [r.session.id for r in result.reports]
    assert len(result.reports) == 2
    assert len(top_sessions(store)) == 2 and watched in top_sessions(store)
    assert len(store.usages(watched)) == CALLS_WHOLE


def test_the_history_import_passes_over_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    """A session file whose name is not UTF-8 (byte 0x9b) cannot be remembered by name: the
    whole-history import counts it as passed over and stores the other file, where it used to
    stop on the first such name ("surrogates not allowed")."""
    import os

    from engine.recordings.agents.protocol import Folder
    from engine.recordings.history import import_history

    folder = tmp_path / "projects" / "p"
    folder.mkdir(parents=True)
    (folder / "good.jsonl").write_bytes(POMODORO.read_bytes())
    odd = os.fsencode(folder) + b"/a\x9b.jsonl"
    with open(odd, "wb") as f:
        f.write(POMODORO.read_bytes())
    store = Store.open(tmp_path / "db.sqlite")
    result = import_history(store, [Folder(folder, "claude-code")], "/ws", Settings(), jobs=1)
    assert result.skipped_files["file name not UTF-8"] == 1
    assert len(result.reports) == 1 and len(top_sessions(store)) == 1
