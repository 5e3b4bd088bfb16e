"""The store's tests run on both databases: ``backend`` is ``sqlite`` or ``postgresql`` (a
database of its own on the run's server, dropped after); a test marked ``sqlite_only`` checks
what only an SQLite file has (pragmas, the file's own refusals, journal modes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.store import Store
from tests.postgres_server import PostgresServer

BACKENDS = ("sqlite", "postgresql")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: checks what only an SQLite file has")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        only = metafunc.definition.get_closest_marker("sqlite_only")
        metafunc.parametrize("backend", ("sqlite",) if only else BACKENDS)


@pytest.fixture
def database(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path | str]:
    """What ``Store.open`` takes: a file in ``tmp_path``, or a fresh PostgreSQL database's URL
    (empty; for a test of the ``store`` fixture, a copy of one ``Store.open`` has made: the
    schema once per worker, not once per test)."""
    if backend == "sqlite":
        yield tmp_path / "test.db"
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = (
        server.create_store_database()
        if "store" in request.fixturenames
        else server.create_database()
    )
    yield url
    server.drop_database(url)


@pytest.fixture
def store(database: Path | str) -> Iterator[Store]:
    s = Store.open(database)
    yield s
    s.close()
