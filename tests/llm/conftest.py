"""Fixtures for the provider tests: the fake Messages API server and quick-retry settings."""

from __future__ import annotations

import pytest

from engine.settings.config import Settings
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401  (the fixture)


@pytest.fixture
def settings() -> Settings:
    """Seed defaults, except retries that wait milliseconds instead of seconds."""
    return Settings(max_retries=2, retry_base_delay=0.001, retry_max_delay=0.01)
