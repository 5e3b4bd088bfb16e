"""Settings every test runs with."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine.config


@pytest.fixture(autouse=True)
def _validate_every_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request the engine sends in any test is checked as the Messages API would check
    it (``validate_requests``): an invalid one fails the test instead of being sent."""
    monkeypatch.setenv("CTXSCOPE_VALIDATE_REQUESTS", "1")


@pytest.fixture(autouse=True)
def _default_database_in_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A command run without ``--db`` in a test uses a database under ``tmp_path``: ctxscope
    runs as an installed package would (not from this checkout, whose ``sessions/`` would be
    the default) with its user data folder in ``tmp_path``."""
    monkeypatch.setattr(engine.config, "SOURCE_ROOT", tmp_path / "site-packages")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
