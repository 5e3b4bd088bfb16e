"""CompactBar: compaction by hand, with the cut chosen on screen (F5).

F5 shows the bar under the chat input and draws the cut in the history pane: the rounds above
it go into one summary, the last N rounds below it stay. ↑ and ↓ move the cut (one round more
or less stays), the box takes an optional focus for the summary, Enter compacts, Ctrl+R opens
the draft summary to edit before it is stored, Esc cancels. The footer lists these keys while
the bar has the focus. The bar only asks; the screen draws the cut and runs the compaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import Reactive, reactive
from textual.widgets import Input, Static


class FocusInput(Input):
    """The optional focus for the summary; Enter compacts, ↑ ↓ move the cut (an Input takes
    ↑ ↓ for scrolling, so the keys are bound here, ahead of it)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "up",
            "move_cut(1)",
            "Keep more",
            key_display="↑",
            id="compact_bar.keep_more",
            tooltip="Move the cut up: one round more stays as it is",
        ),
        Binding(
            "down",
            "move_cut(-1)",
            "Keep fewer",
            key_display="↓",
            id="compact_bar.keep_fewer",
            tooltip="Move the cut down: one round more goes into the summary",
        ),
        Binding(
            "enter",
            "submit",
            "Compact",
            id="compact_bar.compact",
            tooltip="Compact now: the rounds above the cut become one summary",
        ),
    ]

    def action_move_cut(self, delta: int) -> None:
        self.query_ancestor(CompactBar).action_move_cut(delta)


class CompactBar(Vertical):
    """Where the cut is, in words, and the focus box."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+r",
            "edit",
            "Edit summary",
            id="compact_bar.edit",
            tooltip="Write the draft summary and open it to edit before it is stored",
        ),
        Binding(
            "escape",
            "cancel",
            "Cancel",
            id="compact_bar.cancel",
            tooltip="Leave without compacting; nothing changes",
        ),
    ]

    @dataclass
    class CutMoved(Message):
        """The cut moved: the last ``keep`` rounds stay."""

        keep: int

    @dataclass
    class Confirmed(Message):
        """Compact with the last ``keep`` rounds kept; ``edit``: show the draft first."""

        keep: int
        focus: str
        edit: bool

    class Cancelled(Message):
        """Esc: no compaction."""

    keep: Reactive[int] = reactive(1, init=False)
    """How many of the newest rounds stay (the cut is above them)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rounds = 0
        """How many rounds history holds (the cut moves between 0 and ``rounds - 1`` kept)."""

    def compose(self) -> ComposeResult:
        yield Static(id="compact-bar-plan")
        focus = FocusInput(placeholder="Focus for the summary (optional)", id="compact-bar-focus")
        # Set here, not on mount: the bar is mounted after the first frame, maybe as the app
        # closes, when its children may be gone already.
        focus.cursor_blink = not self.app.is_headless
        yield focus

    def start(self, rounds: int, keep: int) -> None:
        """Show the bar for a history of ``rounds`` rounds with the cut above the last ``keep``."""
        self.rounds = rounds
        self.query_one(FocusInput).value = ""
        self.display = True
        self.set_reactive(CompactBar.keep, keep)
        self.post_message(self.CutMoved(keep))
        self.query_one(FocusInput).focus()

    def describe(self, text: str) -> None:
        """What compacting at the cut would do, in words (the screen works it out)."""
        self.query_one("#compact-bar-plan", Static).update(text)

    @property
    def focus_text(self) -> str:
        return self.query_one(FocusInput).value.strip()

    def watch_keep(self, keep: int) -> None:
        self.post_message(self.CutMoved(keep))

    def action_move_cut(self, delta: int) -> None:
        self.keep = max(0, min(self.rounds - 1, self.keep + delta))

    def action_edit(self) -> None:
        self.post_message(self.Confirmed(self.keep, self.focus_text, edit=True))

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())

    @on(Input.Submitted, "#compact-bar-focus")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Confirmed(self.keep, self.focus_text, edit=False))
