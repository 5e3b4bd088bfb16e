"""Focusing a text box so that pictures of it are the same on every run."""

from __future__ import annotations

from textual.widgets import Input


def focus_steady(box: Input) -> None:
    """Focus ``box``; run headless (tests, screenshots) its cursor does not blink, so a
    picture does not depend on when it was taken."""
    if box.app.is_headless:
        box.cursor_blink = False
    box.focus()
