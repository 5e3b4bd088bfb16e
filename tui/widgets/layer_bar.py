"""LayerBar: the request's layers as one stacked bar against the context window.

Each layer of :data:`engine.context.builder.LAYERS` takes cells in proportion to its tokens; the
rest
of the window is shaded; the compaction threshold (80 % by default) is a marker over the bar,
and the scale below names it.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import Reactive, reactive
from textual.widget import Widget

from engine.context.builder import LAYERS
from tui.formatting import short_tokens
from tui.gauge_state import LAYER_COLOURS, SEVERITY_COLOURS, GaugeState


def bar_cells(layers: dict[str, int], window: int, width: int) -> list[tuple[str, int]]:
    """``(layer, cells)`` for each layer, cumulative rounding so the cells add up exactly."""
    out: list[tuple[str, int]] = []
    running = 0
    used = 0
    for name in LAYERS:
        running += layers.get(name, 0)
        end = min(width, round(running / window * width)) if window else 0
        out.append((name, max(0, end - used)))
        used = max(used, end)
    return out


class LayerBar(Widget):
    """Two rows: the stacked bar with the threshold marker, and its scale."""

    DEFAULT_CSS = """
    LayerBar { height: 2; }
    """

    state: Reactive[GaugeState | None] = reactive[GaugeState | None](None)
    """The figures drawn; set by the gauge."""

    def render(self) -> Text:
        state = self.state
        width = max(10, self.size.width)
        if state is None:
            return Text("measuring the context…", style="dim")
        window = state.context_window
        cells = bar_cells(state.layers, window, width)
        chars: list[tuple[str, str]] = []
        for name, n in cells:
            chars.extend(("█", LAYER_COLOURS[name]) for _ in range(n))
        chars.extend(("░", "grey35") for _ in range(width - len(chars)))
        mark = min(width - 1, round(state.threshold / window * width)) if window else width - 1
        colour = SEVERITY_COLOURS[state.severity]
        chars[mark] = ("┃", f"bold {colour}")
        bar = Text()
        for char, style in chars:
            bar.append(char, style)
        scale = [" "] * width
        left = "0"
        right = short_tokens(window)
        pct = f"{round(100 * state.threshold / window) if window else 0}% threshold"
        if state.own is not None and state.own.compact_at is not None:
            pct = f"auto-compact {short_tokens(state.threshold)}"  # the agent's own trigger
        label = f"▲ {pct}"
        start = mark
        if mark + len(label) > width - len(right) - 1:
            label = f"{pct} ▲"
            start = mark - len(label) + 1
        for i, c in enumerate(left):
            scale[i] = c
        for i, c in enumerate(label):
            if 0 <= start + i < width:
                scale[start + i] = c
        if start + len(label) < width - len(right) - 1:  # else the mark's label says more
            for i, c in enumerate(right):
                scale[width - len(right) + i] = c
        bar.append("\n")
        bar.append("".join(scale), style="dim")
        return bar
