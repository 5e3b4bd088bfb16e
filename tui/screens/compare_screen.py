"""CompareScreen: one stored session replayed under every strategy, side by side.

A thread worker runs :func:`engine.replay.runner.replay` for each strategy (the session itself is
only
read), reporting progress; then the chart (:class:`~tui.widgets.replay_chart.ReplayChart`)
shows request tokens per step for all of them and the table beneath one row per strategy (a
recording's own requests first, ``as-recorded``): steps, compactions, peak, input, cost, and on
a wide screen the artifact ledger's recall at the last step (files read and changed, commands,
errors, requests). A row that did not play every step is marked, and every row is then compared
on the steps all played. ←/→ move the
selected step; Enter opens the request the highlighted strategy would have sent at that step in
the context inspector (replayed again up to that step, in a worker).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Label, Static
from textual.worker import Worker, WorkerState, get_current_worker

from engine.compaction.strategies import STRATEGIES
from engine.recordings.own_agent import own_agent_view
from engine.replay.as_recorded import as_recorded
from engine.replay.parallel import ReplayCancelled, default_jobs, replay_strategies
from engine.replay.runner import ReplayResult, compared_steps, replay
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store
from engine.terminal_text import printable
from tui.formatting import tokens
from tui.screens.inspector_screen import Inspection, InspectorScreen, inspect_agent
from tui.widgets.key_bar import KeyBar
from tui.widgets.replay_chart import ReplayChart

RECALL_COLUMNS = (("file_read", "read"), ("file_changed", "edit"), ("command", "cmd"),
                  ("error", "err"), ("request", "ask"))  # fmt: skip
"""Ledger kinds shown in the table, with their short headers (decisions are in --json)."""

WIDE_ENOUGH_FOR_RECALL = 110
"""Columns the screen needs for the recall column beside the others (narrower: in --json)."""


def _recall(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


class ReplayInspectorScreen(InspectorScreen):
    """The context inspector over a request a replay would have sent (computed already)."""

    def __init__(self, inspection: Inspection, title: str, window: int, threshold: int) -> None:
        super().__init__(None, window, threshold)  # type: ignore[arg-type]
        self.inspection = inspection
        self.title_text = title

    def on_mount(self) -> None:
        self.query_one("#inspector-title", Label).update(self.title_text)
        self.show(self.inspection)

    def build(self) -> Inspection:  # type: ignore[override]
        return self.inspection


class CompareScreen(Screen[None]):
    """Every strategy's replay of one session: chart, table, and the request at a step."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", id="compare.back", tooltip="Back to the session"),
        Binding(
            "enter",
            "open_request",
            "Open request",
            id="compare.open",
            tooltip="The request the highlighted strategy would have sent at the selected step",
            priority=True,
        ),
        Binding(
            "left",
            "step(-1)",
            "Step −1",
            id="compare.prev",
            tooltip="Select the step before",
            priority=True,
        ),
        Binding(
            "right",
            "step(1)",
            "Step +1",
            id="compare.next",
            tooltip="Select the next step",
            priority=True,
        ),
        Binding(
            "shift+left",
            "step(-50)",
            "−50",
            show=False,
            id="compare.prev50",
            tooltip="Select the step 50 before",
            priority=True,
        ),
        Binding(
            "shift+right",
            "step(50)",
            "+50",
            show=False,
            id="compare.next50",
            tooltip="Select the step 50 after",
            priority=True,
        ),
    ]

    @dataclass
    class ReplayProgressed(Message):
        """A strategy's replay reached a step."""

        strategy: str
        step: int
        total: int

        def can_replace(self, message: Message) -> bool:
            """A newer step of the same strategy's replay replaces it (several run at once)."""
            return (
                isinstance(message, CompareScreen.ReplayProgressed)
                and message.strategy == self.strategy
            )

    def __init__(self, store: Store, session_id: int, settings: Settings, workspace: Path) -> None:
        super().__init__()
        self.store = store
        self.session_id = session_id
        self.settings = settings
        self.workspace = workspace
        self.results: list[ReplayResult] = []
        self.selected = 0
        self.progress: dict[str, tuple[int, int]] = {}
        """Each strategy's replay: (step, of steps)."""

    def compose(self) -> ComposeResult:
        yield Label(
            f"Replay and compare · session {self.session_id} under every strategy — "
            "←/→ step · Enter opens the request · Esc back",
            id="compare-title",
        )
        yield ReplayChart(self.settings.context_window, id="compare-chart")
        yield Static("replaying…", id="compare-status")
        yield DataTable(id="compare-table", cursor_type="row")
        note = Static(id="compare-note")
        note.display = False
        yield note
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one(DataTable).loading = True
        self.run_replays()

    @work(thread=True, exclusive=True, group="replay", exit_on_error=False)
    def run_replays(self) -> list[ReplayResult] | None:
        """Every strategy's replay, one process per core (:mod:`engine.replay.parallel`);
        closing the screen stops them."""
        worker = get_current_worker()
        names = list(STRATEGIES)

        def progress(name: str, step: int, total: int) -> None:
            if step % 20 == 0 or step == total:
                self.post_message(self.ReplayProgressed(name, step, total))

        try:
            recorded = self._as_recorded()
        finally:
            self.store.db.close()
        try:
            results = replay_strategies(
                self.store.url or self.store.path.resolve(),
                self.session_id,
                names,
                self.settings,
                self.workspace,
                jobs=default_jobs(len(names)),
                on_step=progress,
                cancelled=lambda: worker.is_cancelled,
            )
        except ReplayCancelled:
            return None
        return results if recorded is None else [recorded, *results]

    def _as_recorded(self) -> ReplayResult | None:
        """A recording's own requests, in its agent's window, as the first row (what really
        happened, beside what each strategy would have sent); None for ctxscope's sessions."""
        session = self.store.get_session(self.session_id)
        own = own_agent_view(self.store, session, self.settings)
        if own is None:
            return None
        return as_recorded(self.store, self.session_id, self.settings, own.context_window)

    @on(ReplayProgressed)
    def _progressed(self, event: ReplayProgressed) -> None:
        """Every replay still running, with its step (several run at once)."""
        self.progress[event.strategy] = (event.step, event.total)
        running = [
            f"{name} {step:,}/{total:,}"
            for name, (step, total) in self.progress.items()
            if step < total
        ]
        done = len(self.progress) - len(running)
        self.query_one("#compare-status", Static).update(
            f"replaying: {' · '.join(running) or '…'} (steps; {done} of {len(STRATEGIES)} done)"
        )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state == WorkerState.ERROR:
            self.query_one(DataTable).loading = False
            self.notify(f"Replay failed: {worker.error}", severity="error")
            return
        if event.state != WorkerState.SUCCESS:
            return
        if worker.group == "replay" and worker.result is not None:
            self.show(worker.result)
        elif worker.group == "replay-step" and worker.result is not None:
            inspection, title = worker.result
            settings = self.settings
            self.app.push_screen(
                ReplayInspectorScreen(
                    inspection, title, settings.context_window, settings.threshold_tokens
                )
            )

    def show(self, results: list[ReplayResult]) -> None:
        self.results = results
        self.selected = max((len(r.steps) for r in results), default=0)
        self._fill_table()
        unpriced = next((r for r in results if r.cost is None), None)
        if unpriced is not None:  # the cost column shows "–": say why
            note = self.query_one("#compare-note", Static)
            note.update(Text(printable(unpriced.price_note, one_line=True)))
            note.display = True
        for r in results:
            for stop in r.stops:  # a round it could not play to its end: where and why
                said = stop.describe(r.strategy, r.total_steps)
                self.notify(said, title="Replay stopped", severity="warning", timeout=20)
        self._redraw()

    def _fill_table(self) -> None:
        """One row per replay, as wide as the screen holds (issue 39: the table was cut at
        the right edge at 80 and 120 columns): the recall column only where it fits. A row
        that did not play every step is marked (``115 of 153*``), and every row is then
        compared on the steps all played, never on totals of different lengths."""
        table = self.query_one(DataTable)
        table.loading = False
        table.clear(columns=True)
        upto = compared_steps(self.results)
        over = "" if upto is None else f" 1–{upto:,}"
        with_recall = self.size.width >= WIDE_ENOUGH_FOR_RECALL
        table.add_columns(
            "strategy", "steps", "comp.", "peak", f"input{over}", f"cost{over}",
            *(["recall last " + "·".join(h for _, h in RECALL_COLUMNS)] if with_recall else []),
        )  # fmt: skip
        for r in self.results:
            row = r.row()
            figures = row if upto is None else r.up_to(upto)
            steps = f"{row['steps']:,}" if r.complete else f"{row['steps']:,} of {r.total_steps:,}*"
            last = row["recall_last"]
            recall = "·".join(
                _recall(last.get(kind)).removesuffix("%") for kind, _ in RECALL_COLUMNS
            )
            table.add_row(
                r.strategy,
                steps,
                str(row["compactions"]),
                tokens(row["peak"]),
                tokens(figures["total_input"]),
                "–" if figures["cost"] is None else f"${figures['cost']:.2f}",
                *([recall] if with_recall else []),
                key=r.strategy,
            )

    def on_resize(self) -> None:
        if self.results:
            self._fill_table()

    def _redraw(self) -> None:
        self.query_one(ReplayChart).show(self.results, self.selected)
        figures = []
        for r in self.results:
            if 0 < self.selected <= len(r.steps):
                figures.append(f"{r.strategy} {tokens(r.steps[self.selected - 1].tokens)}")
        self.query_one("#compare-status", Static).update(
            f"step {self.selected:,}: " + " · ".join(figures) if figures else "no recorded calls"
        )

    def action_step(self, delta: int) -> None:
        if not self.results:
            return
        steps = max(len(r.steps) for r in self.results)
        self.selected = min(max(1, self.selected + delta), steps)
        self._redraw()

    def action_open_request(self) -> None:
        table = self.query_one(DataTable)
        if not self.results or table.row_count == 0:
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        if key is not None and self.selected > 0:
            self.notify(f"Replaying {key} to step {self.selected:,}…")
            self.request_at(key, self.selected)

    @work(thread=True, exclusive=True, group="replay-step", exit_on_error=False)
    def request_at(self, strategy: str, step: int) -> tuple[Inspection, str]:
        found: list[Inspection] = []

        def at_step(number: int, agent: Agent) -> bool:
            if number == step:
                found.append(inspect_agent(agent))
                return True
            return False

        try:
            replay(self.store, self.session_id, strategy, self.settings, self.workspace,
                   at_step=at_step)  # fmt: skip
        finally:
            self.store.db.close()
        if not found:
            raise ValueError(f"{strategy} sent no request at step {step}")
        title = f"Replay · {strategy} · the request of step {step:,} (session {self.session_id})"
        return found[0], title

    def action_close(self) -> None:
        self.dismiss(None)
