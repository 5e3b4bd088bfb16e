"""engine/store/staged.py: a scratch database's rows copied in, ids shifted (issue 44)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine.models import Message, MessageMeta, RoundStatus
from engine.store import Store
from engine.store.dialect import sql


def _session_with_round(store: Store, title: str, parent: int | None = None) -> int:
    session = store.create_session(workspace="/w", title=title, parent_session_id=parent)
    assert session.id is not None
    messages = [
        Message(role="user", content=f"{title}: hello", meta=MessageMeta()),
        Message(role="assistant", content=f"{title}: hi", meta=MessageMeta(step=1, final=True)),
    ]
    store.append_round(session.id, messages, RoundStatus.FINISHED)
    return session.id


def test_rows_come_in_past_the_ids_already_here(tmp_path: Path) -> None:
    """Two sessions here (ids 1-2, messages 1-4), a session and its subagent staged (ids 1-2
    there): they come in as 3 and 4, the subagent's parent 3, their rounds 3-4 and messages
    5-8, each message in its own session's round."""
    main = Store.open(tmp_path / "main.sqlite")
    _session_with_round(main, "a")
    _session_with_round(main, "b")
    scratch = Store.open(tmp_path / "scratch.sqlite", durable=False)
    parent = _session_with_round(scratch, "c")
    _session_with_round(scratch, "d", parent=parent)
    scratch.close()
    with main.staged_file(tmp_path / "scratch.sqlite"), main.transaction():
        shift = main.copy_staged()
    assert shift["session_row"] == 2
    assert main.get_session(3).title == "c"
    assert main.get_session(4).parent_session_id == 3
    rows = sql(
        main.db,
        "SELECT m.id, m.content, r.id, r.session_id FROM message_row m "
        "JOIN round_row r ON r.id = m.round_id ORDER BY m.id",
    ).fetchall()
    assert [tuple(r) for r in rows[4:]] == [
        (5, "c: hello", 3, 3),
        (6, "c: hi", 3, 3),
        (7, "d: hello", 4, 4),
        (8, "d: hi", 4, 4),
    ]
    main.close()


def test_a_table_it_does_not_know_is_refused_and_nothing_copied(tmp_path: Path) -> None:
    """A staged table this copy has no rule for, holding a row (a table added to the schema
    without teaching the copy): an error, and the transaction leaves this database as it was."""
    main = Store.open(tmp_path / "main.sqlite")
    scratch = Store.open(tmp_path / "scratch.sqlite", durable=False)
    _session_with_round(scratch, "c")
    sql(scratch.db, "CREATE TABLE figures_of_tomorrow (session_id INTEGER, tokens INTEGER)")
    sql(scratch.db, "INSERT INTO figures_of_tomorrow VALUES (1, 42)")
    scratch.close()
    with pytest.raises(RuntimeError, match="figures_of_tomorrow"):
        with main.staged_file(tmp_path / "scratch.sqlite"), main.transaction():
            main.copy_staged()
    assert main.list_sessions() == []
    main.close()


def _indexes(path: Path) -> dict[str, str]:
    con = sqlite3.connect(path)
    found = con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql != ''")
    out = {name: text for name, text in found}
    con.close()
    return out


def test_a_scratch_database_keeps_only_the_unique_indexes_and_copies_in_indexed(
    tmp_path: Path,
) -> None:
    """A worker's scratch database (issue 44) has none of the user's database's indexes that
    only serve reads, and all its unique ones (constraints; the token counts' ``ON
    CONFLICT``); its rows, copied in, are found through the user's indexes as ever."""
    user = Store.open(tmp_path / "main.sqlite")
    scratch = Store.open(tmp_path / "scratch.sqlite", durable=False)
    scratch.plain_index()
    sid = _session_with_round(scratch, "c")
    scratch.remember_token_counts({"d": 3})
    scratch.remember_token_counts({"d": 4})  # the same digest again: kept as it was
    scratch.close()
    made = _indexes(tmp_path / "main.sqlite")
    kept = _indexes(tmp_path / "scratch.sqlite")
    unique = {n: s for n, s in made.items() if s.startswith("CREATE UNIQUE INDEX")}
    assert len(made) > len(unique) > 0  # the user's database has both kinds
    assert kept == unique
    with user.staged_file(tmp_path / "scratch.sqlite"), user.transaction():
        user.copy_staged()
    assert [m.content for m in user.history(sid).messages] == ["c: hello", "c: hi"]
    assert user.token_counts(["d"]) == {"d": 3}
    plan = sql(user.db, "EXPLAIN QUERY PLAN SELECT id FROM message_row WHERE session_id = 1")
    assert "message_row_session_id" in " ".join(str(row) for row in plan.fetchall())
