"""Issue 32: the workbench in a real terminal (tmux), keys sent by ``tmux send-keys`` in one
burst while a pane has the focus: the whole text arrives, and its Enter sends it.

The workbench runs as the console script does (``python -m cli.workbench`` with ``--workspace``
and ``--db``, offline) in a tmux server of its own (``-L``, a socket named for this test), so
no tmux session of the user is touched; the server is ended at the end. Without tmux on the
machine there is no terminal to drive, and the test says so by skipping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.store import Store
from tests.tmux_env import plain_shell_env

TYPED = "glob 2024*.py then read pyproject.toml"
READY_WITHIN = 60.0
"""Seconds the workbench may take to start on a loaded machine."""

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Callable[..., str]]:
    socket = f"ctxscope-test-{os.getpid()}-{tmp_path.name}"

    def run(*args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", socket, *args],
            capture_output=True,
            text=True,
            timeout=30,
            env=plain_shell_env(),
        )
        return done.stdout

    yield run
    subprocess.run(
        ["tmux", "-L", socket, "kill-server"],
        capture_output=True,
        timeout=30,
        env=plain_shell_env(),
    )


def wait_for(what: Callable[[], bool], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.2)
    return False


def inputs(db: Path) -> list[str]:
    if not db.exists():
        return []
    store = Store.open(db, read_only=True)
    try:
        ids = [info.session.id or 0 for info in store.list_sessions()]
        return [m.content for i in ids for m in store.all_messages(i) if m.role == "user"]
    finally:
        store.close()


def test_keys_sent_at_once_into_a_pane(tmp_path: Path, tmux: Callable[..., str]) -> None:
    """Before the fix nothing was sent: the burst queued in the pane, the Enter with it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    db = tmp_path / "c.db"
    root = Path(__file__).resolve().parents[2]
    command = (
        f"cd {root} && CTXSCOPE_MODEL=offline PYTHONPATH={root} {sys.executable} -m cli.workbench "
        f"--workspace {workspace} --db {db}"
    )
    tmux("new-session", "-d", "-s", "bench", "-x", "140", "-y", "40", command)
    shown = lambda: tmux("capture-pane", "-p", "-t", "bench")  # noqa: E731
    assert wait_for(lambda: "Offline: rule-based" in shown(), READY_WITHIN), shown()
    # the session opens in a worker after the first frame: its input then says so (a fixed
    # second was not always enough on a loaded machine)
    assert wait_for(lambda: "Ask… (@path" in shown(), READY_WITHIN), shown()
    # Shift+Tab: the focus from the input to a pane (Alt+3 arrives here as "£", typed)
    tmux("send-keys", "-t", "bench", "BTab")
    # a pane has the focus once the footer shows a pane's key (the input has no "Open")
    assert wait_for(lambda: "⏎ Open" in shown(), READY_WITHIN), shown()
    # one send-keys: the text and its Enter reach the terminal as one burst
    tmux("send-keys", "-t", "bench", TYPED, "Enter")
    assert wait_for(lambda: TYPED in inputs(db), 30.0), (inputs(db), shown())
    assert inputs(db) == [TYPED]
    tmux("send-keys", "-t", "bench", "C-q")
