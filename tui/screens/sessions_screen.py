"""SessionsScreen: the stored sessions; Enter resumes the one under the cursor.

Columns: id, title, last active (the session's own last round, relative to the app's clock),
its context and cost (the figures every surface prints), compactions, rounds, and last the
workspace's folder name. The title takes the width the others leave (at 80 columns every
figure stays in view; the workspace, the least needed, is the one a narrow terminal scrolls
to). By default only this workspace's sessions are listed (``w``
shows every workspace); a preview of the selected session (its first and last question, its
last answer) sits below; ``r`` renames, ``d`` deletes (after asking; the archive and the
observations go with it). Store reads run in thread workers; the screen returns the chosen
session id (or None).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import PurePosixPath, PureWindowsPath
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.reactive import Reactive, reactive
from textual.screen import Screen
from textual.widgets import DataTable, Label, Static
from textual.worker import Worker, WorkerState

from engine.figures import SessionFigures, by_last_active, session_times
from engine.models import SessionInfo
from engine.recordings.figures import session_figures
from engine.session.workspace import NO_FOLDER, session_workspace
from engine.settings.config import Settings
from engine.settings.params import session_settings
from engine.store import Store
from engine.store.lease import SessionBusy
from engine.terminal_text import plural
from tui.formatting import (
    Clock,
    one_line,
    relative_time,
    strip_reminders,
    workspace_label,
)
from tui.screens.session_modals import DeleteModal, RenameModal
from tui.text_wrap import display_safe, plain
from tui.widgets.key_bar import KeyBar


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
        Binding(
            "w",
            "toggle_workspaces",
            "All / this workspace",
            id="sessions.workspaces",
            tooltip="List every workspace's sessions, or only this workspace's",
        ),
        Binding("r", "rename", "Rename", id="sessions.rename", tooltip="Rename the session"),
        Binding(
            "c",
            "compare",
            "Compare",
            id="sessions.compare",
            tooltip="Replay the selected session under every strategy, side by side",
        ),
        Binding(
            "d",
            "delete",
            "Delete",
            id="sessions.delete",
            tooltip="Delete the session with its archive and observations (asks first)",
        ),
    ]

    every_workspace: Reactive[bool] = reactive(False)
    """List the sessions of every workspace, not only this one's."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        current: int | None,
        workspace: str = "",
        label: Callable[[str], str] = workspace_label,
        settings: Settings | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings or Settings()
        """For each session's figures (its window and cost: :mod:`engine.figures`)."""
        self.label = label
        """How a workspace path is shown (``~/code/app``; tests pin a fixed name)."""
        self.store = store
        self.clock = clock
        self.current = current
        self.workspace = workspace
        """This workspace (the default filter); empty lists every session."""
        self.infos: dict[int, SessionInfo] = {}
        self.shown: list[SessionInfo] = []
        """The sessions listed, in order (drawn again at another width)."""
        self.figures: dict[int, SessionFigures] = {}
        """Each listed session's figures, the record ``sessions`` prints."""

    def compose(self) -> ComposeResult:
        yield Label("", id="sessions-title")
        table: DataTable[str | Text] = DataTable(
            id="sessions-table", cursor_type="row", zebra_stripes=True
        )
        table.add_columns(*COLUMNS)
        yield table
        yield Static("", id="sessions-preview")
        yield KeyBar()

    def watch_every_workspace(self) -> None:
        which = "all workspaces" if self.every_workspace or not self.workspace else "this workspace"
        self.query_one("#sessions-title", Label).update(
            f"Stored sessions · {which} — Enter resumes · w all/this workspace · r rename"
            " · d delete · Esc back"
        )
        if self.is_mounted:
            self.load()

    def on_mount(self) -> None:
        self.watch_every_workspace()
        self.load()

    def load(self) -> None:
        self.query_one(DataTable).loading = True
        self.load_worker(None if self.every_workspace else self.workspace or None)

    @work(thread=True, exclusive=True, group="sessions", exit_on_error=False)
    def load_worker(self, workspace: str | None) -> list[SessionInfo]:
        try:
            infos = self.store.list_sessions()
            if workspace is not None:
                infos = [i for i in infos if i.session.workspace == workspace]
            self.figures = {
                i.session.id: session_figures(self.store, i.session, self.settings)
                for i in infos
                if i.session.id is not None
            }
            return by_last_active(infos, self.figures)  # as `sessions` lists them
        finally:
            self.store.db.close()

    @work(thread=True, exclusive=True, group="preview", exit_on_error=False)
    def preview_worker(self, session_id: int) -> str:
        try:
            return session_preview(self.store, self.infos[session_id], self.label)
        finally:
            self.store.db.close()

    def show(self, infos: list[SessionInfo]) -> None:
        table = self.query_one("#sessions-table", DataTable)
        table.loading = False
        self.shown = infos
        self.infos = {i.session.id: i for i in infos if i.session.id is not None}
        if not infos:
            self.query_one("#sessions-preview", Static).update(
                "No stored session here yet" + ("" if self.every_workspace else " (w: all)")
            )
        self._fill(table)
        table.focus()

    def _fill(self, table: DataTable[str | Text]) -> None:
        """The rows of :attr:`shown`, the title as wide as the table leaves it."""
        now = self.clock()
        rows = []
        for info in self.shown:
            s = info.session
            fig = self.figures[s.id or 0]  # made with the list, for every session in it
            rows.append(
                [
                    "●" if s.id == self.current else "",
                    str(s.id),
                    s.title or "(untitled)",
                    # the session's own last round (a recording's as recorded, not its import)
                    _last_active(info, fig, now),
                    _context(fig),
                    fig.cost_text,
                    str(info.compactions),
                    str(info.rounds),
                    folder_name(s.workspace),
                ]
            )
        width = title_width(table.size.width or self.size.width, rows)
        selected = self._selected_id()
        table.clear()
        for row in rows:
            row[TITLE] = one_line(display_safe(row[TITLE], one_line=True), width)
            table.add_row(*_cells(row), key=row[1])
        keys = [row[1] for row in rows]
        if str(selected) in keys:  # the same session stays selected, wherever it moved
            table.move_cursor(row=keys.index(str(selected)))

    def on_resize(self) -> None:
        if self.shown:
            self._fill(self.query_one("#sessions-table", DataTable))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group not in ("sessions", "preview"):
            return
        if worker.group == "preview" and event.state == WorkerState.SUCCESS:
            self.query_one("#sessions-preview", Static).update(plain(worker.result or ""))
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

    def _selected_id(self) -> int | None:
        table = self.query_one("#sessions-table", DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return None if key.value is None else int(key.value)

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.preview_worker(int(event.row_key.value))

    def action_toggle_workspaces(self) -> None:
        self.every_workspace = not self.every_workspace

    def action_rename(self) -> None:
        session_id = self._selected_id()
        if session_id is None:
            return

        def renamed(title: str | None) -> None:
            if title is None:
                return
            self.store.update_session(session_id, title=title)
            self.load()

        title = self.infos[session_id].session.title
        self.app.push_screen(RenameModal(session_id, title), renamed)

    def action_compare(self) -> None:
        from tui.screens.compare_screen import CompareScreen

        session_id = self._selected_id()
        info = self.infos.get(session_id) if session_id is not None else None
        if info is None or session_id is None:
            return
        settings = getattr(self.app, "settings", None)
        if settings is None:
            return
        # A session recorded elsewhere and not given a folder: the replay reads no CODE_LAW.md.
        workspace = session_workspace(info.session) or NO_FOLDER
        settings = session_settings(settings, info.session)  # the session's own numbers
        self.app.push_screen(CompareScreen(self.store, session_id, settings, workspace))

    def action_delete(self) -> None:
        session_id = self._selected_id()
        if session_id is None:
            return
        if session_id == self.current:
            self.notify(
                "This is the open session: switch to another one (or Ctrl+N) to delete it.",
                title="Not deleted",
                severity="warning",
            )
            return
        info = self.infos[session_id]

        def answered(delete: bool | None) -> None:
            if delete:
                try:
                    self.store.delete_session(session_id)
                except SessionBusy as busy:  # another process writes it now
                    self.notify(str(busy), title="Not deleted", severity="warning")
                    return
                self.notify(f"Session #{session_id} deleted.", title="Sessions")
                self.load()

        self.app.push_screen(DeleteModal(session_id, info.session.title, info.rounds), answered)


COLUMNS = ("", "ID", "Title", "Last active", "Context", "Cost", "Comp.", "Rounds", "Workspace")
TITLE, WORKSPACE = COLUMNS.index("Title"), COLUMNS.index("Workspace")
FIGURES = {COLUMNS.index(c) for c in ("ID", "Context", "Cost", "Comp.", "Rounds")}
"""The columns of numbers, right-aligned as ``sessions`` prints them."""
SHORTEST_TITLE, LONGEST_TITLE = 16, 48


def _cells(row: list[str]) -> list[str | Text]:
    """A row's cells as the table draws them: the recording's own words (title, folder) as
    plain text, never markup; the figures right-aligned."""
    return [
        plain(c, one_line=True)
        if n in (TITLE, WORKSPACE)
        else Text(c, justify="right")
        if n in FIGURES
        else c
        for n, c in enumerate(row)
    ]


def title_width(width: int, rows: list[list[str]]) -> int:
    """The title column's width in a table ``width`` cells wide: what the other columns but
    the workspace leave, each as wide as its header or widest cell with a cell of padding
    each side (the title's own padding and the vertical scroll bar, two cells each, taken
    too), within 16-48."""
    others = sum(
        max([len(COLUMNS[n]), *(len(row[n]) for row in rows)]) + 2
        for n in range(len(COLUMNS) - 1)
        if n != TITLE
    )
    return max(SHORTEST_TITLE, min(LONGEST_TITLE, width - others - 2 - 2))


def folder_name(workspace: str) -> str:
    """The last part of a workspace's path, a Windows one's too (``D:\\oh-my-posh`` recorded
    on Windows and read here): ``oh-my-posh``."""
    if "\\" in workspace and "/" not in workspace:
        return PureWindowsPath(workspace).name or workspace
    return PurePosixPath(workspace).name or workspace


def _last_active(info: SessionInfo, fig: SessionFigures, now: datetime) -> str:
    """When the session last ran, relative to ``now``; ``–`` for a recording that says no
    time (:func:`engine.figures.session_times`)."""
    _, last = session_times(fig, info.session, info.started_at, info.last_at)
    return "–" if last is None else relative_time(last, now)


def _context(fig: SessionFigures) -> str:
    """The context at the session's last call (``–``: no call yet)."""
    return "–" if fig.context_tokens is None else f"{fig.context_tokens:,}"


def session_preview(
    store: Store,
    info: SessionInfo,
    label: Callable[[str], str] = workspace_label,
    figures: SessionFigures | None = None,
) -> str:
    """A few lines about a session: where, with what, its first and last question and its
    last answer (worker thread)."""
    s = info.session
    assert s.id is not None
    lines = [
        f"#{s.id} {s.title or '(untitled)'} · {label(s.workspace)}",
        f"{s.provider or '?'} · {s.model or '?'} · strategy {s.strategy} · "
        f"{plural(info.rounds, 'round')} · {info.current_tokens:,} tok in history"
        f" · {plural(info.compactions, 'compaction')}",
    ]
    if figures is not None:
        lines.append(f"{figures.context_line()} · {figures.cost_text}")
    rounds = store.rounds(s.id)
    if rounds:
        first = store.round_messages(s.id, rounds[0].index)
        last = store.round_messages(s.id, rounds[-1].index) if len(rounds) > 1 else first
        asked = [m for m in first if m.role == "user"]
        if asked:
            lines.append(f"first: {one_line(strip_reminders(asked[0].content), 110)}")
        if len(rounds) > 1:
            asked = [m for m in last if m.role == "user"]
            if asked:
                lines.append(f"last:  {one_line(strip_reminders(asked[0].content), 110)}")
        answers = [m for m in last if m.role == "assistant" and m.meta.final]
        if answers:
            lines.append(f"→ {one_line(answers[-1].content, 112)}")
    return "\n".join(lines)
