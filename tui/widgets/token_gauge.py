"""TokenGauge: the context budget at a glance.

A stacked bar of the layers against the window with the threshold marked, a legend with each
layer's tokens, one headline figure (the next request against the window) with how far the
strategy is from compacting under it, then the details (the last call's usage, labelled by where
it came from, and the local-vs-API calibration), a sparkline of input tokens per step with
compactions marked, and the warning when the kept rounds alone exceed the threshold.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import Reactive, reactive
from textual.widgets import Static

from engine.context.builder import LAYERS
from engine.recordings.own_agent import OwnAgentView
from tui.formatting import percent, tokens
from tui.gauge_state import LAYER_COLOURS, LAYER_LABELS, SEVERITY_COLOURS, GaugeState
from tui.text_wrap import display_safe
from tui.widgets.layer_bar import LayerBar
from tui.widgets.usage_sparkline import UsageSparkline

OWN_LABELS = {
    "L1 system": "{agent}'s prompt & tools (est.)",
    "L1 tools": "tools: in the line before",
    "L3 history": "conversation",
}
"""A recorded session's layers, as far as its recording tells them apart."""
LISTED_TOOLS_LABELS = {
    "L1 system": "{agent}'s system prompt & the rest (est.)",
    "L1 tools": "its {tools} tools (recorded)",
}
"""The same where the recording lists the tools it sent (Claude Code's prompt snapshot)."""


def own_figures(state: GaugeState, own: OwnAgentView) -> Text:
    """A recorded session's figures through its own agent: its context as its last call
    reported it, ONE countdown (to its own auto-compact point), then ctxscope's strategy as a
    labelled what-if, its recorded compactions and cost."""
    colour = SEVERITY_COLOURS[state.severity]
    text = Text()
    text.append("context ", style="dim")
    if own.context_tokens is None:
        text.append("– (no API usage recorded)\n", style="dim")
    else:
        text.append(f"{own.context_tokens:,}", style=f"bold {colour}")
        # the share as every surface prints it (engine.figures), not worked out again here
        text.append(f" / {own.context_window:,} window ({own.figures.percent}%)")
        said = (
            f"its input counted by ctxscope ({own.who} records none)"
            if own.figures.context_estimated
            else f"{own.who}'s last call as recorded"
        )
        text.append(f" · {said}\n", style="dim")
    if own.compact_at is not None:
        text.append(f"{own.until_compact or 0:,} until auto-compact", style="bold")
        text.append(f" ({own.who} compacts at {own.compact_at:,})\n", style="dim")
    else:
        text.append(f"{own.who}'s auto-compact point is not known\n", style="dim")
    if state.what_if_threshold:
        strategy = state.decision.strategy if state.decision else "ctxscope's strategy"
        text.append(
            f"what-if, not what {own.who} does: ctxscope's {strategy} would compact at "
            f"{state.what_if_threshold:,}\n",
            style="dim italic",
        )
    append_usage(text, state, "none recorded")
    text.append(f"\n{own.compactions} compaction{'s' if own.compactions != 1 else ''} recorded")
    text.append(" · cost ", style="dim")
    text.append(own.cost_text, style="bold")
    if own.totals:  # a run that records its totals only: its own figures, said as its own
        text.append("\n" + display_safe(own.totals_line), style="dim")
    return text


def legend(state: GaugeState, columns: int) -> Table:
    """The layers with their swatch and tokens, in ``columns`` columns."""
    table = Table.grid(padding=(0, 2), expand=True)
    for _ in range(columns):
        table.add_column(ratio=1)
    cells: list[Text] = []
    for name in LAYERS:
        cell = Text()
        cell.append("■ ", style=LAYER_COLOURS[name])
        label = LAYER_LABELS[name]
        own = state.own
        if own is not None:
            listed = own.prompt.tools if own.prompt is not None else ()
            labels = {**OWN_LABELS, **LISTED_TOOLS_LABELS} if listed else OWN_LABELS
            label = labels.get(name, label).format(agent=own.who, tools=len(listed))
        cell.append(label, style="bold" if state.layers.get(name) else "dim")
        count = state.layers.get(name, 0)
        cell.append(f" {tokens(count)}", style="")
        if count:
            cell.append(f" {percent(count, state.context_window)}", style="dim")
        cells.append(cell)
    free = Text()
    free.append("□ ", style="dim")
    free.append(f"free {tokens(state.free)} {percent(state.free, state.context_window)}")
    cells.append(free)
    buffer = Text()
    buffer.append("┃ ", style="red")
    buffer.append(
        f"{'auto-compact buffer' if state.own else 'buffer'} {tokens(state.buffer)} "
        f"{percent(state.buffer, state.context_window)}",
        style="dim",
    )
    cells.append(buffer)
    if state.thinking:
        thinking = Text()
        thinking.append("◇ ", style="dim")
        thinking.append(f"thinking {tokens(state.thinking)} kept, not re-sent", style="dim")
        cells.append(thinking)
    for i in range(0, len(cells), columns):
        row = cells[i : i + columns]
        table.add_row(*row, *([Text()] * (columns - len(row))))
    return table


