"""Fixtures for the provider tests: the fake Messages API server and quick-retry settings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The test directories are not packages; make `tests.fakes` importable the way
# `pythonpath = ["."]` in pytest's settings would.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from engine.config import Settings  # noqa: E402
from tests.fakes.anthropic_server import fake_anthropic  # noqa: E402, F401  (the fixture)


@pytest.fixture
def settings() -> Settings:
    """Seed defaults, except retries that wait milliseconds instead of seconds."""
    return Settings(max_retries=2, retry_base_delay=0.001, retry_max_delay=0.01)
