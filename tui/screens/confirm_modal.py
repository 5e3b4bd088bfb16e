"""ConfirmModal: asks before an action that changes a session; returns True to go ahead.

The focus starts on the button that keeps things as they are, so an Enter typed by habit
changes nothing; **y** (or the other button) goes ahead, Esc keeps.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from tui.text_wrap import plain


class ConfirmModal(ModalScreen[bool]):
    """A question, what going ahead does, and two buttons: go ahead (y) or keep (Esc)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "keep", "Keep", id="confirm.keep", tooltip="Change nothing"),
        Binding("y", "go", "Yes", id="confirm.yes", tooltip="Go ahead"),
    ]

    def __init__(self, question: str, detail: str, yes: str) -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog", classes="dialog"):
            yield Label(plain(self.question), id="confirm-title")
            yield Static(plain(self.detail), id="confirm-detail")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.yes} (y)", variant="warning", id="confirm-yes")
                yield Button("Keep (Esc)", id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    @on(Button.Pressed, "#confirm-yes")
    def _yes(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#confirm-no")
    def _no(self) -> None:
        self.dismiss(False)

    def action_go(self) -> None:
        self.dismiss(True)

    def action_keep(self) -> None:
        self.dismiss(False)
