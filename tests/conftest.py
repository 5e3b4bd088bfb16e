"""Settings every test runs with."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _validate_every_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request the engine sends in any test is checked as the Messages API would check
    it (``validate_requests``): an invalid one fails the test instead of being sent."""
    monkeypatch.setenv("CTXSCOPE_VALIDATE_REQUESTS", "1")


# ---------------------------------------------------------------------- PostgreSQL (storage.md)
from collections.abc import Iterator  # noqa: E402

from tests.postgres_server import PostgresServer, binaries  # noqa: E402

PG_MISSING = (
    "PostgreSQL tests skipped: no server binaries (initdb, pg_ctl) in "
    "/usr/lib/postgresql/*/bin or CTXSCOPE_PG_BIN; install the postgresql package"
)


def pytest_report_header() -> str:
    found = binaries()
    return f"postgresql: {found}" if found else PG_MISSING


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the whole run, on 127.0.0.1 at a free port, stopped
    after; every test that asks for it is skipped (with one reason) where it is absent."""
    found = binaries()
    if found is None:
        pytest.skip(PG_MISSING)
    server = PostgresServer(found)
    server.start()
    yield server
    server.stop()
