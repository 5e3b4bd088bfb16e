"""Schema 16: a proxied request's ``steering`` (what ``--steer`` rewrote), added to a
database made at schema 15 without touching its requests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from engine.exchanges import Exchange
from engine.store import Store
from engine.store.schema import SCHEMA_VERSION


def test_a_schema_15_database_gains_the_steering_column(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    store = Store.open(db)
    store.add_exchange(Exchange(request={"messages": []}, thread="t"), source="proxy:x")
    store.close()
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE exchange_row DROP COLUMN steering")  # as schema 15 made it
    con.execute("PRAGMA user_version = 15")
    con.commit()
    con.close()
    store = Store.open(db)
    assert store.db.execute_sql("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 25
    (sid,) = store.proxied_sessions()
    (kept,) = store.exchanges(sid)
    assert kept.steering is None and kept.request == {"messages": []}
    stored = store.add_exchange(
        Exchange(request={"messages": []}, thread="t", steering={"floor": 3, "rewrites": []}),
        source="proxy:x",
    )
    assert store.exchanges(sid)[-1].steering == {"floor": 3, "rewrites": []}
    assert stored.id is not None
