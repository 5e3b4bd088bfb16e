"""tui.screens package."""
