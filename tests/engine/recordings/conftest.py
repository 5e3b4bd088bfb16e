"""Fixtures the recording tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No API key in the environment, run from ``tmp_path``."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
