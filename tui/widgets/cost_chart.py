"""CostChart: dollars per day over the whole history, as bars (``textual-plotext``)."""

from __future__ import annotations

from textual_plotext import PlotextPlot

MAX_DAYS = 60
"""The last days shown (a longer history shows its most recent ones)."""


class CostChart(PlotextPlot):
    """Cost per day at list price."""

    DEFAULT_CSS = """
    CostChart { height: 1fr; min-height: 8; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.days: list[tuple[str, float | None]] = []

    def show(self, days: list[tuple[str, float | None]]) -> None:
        """Each day's cost; None for a day whose usage has no price."""
        self.days = days[-MAX_DAYS:]
        self.replot()

    def on_mount(self) -> None:
        self.replot()

    def replot(self) -> None:
        plt = self.plt
        plt.clear_figure()
        priced = [(d, c) for d, c in self.days if c is not None]
        if self.days and not any(c for _, c in priced):
            # nothing to draw: no axis (plotext's empty one runs from -1 to 1, issue 39)
            plt.title("cost per day: no priced usage (the notes say why)")
            plt.xaxes(False, False)
            plt.yaxes(False, False)
            plt.xticks([])
            plt.yticks([])
            plt.frame(False)
            self.refresh()
            return
        plt.title("cost per day ($, list price)")
        if self.days:
            # plotext labels each bar; a day as MM-DD keeps them readable
            plt.bar([d[5:] for d, _ in self.days], [round(c or 0.0, 2) for _, c in self.days])
            # room on both sides, so no label under an end bar sticks out of the chart
            plt.xlim(0, len(self.days) + 1)
        self.refresh()
