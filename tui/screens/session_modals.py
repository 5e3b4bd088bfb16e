"""The sessions screen's dialogs: RenameModal (a new title) and DeleteModal (asks first)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from tui.focus import focus_steady
from tui.text_wrap import display_safe, plain


class RenameModal(ModalScreen[str | None]):
    """Ask for a session's new title; returns it, or None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="rename.cancel", tooltip="Keep the old title"),
    ]

    def __init__(self, session_id: int, title: str) -> None:
        super().__init__()
        self.session_id = session_id
        self.old_title = title

    def compose(self) -> ComposeResult:
        with Vertical(id="rename-dialog", classes="dialog"):
            yield Label(f"Rename session #{self.session_id}", id="rename-title")
            # A recorded title may hold control characters: edited in their escaped form.
            shown = display_safe(self.old_title, one_line=True)
            yield Input(shown, placeholder="a title", id="rename-input")
            yield Static("Enter renames, Esc keeps the old title.", classes="dialog-hint")

    def on_mount(self) -> None:
        focus_steady(self.query_one("#rename-input", Input))

    @on(Input.Submitted, "#rename-input")
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


class DeleteModal(ModalScreen[bool]):
    """Ask before deleting a session and everything stored for it; returns True to delete."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "keep", "Keep", id="delete.keep", tooltip="Keep the session"),
        Binding("y", "delete", "Delete", id="delete.yes", tooltip="Delete the session"),
    ]

    def __init__(self, session_id: int, title: str, rounds: int) -> None:
        super().__init__()
        self.session_id = session_id
        self.title_text = title
        self.rounds = rounds

    def compose(self) -> ComposeResult:
        with Vertical(id="delete-dialog", classes="dialog"):
            yield Label(f"Delete session #{self.session_id}?", id="delete-title")
            yield Static(
                plain(
                    f"“{self.title_text or '(untitled)'}” and everything stored for it: "
                    f"{self.rounds} rounds with their messages, summaries, the archive of "
                    "compacted rounds, tool observations and usage records. This cannot be "
                    "undone."
                ),
                id="delete-detail",
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Delete (y)", variant="error", id="delete-yes")
                yield Button("Keep (Esc)", id="delete-no")

    def on_mount(self) -> None:
        self.query_one("#delete-no", Button).focus()

    @on(Button.Pressed, "#delete-yes")
    def _yes(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#delete-no")
    def _no(self) -> None:
        self.dismiss(False)

    def action_delete(self) -> None:
        self.dismiss(True)

    def action_keep(self) -> None:
        self.dismiss(False)
