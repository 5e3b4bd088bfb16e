"""A write is all or nothing: by its own transaction when it opened one (no savepoint on top),
by a savepoint when it joined a caller's (an import's), so that its failure undoes it alone."""

from __future__ import annotations

import pytest

from engine.models import Message
from engine.store import Store


class Boom(Exception):
    pass


def _messages(store: Store, session_id: int) -> list[str]:
    return [m.content for m in store.all_messages(session_id)]


def _fail_touch(monkeypatch: pytest.MonkeyPatch, store: Store) -> None:
    """The session's ``updated_at`` bump, the last statement of a step's write, fails."""

    def touch(session_id: int) -> None:
        raise Boom

    monkeypatch.setattr(store, "_touch", touch)


@pytest.mark.sqlite_only
def test_a_write_in_its_own_transaction_takes_no_savepoint(store: Store, session_id: int) -> None:
    store.open_round(session_id, Message(role="user", content="q"))
    statements: list[str] = []
    store.db.connection().set_trace_callback(statements.append)
    store.append_message(session_id, 1, Message(role="assistant", content="a"))
    store.open_round(session_id, Message(role="user", content="q2"))
    store.db.connection().set_trace_callback(None)
    assert not [s for s in statements if "SAVEPOINT" in s.upper()]
    assert [s for s in statements if s.startswith("BEGIN")] == ["BEGIN IMMEDIATE"] * 2


def test_a_failed_write_in_its_own_transaction_leaves_nothing(
    store: Store, session_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.open_round(session_id, Message(role="user", content="q"))
    _fail_touch(monkeypatch, store)
    with pytest.raises(Boom):
        store.append_message(session_id, 1, Message(role="assistant", content="lost"))
    with pytest.raises(Boom):
        store.open_round(session_id, Message(role="user", content="lost too"))
    monkeypatch.undo()
    assert _messages(store, session_id) == ["q"]
    assert [r.index for r in store.rounds(session_id)] == [1]


@pytest.mark.sqlite_only  # reads the statements through SQLite's trace callback
def test_a_failed_write_joined_to_a_transaction_undoes_itself_alone(
    store: Store, session_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    statements: list[str] = []
    with store.transaction():
        store.open_round(session_id, Message(role="user", content="kept"))
        with monkeypatch.context() as m:
            _fail_touch(m, store)
            store.db.connection().set_trace_callback(statements.append)
            with pytest.raises(Boom):
                store.append_message(session_id, 1, Message(role="assistant", content="lost"))
            store.db.connection().set_trace_callback(None)
        store.append_message(session_id, 1, Message(role="assistant", content="kept too"))
    assert _messages(store, session_id) == ["kept", "kept too"]
    assert any(s.upper().startswith("ROLLBACK TO SAVEPOINT") for s in statements)
