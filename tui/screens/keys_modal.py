"""KeysModal (F1): every key of the workbench.

Textual's own keys panel lists only the focused widget's bindings; this lists the app's: the
main screen's actions (handed in from :data:`~tui.screens.main_actions.MAIN_ACTIONS`, so it
cannot drift from the real bindings), moving in the panes and the dialogs' keys. Esc (or F1
again) closes it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from tui.formatting import key_label

OTHER_KEYS: tuple[tuple[str, str], ...] = (
    ("Enter (input)", "send the question; @path mentions a file (→ or End completes it)"),
    ("Tab / Shift+Tab", "move between the input and the panes"),
    (
        "Alt+1 … Alt+4",
        "jump to the chat, scratchpad, history, gauge pane (where Alt reaches "
        "the app: not under tmux or a terminal whose Alt types ¡™£¢ — there Ctrl+G, Tab)",
    ),
    ("any letter or digit", "typed in a pane, it goes to the input box (no pane takes it)"),
    ("↑ ↓ PgUp PgDn Home End", "move in the chat, scratchpad and history panes"),
    ("Enter (pane)", "open the selected item in full (a tool message beside its raw output)"),
    ("Ctrl+P", "command palette: every action by name"),
    ("Ctrl+Q", "quit (a running round is interrupted first)"),
    ("a / s / d", "permission prompt: allow once / always for this session / deny"),
    ("e / c", "context inspector: expand / collapse every layer"),
    ("↑ ↓ (after F5)", "move the cut: one round more or less stays as it is"),
    ("Enter (after F5)", "compact at the cut (the box takes an optional focus)"),
    ("Ctrl+R (after F5)", "write the draft summary and edit it first (Ctrl+S stores it)"),
    ("Esc", "close any dialog or screen; after F5, cancel; during a round, interrupt it"),
)


def under_tmux() -> bool:
    """The workbench runs in a tmux pane (``TMUX`` set): Alt+digit arrives there as a typed
    character (``¡™£¢``), never as the key."""
    return bool(os.environ.get("TMUX"))


def keys_table(actions: Sequence[tuple[str, str]], tmux: bool = False) -> Table:
    """``actions`` as (key, what it does), then the keys every pane and dialog shares; under
    tmux only the keys that reach the app there (issue 39: Alt+1…4 typed ``¡™£¢``)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for key, what in actions:
        if tmux and key.startswith("alt+"):
            continue
        table.add_row(key_label(key), what)
    for key, what in OTHER_KEYS:
        if tmux and key.startswith("Alt+"):
            continue
        table.add_row(key, what)
    return table


class KeysModal(ModalScreen[None]):
    """The workbench's keys, in one list."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="keys.close", tooltip="Close the keys list"),
        Binding("f1", "close", "Close", show=False, id="keys.close_f1", tooltip="Close"),
    ]

    def __init__(self, actions: Sequence[tuple[str, str]]) -> None:
        super().__init__()
        self.actions = list(actions)
        """The main screen's keys and what each does."""

    def compose(self) -> ComposeResult:
        with Vertical(id="keys-dialog", classes="dialog"):
            yield Label("Keys of the workbench — Esc closes this list", id="keys-title")
            with VerticalScroll(id="keys-scroll"):
                yield Static(keys_table(self.actions, under_tmux()), id="keys-table")

    def action_close(self) -> None:
        self.dismiss(None)
