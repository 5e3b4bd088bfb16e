"""The page's chart writes each horizontal line's label where no other label is: a Claude
Code session on the 1M window has its auto-compact line at 967,000, 3.3 % under the window's
line, and both labels were drawn over each other (seen in a screenshot of the oh-my-posh
corpus session's page)."""

from __future__ import annotations

import re

from engine.report.html import Chart, Line

FONT_PX = 11
"""The chart's text size, from the page's own style: ``svg text { font: 11px … }``."""


def label_baselines(svg: str) -> dict[str, float]:
    """Each line label's text and the y of its baseline."""
    return {
        text: float(y)
        for y, text in re.findall(r'<text x="[\d.]+" y="([\d.]+)" text-anchor="end" '
                                  r'style="fill:[^"]+">([^<]+)</text>', svg)
    }  # fmt: skip


def test_two_lines_close_together_have_labels_apart() -> None:
    chart = Chart(
        values=[60_000.0, 233_175.0],
        title="context",
        x_label="API call",
        lines=[Line(967_000, "auto-compacts at"), Line(1_000_000, "window", "#5b6473")],
    )
    ys = label_baselines(chart.svg())
    assert set(ys) == {"auto-compacts at 967,000", "window 1.0M"}
    assert abs(ys["window 1.0M"] - ys["auto-compacts at 967,000"]) >= FONT_PX
    # the window's label stays above its line, the nearer one goes under its own
    lines = dict(
        re.findall(r'y1="([\d.]+)" y2="[\d.]+" stroke="([^"]+)" stroke-dasharray', chart.svg())
    )
    window_y = float(next(y for y, colour in lines.items() if colour == "#5b6473"))
    trigger_y = float(next(y for y, colour in lines.items() if colour != "#5b6473"))
    assert ys["window 1.0M"] < window_y
    assert ys["auto-compacts at 967,000"] > trigger_y


def test_lines_far_apart_keep_their_labels_above() -> None:
    """200,000 and 167,000 of a chart whose calls reach 180,000: 33,000 is 16 % of the
    scale, far more than a label's height, so each label sits just above its line."""
    chart = Chart(
        values=[20_000.0, 180_000.0],
        title="context",
        x_label="API call",
        lines=[Line(167_000, "auto-compacts at"), Line(200_000, "window")],
    )
    svg = chart.svg()
    ys = label_baselines(svg)
    line_ys = [
        float(y) for y in re.findall(r'class="trigger" x1="[\d.]+" x2="[\d.]+" y1="([\d.]+)"', svg)
    ]
    assert sorted(ys.values()) == sorted(y - 4 for y in line_ys)


def test_lines_far_above_the_values_are_named_not_drawn() -> None:
    """The corpus' Claude Code 2.1.284 session peaks at 35,604 tokens (its last call: 2 +
    32,480 + 2,956 + 166) on a 1,000,000 window that Claude Code compacts at 967,000: scaled to
    hold those lines, its four calls were a flat line along the bottom (seen in a screenshot
    of its page). Lines over ten times the highest value are named above the chart, in their
    colours, and the values fill it; a line within reach (marot: 167,000 under a 200,000
    window, its peak 167,094) is drawn as before."""
    far = Chart(
        values=[30_000.0, 31_500.0, 32_000.0, 35_604.0],
        title="context",
        x_label="API call",
        lines=[Line(967_000, "auto-compacts at"), Line(1_000_000, "window", "#5b6473")],
    ).svg()
    assert 'class="trigger"' not in far
    (named,) = re.findall(r'<text class="above"[^>]*>(.*?)</text>', far, re.S)
    assert re.sub(r"<[^>]+>", "", named) == (
        "window 1.0M · auto-compacts at 967,000 (above the chart)"
    )
    assert '<tspan style="fill:#5b6473">window 1.0M</tspan>' in named
    # the highest value in the top fifth of the plot (y from 28 down to 288: 300 − 28 − 40 high)
    ys = [float(y) for y in re.findall(r",([\d.]+)", re.search(r'points="([^"]+)"', far)[1])]
    assert min(ys) < 28 + 260 * 0.2
    near = Chart(
        values=[60_000.0, 167_094.0],
        title="context",
        x_label="API call",
        lines=[Line(167_000, "auto-compacts at"), Line(200_000, "window", "#5b6473")],
    ).svg()
    assert near.count('class="trigger"') == 2 and 'class="above"' not in near
