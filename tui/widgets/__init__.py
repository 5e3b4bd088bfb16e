"""tui.widgets package."""