def heaviest(state: GaugeState) -> Content:
    """The heaviest history items, each a link to it in the history pane."""
    if not state.heaviest or not state.total:
        return Content("")
    parts: list[Content | str] = [Content.styled("heaviest ", "dim")]
    for n, item in enumerate(state.heaviest):
        if n:
            parts.append(" · ")
        share = percent(item.tokens, state.total)
        parts.append(
            Content.from_markup(
                f"[@click=screen.jump_to('{item.key}')]$label[/] $tokens tok = $share",
                label=display_safe(item.label, one_line=True),  # a variable: never markup
                tokens=tokens(item.tokens),
                share=share,
            )
        )
    return Content.assemble(*parts)


def usage_label(state: GaugeState) -> str:
    """What the last call's figures are, in words."""
    if state.usage_source == "import":
        return "last call, as recorded by the original agent "
    if state.offline or state.usage_source == "local":
        return "last call (offline provider: ctxscope's local count) "
    return "last API call "


def append_usage(text: Text, state: GaugeState, none: str) -> None:
    """The last call's usage, labelled by where it came from (``none`` when there is none)."""
    usage = state.last_usage
    text.append(usage_label(state), style="dim")
    if usage is None:
        text.append(none, style="dim")
    else:
        text.append(
            f"in {tokens(usage.input_tokens)} · out {tokens(usage.output_tokens)}"
            f" · cache read {tokens(usage.cache_read_input_tokens)}"
            f" · cache write {tokens(usage.cache_creation_input_tokens)}"
        )


def figures(state: GaugeState) -> Text:
    """One headline figure, the next request against the window; under it how far the
    strategy is from compacting; then the details, each labelled by what it is."""
    if state.own is not None:
        return own_figures(state, state.own)
    colour = SEVERITY_COLOURS[state.severity]
    text = Text()
    preview = state.layers_source.startswith("next request")
    text.append("next request " if preview else f"{state.layers_source}: ", style="dim")
    text.append(f"{tokens(state.total)}", style=f"bold {colour}")
    text.append(
        f" / {tokens(state.context_window)} window ({percent(state.total, state.context_window)})\n"
    )
    decision = state.decision
    if decision is not None:
        if decision.compacts:
            text.append("→ compacts before the next request", style="bold red")
            text.append(f" ({decision.strategy}: {decision.measured})", style="dim")
        elif decision.fires:
            text.append("over the threshold, will not compact (see ⚠)", style="bold yellow")
        else:
            text.append(f"{tokens(decision.to_go)} until compaction", style="bold")
            text.append(
                f" ({decision.strategy} measures {decision.what}:"
                f" {tokens(decision.value)} of {decision.threshold:,.0f})",
                style="dim",
            )
        text.append("\n")
    append_usage(text, state, "none since the last compaction or start")
    calibration = state.calibration
    text.append("\ncalibration (API input ÷ local count of the same request) ", style="dim")
    if state.usage_source == "local" or (state.offline and state.usage_source != "import"):
        text.append("– offline: no API count to compare with", style="dim")
    elif calibration is None:
        text.append("– (no API usage yet)", style="dim")
    else:
        text.append(f"{calibration:.2f}")
    return text


class TokenGauge(Vertical):
    """The gauge pane's content."""

    state: Reactive[GaugeState | None] = reactive[GaugeState | None](None)
    """Everything the gauge shows; replace it to redraw."""

    _columns = 2
    """The legend's columns as last drawn."""

    def compose(self) -> ComposeResult:
        yield LayerBar(id="gauge-bar")
        yield Static(id="gauge-legend")
        yield Static(id="gauge-figures")
        yield Static(id="gauge-heaviest")
        yield UsageSparkline(id="gauge-sparkline")
        yield Static(id="gauge-warning")

    def watch_state(self, state: GaugeState | None) -> None:
        if state is None or not self.is_mounted:
            return
        self.query_one(LayerBar).state = state
        self.query_one(UsageSparkline).state = state
        self._columns = self.legend_columns()
        self.query_one("#gauge-legend", Static).update(legend(state, self._columns))
        self.query_one("#gauge-figures", Static).update(figures(state))
        self.query_one("#gauge-heaviest", Static).update(heaviest(state))
        warning = self.query_one("#gauge-warning", Static)
        warning.update(
            Text("⚠ " + display_safe(state.warning), style="bold red") if state.warning else ""
        )
        warning.display = bool(state.warning)

    def legend_columns(self) -> int:
        """The legend's columns at the gauge's width: 4 where they fit, else 2."""
        return 4 if self.size.width >= 96 else 2

    def on_mount(self) -> None:
        self.watch_state(self.state)

    def on_resize(self) -> None:
        # The state may come before the pane's first layout (its width 0 then: two columns),
        # or the terminal may widen or narrow past the point where four fit.
        if self.state is not None and self.legend_columns() != self._columns:
            self.watch_state(self.state)
