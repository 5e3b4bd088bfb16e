"""KeptChart: what the summaries of every recorded compaction kept, per kind, as bars of the
percent kept (the fidelity ledger summed over the compactions; ``textual-plotext``)."""

from __future__ import annotations

from typing import Any

from textual_plotext import PlotextPlot

SHORT = {
    "file_read": "read",
    "file_changed": "changed",
    "command": "cmds",
    "error": "errors",
    "request": "asks",
    "decision": "decided",
}
"""The bars' labels: short, so that plotext has room for every one under its bar."""


class KeptChart(PlotextPlot):
    """Percent kept of each ledger kind across compactions."""

    DEFAULT_CSS = """
    KeptChart { height: 1fr; min-height: 8; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.kept: dict[str, dict[str, Any]] = {}
        self.count = 0

    def show(self, kept: dict[str, dict[str, Any]], count: int) -> None:
        self.kept = {k: v for k, v in kept.items() if v.get("total")}
        self.count = count
        self.replot()

    def on_mount(self) -> None:
        self.replot()

    def replot(self) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.title(f"what {self.count} compaction summaries kept (%)")
        if self.kept:
            plt.bar(
                [SHORT.get(k, k) for k in self.kept],
                [float(v["percent"]) for v in self.kept.values()],
            )
            plt.ylim(0, 100)
            # room on both sides, so no label under an end bar sticks out of the chart
            plt.xlim(0, len(self.kept) + 1)
        self.refresh()
