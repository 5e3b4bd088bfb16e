"""Fixtures for engine tests: a store on a temporary file and a way to write whole rounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.context.history import HistoryManager
from engine.settings.config import Settings
from engine.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "test.db")
    yield s
    s.close()


@pytest.fixture
def settings() -> Settings:
    return Settings(keep_rounds=3, context_window=10_000)


@pytest.fixture
def session_id(store: Store, tmp_path: Path) -> int:
    sid = store.create_session(str(tmp_path), "test").id
    assert sid is not None
    return sid


@pytest.fixture
def manager(store: Store, session_id: int, settings: Settings) -> HistoryManager:
    return HistoryManager(store, session_id, settings)
