"""Issue 30: looking at a recorded session in the workbench changes nothing; a change asked of
it (Ctrl+Z, typing) goes to a fork, opened in its place, and the recording stays as it was."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from cli.main import main
from engine.recordings.importing import import_session
from engine.settings.config import Settings
from engine.store import Store
from tests.tui.conftest import AppFactory
from tests.tui.helpers import ask, opened, settle, wait_until

pytestmark = pytest.mark.anyio

MAROT = (
    Path(__file__).parent.parent
    / "data"
    / "corpus"
    / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
)


def show_json(db: Path, session_id: int) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["show", str(session_id), "--db", str(db), "--json"]) == 0
    return out.getvalue()


def imported(db: Path, workspace: Path, path: Path = MAROT) -> int:
    """The corpus file ``path`` (marot's session unless named) imported; its session's id."""
    store = Store.open(db)
    report = import_session(store, path, str(workspace), settings=Settings())
    store.close()
    assert report.session.id is not None
    return report.session.id


SWE_AGENT = MAROT.parent / "SWE-agent__SWE-agent__swe-agent__test-repo-i1.traj"
"""The corpus' SWE-agent trajectory: no time, no call recorded one by one."""


async def test_opening_and_quitting_changes_nothing(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    sid = imported(db_path, workspace)
    before = show_json(db_path, sid)
    app = make_app(resume=sid)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        assert screen.session_id == sid
        await pilot.press("ctrl+q")
    app.store.close()
    assert show_json(db_path, sid) == before
    store = Store.open(db_path)
    assert [i.session.id for i in store.list_sessions()] == [sid]  # no fork either
    store.close()


async def test_undo_and_typing_go_to_a_fork(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    sid = imported(db_path, workspace)
    before = show_json(db_path, sid)
    app = make_app(resume=sid)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        assert screen.undoable is not None  # the recorded auto compaction
        await pilot.press("ctrl+z")
        await wait_until(pilot, lambda: screen.session_id not in (None, sid))
        await settle(pilot)
        first_fork = screen.session_id
        assert screen.agent is not None and not screen.agent.session.recorded
        assert screen.agent.session.source == "fork of #1 at round 8"
        # the undo ran on the fork once it was open: nothing left to undo there
        await wait_until(pilot, lambda: screen.undoable is None)
        notes = [n.message for n in app._notifications]  # noqa: SLF001 - what was shown
        assert any(f"fork of #1 at round 8: session {first_fork}" in n for n in notes)
        assert any("are back in the history" in n for n in notes)
        # the fork is an ordinary session: typing in it does not fork again
        await ask(pilot, "ls")
        assert screen.session_id == first_fork
    app.store.close()
    assert show_json(db_path, sid) == before
