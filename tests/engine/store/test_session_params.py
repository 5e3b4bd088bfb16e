"""A session's strategy numbers in the store: stored at creation, recorded with every switch,
and filled in for the sessions of a schema-10 database (issue 20)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine.models import StrategyParams
from engine.store import Store, StoreError
from engine.store.schema import APPLICATION_ID, SCHEMA_VERSION

SCHEMA_10 = Path(__file__).parents[2] / "data" / "schema10.sql"


def schema_10_database(path: Path) -> None:
    """The database ``tests/data/schema10.sql`` describes, marked as ctxscope schema 10."""
    con = sqlite3.connect(path)
    con.executescript(SCHEMA_10.read_text(encoding="utf-8"))
    con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    con.execute("PRAGMA user_version = 10")
    con.commit()
    con.close()


def test_a_schema_10_database_gets_each_sessions_default_numbers(tmp_path: Path) -> None:
    """Seed 000 (A6): ``Context Window：固定 200k``, ``阈值：0.8 × 200k``, ``最低消息数：至少 3
    条消息才考虑压缩``; (A4) ``至少保留最近 10 轮`` — the window is 200k, the threshold 0.8 of
    it, at least 3 messages, at least the last 10 rounds kept. Seed 002: the Init agent's
    ``KEEP_RECENT_STEPS = 3``, ``COMPACT_TRIGGER_THRESHOLD = 150_000`` come from its profile
    (stored as ``init``); ``max_length: int = 5000`` is the long-result cut. Masking keeps 10
    observations (ctxscope's own). A switch recorded before schema 11 has no numbers."""
    path = tmp_path / "old.db"
    schema_10_database(path)

    store = Store.open(path)
    # migrated through 10 -> 11 and on to the current schema
    assert store.db.execute_sql("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    layered, mock, switched = (store.get_session(n) for n in (1, 2, 3))
    assert layered.params == StrategyParams(
        context_window=200_000,
        numbers={"threshold_ratio": 0.8, "keep_rounds": 10, "min_messages": 3},
    )
    assert mock.params is not None and mock.params.context_window == 200_000
    assert mock.params.numbers["profile"] == "init"
    assert mock.params.numbers["trigger_tokens"] is None  # the profile's 150 000
    assert mock.params.numbers["long_result_chars"] == 5000
    assert switched.strategy == "masking"
    assert switched.params == StrategyParams(
        context_window=200_000, numbers={"keep_last_observations": 10}
    )
    [switch] = store.strategy_switches(3)
    assert (switch.previous, switch.strategy) == ("layered", "masking")
    assert switch.params is None and switch.previous_params is None
    assert store.get_session(1).title == "layered session"  # the rest of the row is intact
    store.close()

    again = Store.open(path)  # opening it again changes nothing
    assert again.get_session(1).params == layered.params
    again.close()


def test_numbers_round_trip_and_every_change_is_recorded(database: Path | str) -> None:
    store = Store.open(database)
    first = StrategyParams(context_window=50_000, numbers={"trigger_tokens": 12_345})
    sid = store.create_session("/w", "t", strategy="mock-user", params=first).id
    assert sid is not None
    assert store.get_session(sid).params == first

    same = store.switch_strategy(sid, "mock-user", first)
    assert same.params == first and store.strategy_switches(sid) == []  # nothing changed

    second = StrategyParams(context_window=50_000, numbers={"trigger_tokens": 20_000})
    store.switch_strategy(sid, "mock-user", second)
    third = StrategyParams(context_window=80_000, numbers={"keep_last_observations": 4})
    assert store.switch_strategy(sid, "masking", third).params == third

    switches = store.strategy_switches(sid)
    assert [(w.previous, w.strategy) for w in switches] == [
        ("mock-user", "mock-user"),
        ("mock-user", "masking"),
    ]
    assert [(w.previous_params, w.params) for w in switches] == [
        (first, second),
        (second, third),
    ]
    assert store.get_session(sid).params == third
    store.close()


def test_a_session_without_numbers_stores_none(database: Path | str) -> None:
    store = Store.open(database)
    sid = store.create_session("/w").id
    assert sid is not None
    assert store.get_session(sid).params is None
    raw = store.db.execute_sql("SELECT params FROM session_row").fetchone()[0]
    assert raw is None
    store.close()


def test_damaged_numbers_are_named(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = Store.open(path)
    sid = store.create_session("/w").id
    store.close()
    con = sqlite3.connect(path)
    con.execute("UPDATE session_row SET params = '{\"numbers\": 3}' WHERE id = ?", (sid,))
    con.commit()
    con.close()
    store = Store.open(path)
    with pytest.raises(StoreError, match=r"session_row\.params"):
        store.get_session(sid or 0)
    store.close()
