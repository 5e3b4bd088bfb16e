"""ReplayChart: request tokens per step for each replayed strategy, on one plotext chart.

Each strategy is a line; its compactions are marked (``x``) at the step they came before; the
context window and each strategy's token threshold are horizontal lines when they are within the
data's range (the axis fits the data; a window far above it is named in the title); the
selected step is a vertical line. Drawn with ``textual-plotext`` (plotext inside a Textual widget).
"""

from __future__ import annotations

from collections.abc import Sequence

from textual_plotext import PlotextPlot

from engine.replay.runner import ReplayResult

COLORS = ("cyan", "magenta", "green", "orange", "blue", "red")
"""One colour per strategy, in :data:`engine.compaction.strategies.STRATEGIES` order."""


class ReplayChart(PlotextPlot):
    """Tokens per step of several replays of one session."""

    DEFAULT_CSS = """
    ReplayChart { height: 1fr; min-height: 10; }
    """

    def __init__(self, window: int, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.window = window
        self.results: Sequence[ReplayResult] = ()
        self.selected = 0

    def show(self, results: Sequence[ReplayResult], selected: int) -> None:
        self.results = results
        self.selected = selected
        self.replot()

    def on_mount(self) -> None:
        self.replot()

    def replot(self) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.xlabel("step")
        if not self.results:
            plt.title("request tokens per step")
            self.refresh()
            return
        steps = max(len(r.steps) for r in self.results)
        # the axis fits the data: a window far above it would flatten every line (issue 39:
        # 210,000 for data under 30,000); a line above the data is named in the title instead
        peak = max((s.tokens for r in self.results for s in r.steps), default=0)
        top = max(peak, 1) * 1.05
        window_shown = self.window <= top * 1.2
        if window_shown:
            top = max(top, self.window * 1.05)
            said = "dashed: window, thresholds"
        else:
            said = f"dashed: thresholds; the {self.window:,}-token window is above"
        plt.title(f"request tokens per step (x: compaction; {said})")
        for n, result in enumerate(self.results):
            color = COLORS[n % len(COLORS)]
            xs = [s.step for s in result.steps]
            plt.plot(xs, [s.tokens for s in result.steps], label=result.strategy, color=color)
            marks = [s for s in result.steps if s.compactions]
            if marks:
                plt.scatter(
                    [s.step for s in marks], [s.tokens for s in marks], marker="x", color=color
                )
            if result.threshold is not None and result.threshold < min(self.window, top):
                plt.horizontal_line(result.threshold, color=color)
        if window_shown:
            plt.horizontal_line(self.window, color="white")
        if 0 < self.selected <= steps:
            plt.vertical_line(self.selected, color="yellow")
        plt.xlim(1, max(2, steps))
        plt.ylim(0, top)
        self.refresh()
