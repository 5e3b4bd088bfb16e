"""The parts every ctxscope HTML page is made of: the page shell, text made safe, an SVG chart.

A page is one self-contained file that needs no network to be read: its style is inline, its
one chart is an SVG drawn here, and it holds **no script at all**. Everything a recording says
(titles, messages, tool results, paths, model names) is untrusted: it is made printable first
(control characters and terminal escape sequences shown as ``\\x1b`` and the like,
:func:`engine.terminal_text.printable`), then HTML-escaped, so ``<script>`` or
``<img onerror=…>`` in a transcript shows as text. The page's Content-Security-Policy
(``default-src 'none'``: no script, no fetch, no image or font from anywhere, styles inline
only) is a second wall should anything ever slip through.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.terminal_text import printable

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'"
)
"""No script from anywhere (``default-src 'none'`` covers ``script-src``), nothing fetched."""

STYLE = """
:root { --fg:#1d2430; --muted:#5b6473; --line:#d6dbe3; --bg:#ffffff; --panel:#f5f7fa;
  --accent:#2f6fde; --warn:#b3261e; --kept:#1b7f3b; --summary:#fff7e0; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1100px; padding: 24px; font: 15px/1.45 system-ui, sans-serif;
  color: var(--fg); background: var(--bg); }
h1 { font-size: 1.5em; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 1.15em; margin: 28px 0 8px; border-bottom: 1px solid var(--line); }
h3 { font-size: 1em; margin: 18px 0 6px; }
.meta, .muted { color: var(--muted); }
.figures { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
.figure { background: var(--panel); border: 1px solid var(--line); border-radius: 6px;
  padding: 8px 12px; min-width: 140px; }
.figure b { display: block; font-size: 1.25em; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { border-bottom: 1px solid var(--line); padding: 3px 10px 3px 0; text-align: left;
  vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--panel); margin: 4px 0;
  padding: 8px; border-radius: 4px; font: 12.5px/1.4 ui-monospace, monospace; }
.msg { border-left: 3px solid var(--line); padding: 4px 0 4px 12px; margin: 10px 0; }
.msg.user { border-color: var(--accent); }
.msg.assistant { border-color: #8a63d2; }
.msg.tool { border-color: #9aa3af; }
.msg.tool.error { border-color: var(--warn); }
.who { font-weight: 600; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
.round { margin-top: 26px; font-weight: 600; color: var(--muted); }
.compaction { background: var(--summary); border: 2px solid #e0b84c; border-radius: 6px;
  padding: 10px 14px; margin: 22px 0; }
.compaction h3 { margin-top: 0; }
.lost { color: var(--warn); }
.lost li { margin: 2px 0; overflow-wrap: anywhere; }
.flag { color: var(--warn); font-weight: 600; }
.call { font: 12.5px ui-monospace, monospace; color: var(--muted); overflow-wrap: anywhere; }
details > summary { cursor: pointer; color: var(--muted); }
svg { max-width: 100%; height: auto; background: #fff; }
svg text { font: 11px system-ui, sans-serif; fill: var(--muted); }
"""


def esc(text: object) -> str:
    """Untrusted text for an HTML text node or attribute: control characters shown escaped,
    then ``& < > " '`` escaped."""
    return html.escape(printable(str(text)), quote=True)


def esc_line(text: object) -> str:
    """:func:`esc` on one line (newlines and tabs shown escaped too: titles, names, cells)."""
    return html.escape(printable(str(text), one_line=True), quote=True)


def page(title: str, body: Sequence[str]) -> str:
    """The whole document: ``title`` (untrusted, escaped here) and ``body`` (already HTML)."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc_line(title)}</title>",
            f"<style>{STYLE}</style>",
            "</head>",
            "<body>",
            *body,
            '<p class="muted">Made by ctxscope: one file, no script, nothing fetched.</p>',
            "</body>",
            "</html>",
            "",
        ]
    )


def figures(pairs: Sequence[tuple[str, str]]) -> str:
    """A row of labelled figures (labels and values untrusted)."""
    cells = "".join(
        f'<div class="figure"><span class="muted">{esc_line(label)}</span>'
        f"<b>{esc_line(value)}</b></div>"
        for label, value in pairs
    )
    return f'<div class="figures">{cells}</div>'


def table(head: Sequence[str], rows: Sequence[Sequence[object]], numeric: set[int]) -> str:
    """A table; the columns in ``numeric`` right-aligned; every cell escaped."""

    def cell(tag: str, i: int, value: object) -> str:
        cls = ' class="n"' if i in numeric else ""
        return f"<{tag}{cls}>{esc_line(value)}</{tag}>"

    out = ["<table>", "<tr>" + "".join(cell("th", i, h) for i, h in enumerate(head)) + "</tr>"]
    out += ["<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>" for r in rows]
    out.append("</table>")
    return "\n".join(out)


def tokens(n: int | float | None) -> str:
    """``12,345``, ``1.2M``, or ``–``."""
    if n is None:
        return "–"
    if abs(n) >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    return f"{int(n):,}"


def dollars(value: float | None) -> str:
    return "no price" if value is None else f"${value:,.2f}"


# ---------------------------------------------------------------------- the chart
LABEL_GAP = 13
"""Pixels between two line labels' baselines: a label's height at the page's chart font."""
FAR = 10
"""A horizontal line over this many times the highest value is named above the chart, not
drawn: scaled to hold it, the values would be a flat line at the bottom (a session of 35,604
tokens on a 1,000,000 window)."""


@dataclass
class Line:
    """A horizontal line across the chart: a trigger, the window."""

    value: float
    label: str
    colour: str = "#b3261e"


@dataclass
class Mark:
    """A vertical line at an x: a compaction."""

    x: float
    label: str
    colour: str = "#c98a00"


@dataclass
class Chart:
    """A line chart of ``values`` (one per x = 0, 1, 2…), with horizontal lines and marks."""

    values: list[float]
    title: str
    x_label: str
    lines: list[Line] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    bars: bool = False
    """Bars (one per value, e.g. per day), not a line."""
    labels: list[str] = field(default_factory=list)
    """The x labels (untrusted); default the 1-based index."""
    value_text: str = "tokens"
    """How the y axis writes a value: ``tokens`` or ``dollars``."""
    width: int = 960
    height: int = 300

    def svg(self) -> str:
        """The chart as an inline ``<svg>`` (every label escaped)."""
        left, right, top, bottom = 64, 16, 28, 40
        w, h = self.width - left - right, self.height - top - bottom
        n = len(self.values)
        peak = max(self.values, default=0.0)
        drawn = [ln for ln in self.lines if not peak or ln.value <= FAR * peak]
        above = [ln for ln in self.lines if ln not in drawn]
        # room at the top for the line of what is above the chart
        top_value = max([*self.values, *(ln.value for ln in drawn), 1.0]) * (1.2 if above else 1.05)

        def x_at(i: float) -> float:
            if self.bars:
                return left + w * (i + 0.5) / max(n, 1)
            return left + (w * i / (n - 1) if n > 1 else w / 2)

        def shown(v: float) -> str:
            return f"${v:,.2f}" if self.value_text == "dollars" else tokens(v)

        def y_at(v: float) -> float:
            return top + h - h * v / top_value

        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width} {self.height}" '
            f'width="{self.width}" height="{self.height}" role="img" '
            f'aria-label="{esc_line(self.title)}">',
            f"<title>{esc_line(self.title)}</title>",
            f'<text x="{left}" y="16">{esc_line(self.title)}</text>',
            f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#d6dbe3"/>',
        ]
        for k in range(5):
            v = top_value * k / 4
            y = y_at(v)
            parts.append(
                f'<line x1="{left}" x2="{left + w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eef0f4"/>'
                f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{shown(v)}</text>'
            )
        parts.append(
            f'<text x="{left + w / 2:.0f}" y="{self.height - 8}" text-anchor="middle">'
            f"{esc_line(self.x_label)}</text>"
        )
        if above:  # named where the lines would be, each in its colour
            named = " · ".join(
                f'<tspan style="fill:{ln.colour}">{esc_line(ln.label)} {tokens(ln.value)}</tspan>'
                for ln in sorted(above, key=lambda ln: -ln.value)
            )
            parts.append(
                f'<text class="above" x="{left + w - 4}" y="{top + 13}" text-anchor="end">'
                f"{named} (above the chart)</text>"
            )
        below: float = -LABEL_GAP  # the baseline of the label above, from the top down
        if above:
            below = top + 13  # under the line of what is above the chart
        for line in sorted(drawn, key=lambda ln: -ln.value):
            y = y_at(line.value)
            # each label above its line, or below it when the label above is too near (a
            # trigger a few per cent under the window: 967,000 of 1,000,000)
            text_y = y - 4 if y - 4 >= below + LABEL_GAP else max(y + 13, below + LABEL_GAP)
            below = text_y
            parts.append(
                f'<line class="trigger" x1="{left}" x2="{left + w}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{line.colour}" stroke-dasharray="6 4"/>'
                f'<text x="{left + w - 4}" y="{text_y:.1f}" text-anchor="end" '
                f'style="fill:{line.colour}">{esc_line(line.label)} {tokens(line.value)}</text>'
            )
        for mark in self.marks:
            x = x_at(mark.x)
            parts.append(
                f'<line class="compaction-mark" x1="{x:.1f}" x2="{x:.1f}" y1="{top}" '
                f'y2="{top + h}" stroke="{mark.colour}" stroke-width="2"/>'
                f'<text x="{x + 3:.1f}" y="{top + 26}" style="fill:{mark.colour}">'
                f"{esc_line(mark.label)}</text>"
            )
        ticks = sorted({0, n - 1, *(round(n * k / 4) for k in range(1, 4))} - {n}) if n else []
        if n and self.bars:
            bar = max(1.0, 0.8 * w / n)
            parts += [
                f'<rect class="bar" x="{x_at(i) - bar / 2:.1f}" y="{y_at(v):.1f}" '
                f'width="{bar:.1f}" height="{top + h - y_at(v):.1f}" fill="#2f6fde">'
                f"<title>{esc_line(self._label(i))}: {shown(v)}</title></rect>"
                for i, v in enumerate(self.values)
            ]
        elif n:
            points = " ".join(f"{x_at(i):.1f},{y_at(v):.1f}" for i, v in enumerate(self.values))
            parts.append(
                f'<polyline class="context" points="{points}" fill="none" stroke="#2f6fde" '
                'stroke-width="1.6"/>'
            )
        parts += [
            f'<text x="{x_at(i):.1f}" y="{top + h + 14}" text-anchor="middle">'
            f"{esc_line(self._label(i))}</text>"
            for i in ticks
        ]
        if not n:
            parts.append(
                f'<text x="{left + w / 2:.0f}" y="{top + h / 2:.0f}" text-anchor="middle">'
                "no calls recorded</text>"
            )
        parts.append("</svg>")
        return "\n".join(parts)

    def _label(self, i: int) -> str:
        return self.labels[i] if i < len(self.labels) else str(i + 1)
