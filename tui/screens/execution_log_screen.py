"""ExecutionLogScreen: seed 003's execution log of the session (``message-window`` strategy).

After every run the strategy appends ``{requestId, userPreview, outputPreview, toolCalls,
hadToolFailure}`` to the session's ``agent-context.jsonl``; past the window the older entries are
merged into one summary entry. This screen lists the entries as stored, newest last; a failed call
is marked ``✗`` (a merged entry's per-tool count says how many of its calls failed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Label

from engine.compaction.execution_log import read_log
from tui.formatting import one_line
from tui.text_wrap import plain
from tui.widgets.key_bar import KeyBar


def tool_summary(entry: dict[str, Any]) -> str:
    """The entry's tool calls in one line: names (with counts for a merged entry), a failed call
    marked ``✗`` (``Bash✗``; merged: ``Bash×5 (2✗)``)."""
    parts = []
    for call in entry.get("toolCalls", []):
        name = str(call.get("tool", "?"))
        count = call.get("count")
        if count:
            failed = int(call.get("failed", 0))
            parts.append(f"{name}×{count}" + (f" ({failed}✗)" if failed else ""))
        else:
            parts.append(name + ("" if call.get("ok", True) else "✗"))
    return ", ".join(parts) or "—"


class ExecutionLogScreen(Screen[None]):
    """The entries of one session's execution log."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="log.back", tooltip="Back to the session"),
    ]

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def compose(self) -> ComposeResult:
        with Vertical(id="log-screen"):
            yield Label(plain(f"Execution log · {self.path}", one_line=True), id="log-title")
            yield DataTable(id="log-table", cursor_type="row", zebra_stripes=True)
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("request", "you asked", "the answer", "tools")
        try:
            entries = read_log(self.path)
        except (OSError, ValueError) as exc:
            said = plain(f"Execution log · cannot read: {exc}", one_line=True)
            self.query_one("#log-title", Label).update(said)
            return
        if not entries:
            self.query_one("#log-title", Label).update(
                "Execution log · empty: the message-window strategy writes one entry per run"
            )
        for entry in entries:
            request = str(entry.get("requestId", ""))
            if entry.get("summary"):
                request = f"{entry.get('merged', '?')} merged"
            table.add_row(
                request,
                plain(one_line(str(entry.get("userPreview", "")), 40)),
                plain(one_line(str(entry.get("outputPreview", "")), 50)),
                plain(tool_summary(entry), one_line=True),
            )
        table.focus()
