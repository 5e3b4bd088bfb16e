"""Issue 29: the workbench asks for the workspace of a session recorded by another agent
before its first round runs, naming the recorded folder, and refuses ``/``, the home folder
and relative paths."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Static

from engine.store import Store
from tests.tui.conftest import AppFactory
from tests.tui.helpers import ask, messages_in, opened, settle, wait_until
from tui.screens.workspace_modal import WorkspaceModal

pytestmark = pytest.mark.anyio


@pytest.fixture
def recorded(db_path: Path, tmp_path: Path) -> tuple[int, Path]:
    """An imported session whose recording names ``elsewhere`` (a folder that exists)."""
    elsewhere = tmp_path / "recorded-in"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("RECORDED-FOLDER-FILE\n")
    store = Store.open(db_path)
    session = store.create_session(workspace=str(elsewhere), title="import: x", provider="import")
    store.close()
    assert session.id is not None and not session.workspace_given
    return session.id, elsewhere


async def type_folder(pilot: object, app: object, text: str) -> str:
    """Type ``text`` in the modal's box, press Enter; what the error line says."""
    screen = app.screen  # type: ignore[attr-defined]
    box = screen.query_one("#workspace-input", Input)
    box.value = text
    await pilot.press("enter")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    if not isinstance(app.screen, WorkspaceModal):  # type: ignore[attr-defined]
        return ""
    return str(screen.query_one("#workspace-error", Static).render())


async def test_the_modal_names_the_recorded_folder_and_refuses_bad_ones(
    make_app: AppFactory,
    recorded: tuple[int, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session_id, elsewhere = recorded
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    app = make_app(resume=session_id)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        assert screen.agent is not None and screen.agent.workspace is None  # opened, no folder
        notices = [n.message for n in app._notifications]  # noqa: SLF001 - what was shown
        assert any(f"Recorded by another agent in {elsewhere}" in n for n in notices)
        await ask(pilot, "read notes.txt", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, WorkspaceModal))
        await pilot.pause()
        detail = str(app.screen.query_one("#workspace-detail", Static).render())
        assert f"recorded by another agent in {elsewhere}" in detail
        # The recorded folder exists here and is usable: offered, not taken.
        assert app.screen.query_one("#workspace-input", Input).value == str(elsewhere)
        assert "relative path" in await type_folder(pilot, app, "project")
        assert "root folder" in await type_folder(pilot, app, "/")
        assert "home folder" in await type_folder(pilot, app, str(home))
        assert "does not exist" in await type_folder(pilot, app, str(tmp_path / "nope"))
        project = tmp_path / "project"
        project.mkdir()
        (project / "notes.txt").write_text("PROJECT-FILE\n")
        assert await type_folder(pilot, app, str(project)) == ""
        await settle(pilot)
        assert screen.agent.workspace == project
        session = app.store.get_session(session_id)
        assert session.workspace == str(project) and session.workspace_given
        # The round asked for ran, in the folder given.
        [result] = [m for m in messages_in(app) if m.role == "tool"]
        assert "PROJECT-FILE" in result.content and "RECORDED-FOLDER-FILE" not in result.content


async def test_not_now_runs_no_tool(make_app: AppFactory, recorded: tuple[int, Path]) -> None:
    session_id, _elsewhere = recorded
    app = make_app(resume=session_id)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await ask(pilot, "read notes.txt", wait=False)
        await wait_until(pilot, lambda: isinstance(app.screen, WorkspaceModal))
        await pilot.press("escape")
        await settle(pilot)
        assert screen.agent is not None and screen.agent.workspace is None
        results = [m for m in messages_in(app) if m.role == "tool"]
        assert len(results) == 1
        assert "no_workspace" in results[0].content
        assert "RECORDED-FOLDER-FILE" not in results[0].content
        assert not app.store.get_session(session_id).workspace_given
