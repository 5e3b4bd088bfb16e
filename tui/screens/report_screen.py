"""ReportScreen: the report card of every stored session (``ctxscope report`` in the
workbench): the totals, cost per day and what the compactions' summaries kept as charts, and
every compaction in a table, the ones that lost the most first; Enter opens its session.

The report is built in a thread worker (:func:`engine.report.build_report`); the screen returns
the session to open (or None).
"""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Label, Static
from textual.worker import Worker, WorkerState

from engine.compaction.ledger import KIND_NAMES
from engine.report import Report, build_report
from engine.settings.config import Settings
from engine.store import Store
from engine.terminal_text import plural, printable
from tui.formatting import one_line
from tui.widgets.cost_chart import CostChart
from tui.widgets.kept_chart import KeptChart
from tui.widgets.key_bar import KeyBar


def _dollars(value: float | None) -> str:
    return "no price" if value is None else f"${value:,.2f}"


class ReportScreen(Screen[int | None]):
    """Usage, cost and compactions across every session."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", id="report.back", tooltip="Back to the session"),
        Binding(
            "enter",
            "open_session",
            "Open session",
            id="report.open",
            tooltip="Open the session of the compaction under the cursor",
            show=False,  # the table's own Enter (a row selected) does it when it has the focus
        ),
    ]

    def __init__(self, store: Store, settings: Settings) -> None:
        super().__init__()
        self.store = store
        self.settings = settings
        self.report: Report | None = None
        self.rows: list[int] = []
        """The session of each table row."""

    def compose(self) -> ComposeResult:
        yield Label(
            "Report · every stored session — Enter opens a session · Esc back", id="report-title"
        )
        yield Static("reading…", id="report-totals")
        with Horizontal(id="report-charts"):
            yield CostChart(id="report-cost")
            yield KeptChart(id="report-kept")
        table: DataTable[str] = DataTable(id="report-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("session", "trigger", "pre tokens", "min in", "lost", "kept", "title")
        yield table
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one(DataTable).loading = True
        self.build()

    @work(thread=True, exclusive=True, group="report", exit_on_error=False)
    def build(self) -> Report:
        return build_report(self.store, self.settings, by="day")

    @on(Worker.StateChanged)
    def _built(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "report":
            return
        table = self.query_one(DataTable)
        if event.state == WorkerState.ERROR:
            table.loading = False
            self.query_one("#report-totals", Static).update(
                f"cannot build the report: {event.worker.error}"
            )
        elif event.state == WorkerState.SUCCESS and isinstance(event.worker.result, Report):
            table.loading = False
            self.show(event.worker.result)

    def show(self, report: Report) -> None:
        self.report = report
        t = report.totals
        comps = report.compactions
        auto = sum(1 for c in comps if c.facts.trigger == "auto")
        self.query_one("#report-totals", Static).update(
            f"{plural(len(report.sessions), 'session')} "
            f"({plural(len(report.subagents), 'subagent')}) · "
            f"{t.requests:,} requests · {_dollars(t.total_cost)} · input {t.tokens['input']:,} · "
            f"output {t.tokens['output']:,} · cache read {t.tokens['cache_read']:,} · "
            f"writes 5m {t.tokens['cache_write_5m']:,} / 1h {t.tokens['cache_write_1h']:,} · "
            f"{plural(len(comps), 'compaction')} ({auto} auto)"
        )
        self.query_one(CostChart).show(
            [(day, fig.total_cost) for day, fig in report.groups.items()]
        )
        self.query_one(KeptChart).show(report.kept_overall(), len(comps))
        table = self.query_one(DataTable)
        table.clear()
        self.rows = []
        ranked = sorted(comps, key=lambda c: (-c.lost, -c.pre_tokens, c.facts.id))
        for c in ranked:
            kept = " · ".join(
                f"{KIND_NAMES.get(k, k)} {v['kept']}/{v['total']}"
                for k, v in c.kept.items()
                if v["total"]
            )
            minutes = "" if c.after_start_minutes is None else f"{c.after_start_minutes:,.0f}"
            table.add_row(
                str(c.facts.session_id),
                c.facts.trigger,
                f"{c.pre_tokens:,}",
                minutes,
                str(c.lost),
                one_line(kept, 60),
                one_line(printable(c.session.title if c.session else "", one_line=True), 40),
            )
            self.rows.append(c.facts.session_id)
        table.focus()

    @on(DataTable.RowSelected, "#report-table")
    def _row_selected(self) -> None:
        self.action_open_session()

    def action_open_session(self) -> None:
        table = self.query_one(DataTable)
        if self.rows and 0 <= table.cursor_row < len(self.rows):
            self.dismiss(self.rows[table.cursor_row])

    def action_close(self) -> None:
        self.dismiss(None)
