"""Block: one item of the line-based panes — an optional header row and a wrapped body.

Plain data, no Textual: the history, chat and scratchpad build lists of blocks (off the UI
thread when the session is long) and :class:`~tui.widgets.block_view.BlockView` draws them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GUTTER_WIDTH = 2
"""Cells left of every row: the gutter character and a space."""


@dataclass
class Block:
    """One item of a :class:`BlockView`: an optional header row and a wrapped body."""

    body: str = ""
    header: tuple[tuple[str, str], ...] = ()
    """Header segments as ``(text, component class)``; no header row when empty."""
    style: str = "block-view--body"
    """Component class of the body rows."""
    gutter: str = " "
    """One character drawn left of every row (e.g. the keep-zone bar)."""
    gutter_style: str = "block-view--gutter"
    fill: str = " "
    """Pads the header row to the full width (``─`` for separators)."""
    max_rows: int | None = None
    """Body rows shown at most; the rest is announced as ``… +N lines``."""
    selectable: bool = True
    space_before: bool = False
    """A blank row above the block (separates rounds in the chat)."""
    data: Any = field(default=None, compare=False)
    """What the block stands for (a Message, a Summary...), for the owner's handlers."""
