"""Settings every test runs with."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import engine.settings.config
from tests.postgres_server import PostgresServer, binaries

# pytest keeps each test module with its asserts rewritten as a .pyc under __pycache__ (as
# `make` compiles ctxscope's own modules), even where PYTHONDONTWRITEBYTECODE is set: without it
# every pytest process rewrote the asserts of all ~230 test modules at every start, 7 s of its
# 13 s of collection CPU (measured at load 8; the first run on a fresh clone still pays it).
# Only this process: the commands the tests start keep the environment's setting.
sys.dont_write_bytecode = False


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
    monkeypatch.setattr(engine.settings.config, "SOURCE_ROOT", tmp_path / "site-packages")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))  # no user settings


# ---------------------------------------------------------------------- PostgreSQL (storage.md)
PG_MISSING = (
    "PostgreSQL tests skipped: no server binaries (initdb, pg_ctl) in "
    "/usr/lib/postgresql/*/bin or CTXSCOPE_PG_BIN; install the postgresql package"
)


def pytest_report_header() -> list[str]:
    found = binaries()
    return [f"postgresql: {found}"] if found else []  # its absence is said once, at the end


_PG_LEFT_OUT = pytest.StashKey[int]()


def _needs_postgres(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    backend = callspec.params.get("backend") if callspec is not None else None
    return backend == "postgresql" or "postgres_server" in getattr(item, "fixturenames", ())


# ------------------------------------------------------------------- order (pytest-xdist)
LONGEST_FIRST = (
    "tests/engine/store/test_recall_backends.py",
    "tests/engine/store/test_postgres_writers.py",
    "tests/engine/recordings/test_watch_equals_import.py",
    "tests/cli/test_replay_selection.py",
    "tests/tui/test_focus_plain.py",
    "tests/engine/replay/test_replay_every_step.py",
    "tests/tui/test_archive_undo.py",
    "tests/test_tmux_pane.py",
    "tests/proxy/test_cli.py",
    "tests/cli/test_startup.py",
    "tests/tui/test_watch.py",
    "tests/tui/test_hand_compaction.py",
    "tests/security/test_symlink_races.py",
    "tests/tui/test_regressions.py",
    "tests/engine/recordings/test_watch_race.py",
)
"""The files that hold the suite's longest tests, longest first (each has a test of 20 s or
more in a run at load 8-14 on the 2-core build machine, 29 Nov: ``--durations``). They run
first, so a long test never starts last and holds the end of the run while the other
worker has nothing left: pytest-xdist's worksteal hands each worker a half of the list in
order and a worker that runs out takes the back half of the other's queue, which then holds
only short tests."""


def _longest_first(items: list[pytest.Item]) -> None:
    """:data:`LONGEST_FIRST`'s files first, in its order; each file's tests, and the rest of
    the suite, in the order collected (the same on every worker: a stable sort)."""
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}
    last = len(LONGEST_FIRST)
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], last))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest tests first (:func:`_longest_first`). Without a PostgreSQL server the tests
    that need one are left out, and said so once at the end (``pytest_terminal_summary``),
    rather than skipped one line each."""
    _longest_first(items)
    if binaries() is not None:
        return
    left_out = [item for item in items if _needs_postgres(item)]
    if left_out:
        items[:] = [item for item in items if not _needs_postgres(item)]
        config.hook.pytest_deselected(items=left_out)
        config.stash[_PG_LEFT_OUT] = len(left_out)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    left_out = config.stash.get(_PG_LEFT_OUT, 0)
    if left_out:
        terminalreporter.write_line(f"{PG_MISSING} ({left_out} tests)", yellow=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The garbage collected once, then the heap frozen, as the session ends.

    At its very end pytest collects five times over (``gc_collect_harder``, to report what
    finalizers raise). In a pytest-xdist worker each pass walked the whole heap the suite left
    (over 4 s for the five, by a ``faulthandler`` dump of every worker); after 5 s execnet sends
    the worker a SIGINT (``gateway_base._terminate_execution``), reported as a
    ``KeyboardInterrupt`` inside hypothesis' gc callback. Collected here once, what a finalizer
    raises is reported as before, and the five passes only walk what came after."""
    import gc

    gc.collect()
    gc.freeze()


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
