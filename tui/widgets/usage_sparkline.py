"""UsageSparkline: input tokens of every API call of the session, compactions marked.

One bar per step (the newest that fit), scaled to the context window so the threshold is a
fixed height; each bar is coloured green / yellow / red by how near it came to the threshold,
and a ``✂`` under the bars shows where a compaction fell between two steps.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import Reactive, reactive
from textual.widget import Widget

from tui.formatting import short_tokens
from tui.gauge_state import SEVERITY_COLOURS, GaugeState, severity

BARS = " ▁▂▃▄▅▆▇█"


class UsageSparkline(Widget):
    """Three rows: bars, compaction marks (under the step before), and a caption."""

    DEFAULT_CSS = """
    UsageSparkline { height: 3; }
    """

    state: Reactive[GaugeState | None] = reactive[GaugeState | None](None)
    """The figures drawn; set by the gauge."""

    def render(self) -> Text:
        state = self.state
        width = max(10, self.size.width)
        if state is None or not state.steps:
            return Text("no API calls yet in this session", style="dim")
        steps = state.steps
        shown = steps[-width:]
        first = len(steps) - len(shown)
        scale = max(state.threshold, max(shown)) or 1
        bars = Text()
        for value in shown:
            level = min(len(BARS) - 1, max(1, round(value / scale * (len(BARS) - 1))))
            colour = SEVERITY_COLOURS[severity(value, state.threshold)]
            bars.append(BARS[level], style=colour)
        marks = [" "] * len(shown)
        for at in state.compactions_at:
            # ``at`` steps preceded the compaction: mark the last of them.
            pos = at - 1 - first
            if 0 <= pos < len(shown):
                marks[pos] = "✂"
        bars.append("\n")
        bars.append("".join(marks), style="bold magenta")
        bars.append("\n")
        caption = (
            (f"step {first + 1}" if len(steps) == first + 1 else f"steps {first + 1}–{len(steps)}")
            + f" · last {short_tokens(steps[-1])}"
            f" · peak {short_tokens(max(steps))} · ✂ compaction after the step"
        )
        bars.append(caption[:width], style="dim")
        return bars
