"""Keys that move between the panes and the text box (a part of
:class:`~tui.screens.main_screen.MainScreen`, handed the screen): typing in a pane goes to the
box, a burst whole and in order; Ctrl+G and Alt+1–4 jump between the panes; Ctrl+T says how to
pin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.widgets import Input

from tui.widgets.chat_input import ChatInput
from tui.widgets.history_view import HistoryView

if TYPE_CHECKING:
    from tui.screens.main_screen import MainScreen


def typed_character(event: events.Key) -> bool:
    """Whether ``event`` types a character (not Alt+ or Ctrl+ something)."""
    return (
        event.is_printable
        and event.character is not None
        and not event.key.startswith(("alt+", "ctrl+"))
    )


class PaneKeys:
    """The main screen's keys between panes and the text box."""

    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen
        self._jumped: str | None = None
        """The pane Ctrl+G went to last (the gauge takes no focus to tell)."""

    def cycle_pane(self) -> None:
        """Ctrl+G: the focus to the next pane — chat, scratchpad, history, then (narrow
        layout) the gauge — a key that reaches the app under tmux, where Alt+digit arrives as
        a character (``£``, ``™``)."""
        screen = self.screen
        order = ["chat", "scratch", "history"] + (["gauge"] if screen.has_class("-narrow") else [])
        focused = screen.focused.id if screen.focused is not None else None
        if focused in order:
            now = focused
        elif self._jumped == "gauge" and "gauge" in order and screen.pane == "gauge":
            now = "gauge"  # the gauge takes no focus: where the last jump went
        else:
            now = "chat"  # the input box, or nothing: the chat column
        self._jumped = order[(order.index(now) + 1) % len(order)]
        self.focus_pane(self._jumped)

    def focus_pane(self, name: str) -> None:
        """Jump to a pane (Alt+1–4, Ctrl+G); in the narrow layout its tab comes to the
        front."""
        screen = self.screen
        if name != "chat" and screen.has_class("-narrow"):
            screen.pane = name
        target = {"chat": "#chat", "scratch": "#scratch", "history": "#history"}.get(name)
        if target is not None:
            screen.query_one(target).focus()

    def text_box(self) -> Input:
        """Where typing goes: the compaction bar's focus box while F5 is on, else the
        question box."""
        screen = self.screen
        return (
            screen.query_one("#compact-bar-focus", Input)
            if screen.actions.cutting
            else screen.query_one(ChatInput)
        )

    def steer_typing(self, event: events.Key | events.Paste) -> None:
        """Called by the app for each key and paste *before* it is handed to the focused
        widget: a printable key or a paste while a pane has the focus moves the focus to the
        text box at once, so the key itself, and every key of the same burst after it (Enter
        included), reaches the box, in order.

        Deciding later, when the pane handles the key, is too late for a burst: the app hands
        keys to the widget focused when it reads them, so a paste or fast typing would queue
        the rest of the burst in the pane (letters lost, Enter opening the pane's item)."""
        screen = self.screen
        if isinstance(screen.focused, Input) or screen.app.screen is not screen:
            return
        if isinstance(event, events.Key) and not typed_character(event):
            return
        box = self.text_box()
        if not box.disabled:
            screen.set_focus(box, scroll_visible=False)

    def key(self, event: events.Key) -> None:
        # A printable key that reached a pane all the same (a pane focused by the mouse while
        # keys were queued) goes to the text box: no pane takes a printable key.
        screen = self.screen
        if event.key == "ctrl+t" and screen.query_one(HistoryView).selected_message() is None:
            # The pin binding is off without a selection: say how instead of nothing.
            event.stop()
            screen.action_toggle_pin()
            return
        if isinstance(screen.focused, Input) or not typed_character(event):
            return
        box = self.text_box()
        if box.disabled:
            return
        event.stop()
        event.prevent_default()
        box.focus()
        box.insert_text_at_cursor(event.character or "")
