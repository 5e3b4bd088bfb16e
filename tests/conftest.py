"""Settings every test runs with."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _validate_every_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request the engine sends in any test is checked as the Messages API would check
    it (``validate_requests``): an invalid one fails the test instead of being sent."""
    monkeypatch.setenv("CTXSCOPE_VALIDATE_REQUESTS", "1")
