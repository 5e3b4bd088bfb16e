"""CompactModal: "compact now", with optional focus instructions for the summary.

It says what will happen before it happens — which rounds go into the summary and how many
stay in the keep zone — and returns the focus text (possibly empty), or None when cancelled.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static


class CompactModal(ModalScreen[str | None]):
    """Ask for focus instructions, then compact (Enter) or cancel (Esc)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="compact.cancel", tooltip="Close, change nothing"),
    ]

    def __init__(self, plan: str) -> None:
        super().__init__()
        self.plan = plan
        """What the compaction would archive, in words."""

    def compose(self) -> ComposeResult:
        with Vertical(id="compact-dialog", classes="dialog"):
            yield Label("Compact the history now", id="compact-title")
            yield Static(self.plan, id="compact-plan")
            yield Label("Focus for the summary (optional):")
            yield Input(
                placeholder="e.g. keep the decisions about the parser API",
                id="compact-focus",
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Compact (Enter)", variant="primary", id="compact-go")
                yield Button("Cancel (Esc)", id="compact-cancel")

    def on_mount(self) -> None:
        focus = self.query_one("#compact-focus", Input)
        if self.app.is_headless:
            focus.cursor_blink = False
        focus.focus()

    def _go(self) -> None:
        self.dismiss(self.query_one("#compact-focus", Input).value.strip())

    @on(Input.Submitted, "#compact-focus")
    def _submitted(self) -> None:
        self._go()

    @on(Button.Pressed, "#compact-go")
    def _go_pressed(self) -> None:
        self._go()

    @on(Button.Pressed, "#compact-cancel")
    def _cancel_pressed(self) -> None:
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
