"""InspectorScreen: the exact request the next step will send (``Agent.preview()``).

Layer by layer in :data:`engine.context.builder.LAYERS` order, each a Collapsible titled with its
token count and holding the layer's text, then the raw JSON of the whole request (system
blocks, messages, tools, cache breakpoints included). Built in a thread worker: a long
session's request is megabytes of text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Collapsible, Label, Static, TextArea
from textual.worker import Worker, WorkerState

from engine.context.builder import LAYERS
from engine.messages.tokens import BudgetCheck
from tui.formatting import percent, tokens
from tui.gauge_state import Decision
from tui.text_wrap import display_safe, plain
from tui.widgets.key_bar import KeyBar

if TYPE_CHECKING:
    from engine.session import Agent


@dataclass
class Inspection:
    """What the screen shows, computed off the UI thread."""

    layers: dict[str, int]
    texts: dict[str, str]
    total: int
    raw_json: str
    budget: BudgetCheck
    warnings: list[str]
    code_law: str | None
    decision: Decision | None = None
    """The active strategy's decision for the next input (the same call the gauge uses)."""


def inspect_agent(agent: Agent) -> Inspection:
    built, budget = agent.preview_and_budget()
    idle = built if agent.current_round is None else None
    return Inspection(
        decision=Decision.of(agent.plan("", idle)),
        layers=dict(built.layers),
        texts=dict(built.layer_text),
        total=built.total,
        raw_json=json.dumps(built.request.model_dump(mode="json"), indent=2, ensure_ascii=False),
        budget=budget,
        warnings=list(built.warnings),
        code_law=built.code_law.name if built.code_law else None,
    )


def _text_area(text: str, headless: bool, classes: str) -> TextArea:
    area = TextArea(display_safe(text), read_only=True, soft_wrap=True, classes=classes)
    if headless:
        area.cursor_blink = False
    return area


class InspectorScreen(Screen[None]):
    """The context inspector."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", id="inspector.back", tooltip="Back to the session"),
        Binding("e", "expand_all", "Expand all", id="inspector.expand", tooltip="Open every layer"),
        Binding(
            "c",
            "collapse_all",
            "Collapse all",
            id="inspector.collapse",
            tooltip="Close every layer",
        ),
    ]

    def __init__(self, agent: Agent, window: int, threshold: int) -> None:
        super().__init__()
        self.agent = agent
        self.window = window
        self.threshold = threshold

    def compose(self) -> ComposeResult:
        yield Label("Context inspector — the next request, layer by layer", id="inspector-title")
        yield Static("building the request…", id="inspector-summary")
        yield VerticalScroll(id="inspector-layers")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#inspector-layers").loading = True
        self.build()

    @work(thread=True, exclusive=True, group="inspect", exit_on_error=False)
    def build(self) -> Inspection:
        try:
            return inspect_agent(self.agent)
        finally:
            self.agent.store.db.close()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group != "inspect":
            return
        if event.state == WorkerState.SUCCESS and worker.result is not None:
            self.show(worker.result)
        elif event.state == WorkerState.ERROR:
            self.query_one("#inspector-layers").loading = False
            self.notify(f"Cannot build the request: {worker.error}", severity="error")

    def show(self, ins: Inspection) -> None:
        free = max(0, self.window - ins.total)
        buffer = self.window - self.threshold
        summary = (
            f"{tokens(ins.total)} tokens ({percent(ins.total, self.window)} of "
            f"{tokens(self.window)}) · free {tokens(free)} ({percent(free, self.window)})"
            f" · compaction buffer above the threshold {tokens(buffer)}"
            f" ({percent(buffer, self.window)})"
        )
        d = ins.decision
        if d is not None:
            if d.compacts:
                verdict = "compacts before the next input"
            elif d.fires:
                verdict = f"over its threshold but will not compact: {d.reason}"
            else:
                verdict = f"{tokens(d.to_go)} until compaction"
            summary += f"\n{d.strategy}: {verdict} ({d.what} {tokens(d.value)}"
            summary += f" of {d.threshold:,.0f})"
        if ins.code_law:
            summary += f" · L2 from {ins.code_law}"
        if ins.warnings:
            summary += "\n⚠ " + "\n⚠ ".join(ins.warnings)
        self.query_one("#inspector-summary", Static).update(plain(summary))
        container = self.query_one("#inspector-layers", VerticalScroll)
        container.loading = False
        headless = self.app.is_headless
        widgets = []
        for name in LAYERS:
            text = ins.texts.get(name, "")
            count = ins.layers.get(name, 0)
            title = f"{name} · {tokens(count)} tok · {percent(count, ins.total)}"
            body = _text_area(text, headless, "layer-text") if text else Static("(empty)")
            widgets.append(Collapsible(body, title=title, collapsed=True, classes="layer"))
        raw = _text_area(ins.raw_json, headless, "raw-json")
        widgets.append(
            Collapsible(raw, title="raw JSON request", collapsed=True, id="inspector-raw")
        )
        container.mount_all(widgets)

    def action_expand_all(self) -> None:
        for item in self.query(Collapsible):
            item.collapsed = False

    def action_collapse_all(self) -> None:
        for item in self.query(Collapsible):
            item.collapsed = True

    def action_close(self) -> None:
        self.dismiss(None)
