"""WorkspaceModal: give a session recorded by another agent the folder its tools may use.

A recording names the folder its agent worked in, and anyone could have written that name
(``/``, ``/etc``, ``~``). The workbench shows it and asks: the user confirms a folder, the one
suggested or another, or leaves the session without one (no tool runs, no workspace file is
read). The folder must exist and be absolute, and is never ``/`` or the home folder itself
(:func:`engine.validation.workspace_refusal`), each refusal said in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from engine.validation import workspace, workspace_refusal
from tui.focus import focus_steady
from tui.text_wrap import display_safe, plain


def suggested_folder(recorded: str, own: Path) -> Path | None:
    """The folder offered first: the recorded one when it is a usable folder here (a session
    the user recorded on this machine), else the workbench's own folder, else none."""
    for candidate in (recorded, str(own)):
        if candidate and workspace_refusal(candidate) is None and Path(candidate).is_dir():
            return Path(candidate)
    return None


def chosen_folder(text: str) -> Path:
    """The folder typed, checked: absolute (a relative one would depend on where the
    workbench started), existing, neither ``/`` nor the home folder. ``ValueError``: why not."""
    typed = text.strip()
    if not typed:
        raise ValueError("type a folder, or Esc to leave the session without one")
    if not Path(typed).expanduser().is_absolute():
        shown = display_safe(typed, one_line=True)
        raise ValueError(f"{shown} is a relative path; give an absolute folder")
    return workspace(typed)


class WorkspaceModal(ModalScreen[Path | None]):
    """Asks for a session's workspace; returns the folder, or None to leave it without."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "without",
            "Not now",
            id="workspace.without",
            tooltip="Leave the session without a workspace: its tools refuse to run",
        ),
    ]

    def __init__(self, session_id: int, recorded: str, suggestion: Path | None) -> None:
        super().__init__()
        self.session_id = session_id
        self.recorded = recorded
        self.suggestion = suggestion

    def compose(self) -> ComposeResult:
        recorded = self.recorded or "(no folder named)"
        with Vertical(id="workspace-dialog", classes="dialog"):
            yield Label(f"Session #{self.session_id} has no workspace", id="workspace-title")
            yield Static(
                plain(
                    f"It was recorded by another agent in {recorded}. A recording does not "
                    "choose where the agent's tools read, run and change files: give the "
                    "folder yourself. Enter confirms the folder below; Esc leaves the session "
                    "without one (no tool runs)."
                ),
                id="workspace-detail",
            )
            yield Input(
                str(self.suggestion or ""), placeholder="/absolute/folder", id="workspace-input"
            )
            yield Static("", id="workspace-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Use this folder (Enter)", variant="primary", id="workspace-use")
                yield Button("Not now (Esc)", id="workspace-not-now")

    def on_mount(self) -> None:
        focus_steady(self.query_one("#workspace-input", Input))

    @on(Input.Submitted, "#workspace-input")
    @on(Button.Pressed, "#workspace-use")
    def _use(self) -> None:
        try:
            folder = chosen_folder(self.query_one("#workspace-input", Input).value)
        except ValueError as exc:
            self.query_one("#workspace-error", Static).update(plain(str(exc), one_line=True))
            return
        self.dismiss(folder)

    @on(Button.Pressed, "#workspace-not-now")
    def _not_now(self) -> None:
        self.dismiss(None)

    def action_without(self) -> None:
        self.dismiss(None)
