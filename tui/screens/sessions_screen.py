"""SessionsScreen: every stored session; Enter resumes the one under the cursor.

Columns: id, title, workspace, last update (relative to the app's clock), rounds, tokens of
history as stored, compactions. The list is read in a thread worker; the screen returns the
chosen session id (or None).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label
from textual.worker import Worker, WorkerState

from engine.models import SessionInfo
from engine.store import Store
from tui.formatting import Clock, one_line, relative_time


class SessionsScreen(Screen[int | None]):
    """Browse and resume stored sessions."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", id="sessions.back", tooltip="Back to the session"),
        Binding(
            "enter",
            "resume",
            "Resume",
            id="sessions.resume",
            tooltip="Open the selected session",
            priority=True,
        ),
    ]

    def __init__(self, store: Store, clock: Clock, current: int | None) -> None:
        super().__init__()
        self.store = store
        self.clock = clock
        self.current = current

    def compose(self) -> ComposeResult:
        yield Label("Stored sessions — Enter resumes, Esc goes back", id="sessions-title")
        table: DataTable[str] = DataTable(
            id="sessions-table", cursor_type="row", zebra_stripes=True
        )
        table.add_columns("", "ID", "Title", "Workspace", "Updated", "Rounds", "Tokens", "Comp.")
        yield table
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DataTable).loading = True
        self.load()

    @work(thread=True, exclusive=True, group="sessions", exit_on_error=False)
    def load(self) -> list[SessionInfo]:
        try:
            return self.store.list_sessions()
        finally:
            self.store.db.close()

    def show(self, infos: list[SessionInfo]) -> None:
        table = self.query_one("#sessions-table", DataTable)
        table.loading = False
        now = self.clock()
        for info in infos:
            s = info.session
            table.add_row(
                "●" if s.id == self.current else "",
                str(s.id),
                one_line(s.title or "(untitled)", 40),
                Path(s.workspace).name or s.workspace,
                relative_time(s.updated_at, now),
                str(info.rounds),
                f"{info.current_tokens:,}",
                str(info.compactions),
                key=str(s.id),
            )
        table.focus()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group != "sessions":
            return
        if event.state == WorkerState.SUCCESS and worker.result is not None:
            self.show(worker.result)
        elif event.state == WorkerState.ERROR:
            self.query_one(DataTable).loading = False
            self.notify(f"Cannot list sessions: {worker.error}", severity="error")

    def action_resume(self) -> None:
        table = self.query_one("#sessions-table", DataTable)
        if table.row_count == 0:
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        if key.value is not None:
            self.dismiss(int(key.value))

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.dismiss(int(event.row_key.value))

    def action_close(self) -> None:
        self.dismiss(None)
