"""Fixtures for the workbench tests: a fixed workspace, a temporary database, an app factory.

Snapshots must not change from run to run, so everything the screen could show is pinned: the
workspace's files and their mtimes, the workspace label (``demo``), the clock used for relative
times, and — for pictures that show stored times — the timestamps in the database.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.llm.offline import OfflineProvider
from tests.tui.helpers import FIXED_NOW, make_workspace, offline_settings
from tui.app import CtxscopeApp


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (``pytest.mark.anyio``) run on asyncio, Textual's loop."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No CTXSCOPE_* variable, API key or ctxscope.toml of the host may leak into a test, nor
    the TMUX of a pane the suite runs in (F1 lists other keys under tmux)."""
    for name in list(os.environ):
        if name.startswith("CTXSCOPE_") or name in ("ANTHROPIC_API_KEY", "TMUX"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "ctxscope.db"


AppFactory = Callable[..., CtxscopeApp]

SHOWN_FOR = 3600.0
"""Seconds a notification stays up in a test. The workbench's own (3 to 20 s, Textual's 5 s by
default) are wall-clock time, which a loaded machine can spend before the test reads what was
shown: at load 8-14, ``test_retry_wait_is_a_notice`` (a 3 s toast) and
``test_a_skipped_compaction_leaves_no_fork`` (5 s) failed with the notification already gone."""


def _lasting(app: CtxscopeApp) -> None:
    """``app``'s notifications, each shown for :data:`SHOWN_FOR` seconds (its text, title and
    severity as the workbench gives them)."""
    notify = app.notify

    def shown_until_read(message: str, **kwargs: Any) -> None:
        notify(message, **{**kwargs, "timeout": SHOWN_FOR})

    app.notify = shown_until_read  # type: ignore[method-assign]


@pytest.fixture
def make_app(workspace: Path, db_path: Path) -> Iterator[AppFactory]:
    """Build apps on the test's workspace and database; closes their stores afterwards."""
    apps: list[CtxscopeApp] = []

    def factory(**kwargs: Any) -> CtxscopeApp:
        settings = kwargs.pop("settings", None) or offline_settings()
        kwargs.setdefault("clock", lambda: FIXED_NOW)
        kwargs.setdefault("workspace_label", "demo")
        kwargs.setdefault("provider", OfflineProvider(settings))
        app = CtxscopeApp(db_path=db_path, workspace=workspace, settings=settings, **kwargs)
        _lasting(app)
        apps.append(app)
        return app

    yield factory
    for app in apps:
        app.store.close()
