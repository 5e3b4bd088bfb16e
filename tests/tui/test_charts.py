"""The charts' axes fit what they show (issue 39): F9's tokens per step ran to 210,000 for data
under 30,000 (the axis was the window's), and F11's cost per day, with no priced usage, drew a
cost axis from −1.00 to 1.00 $. Read from the chart's own text (plotext's build), y ticks and
all."""

from __future__ import annotations

import re

import pytest
from textual.app import App, ComposeResult

from engine.replay.cache_model import CacheUse
from engine.replay.runner import ReplayResult, StepFigures
from tui.widgets.cost_chart import CostChart
from tui.widgets.replay_chart import ReplayChart

pytestmark = pytest.mark.anyio

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def y_ticks(chart_text: str) -> list[float]:
    """The numbers plotext writes left of the y axis (``  35000┤``)."""
    plain = ANSI.sub("", chart_text)
    return [float(m) for m in re.findall(r"^\s*(-?[\d.]+)┤", plain, flags=re.MULTILINE)]


def steps(*tokens: int) -> list[StepFigures]:
    return [
        StepFigures(step=n, round=1, tokens=t, cache=CacheUse(0, 0, t), output=10, cost=None)
        for n, t in enumerate(tokens, start=1)
    ]


class One(App[None]):
    def __init__(self, chart: ReplayChart | CostChart) -> None:
        super().__init__()
        self.chart = chart

    def compose(self) -> ComposeResult:
        yield self.chart


async def test_the_replay_chart_fits_its_data_not_a_far_window() -> None:
    """Two replays peaking at 29,000 tokens in a 200,000-token window: the axis tops out
    near 29,000 (within 10 % over it), and the window is named in the title instead."""
    chart = ReplayChart(200_000)
    async with One(chart).run_test(size=(100, 30)) as pilot:
        chart.show(
            [
                ReplayResult("layered", steps(1_000, 25_000, 29_000)),
                ReplayResult("masking", steps(1_000, 12_000, 14_000)),
            ],
            2,
        )
        await pilot.pause()
        text = chart.plt.build()
    ticks = y_ticks(text)
    assert ticks and 29_000 <= max(ticks) <= 29_000 * 1.1
    assert "200,000-token window" in ANSI.sub("", text)


async def test_a_cost_chart_without_prices_draws_no_cost_axis() -> None:
    """Days whose usage has no price (cost None): no bars, no axis from −1 to 1; the title says
    why."""
    chart = CostChart()
    async with One(chart).run_test(size=(100, 20)) as pilot:
        chart.show([("2026-01-01", None), ("2026-01-02", None)])
        await pilot.pause()
        text = ANSI.sub("", chart.plt.build())
    assert y_ticks(text) == []
    assert "-1.00" not in text
    assert "no priced usage" in text
