"""``ctxscope report --html``: the report card as a page to open in a browser.

The same figures as the text and ``--json`` forms (:mod:`engine.report.card`): the totals and
what they cost by kind, the cost per day (an SVG chart), the compactions (when, at what
context, what each lost, by name), the ledger across the history, the tools whose results fill
the context, and the sessions by cost. Made inert as every ctxscope page is
(:mod:`engine.report.html`).
"""

from __future__ import annotations

from engine.compaction.losses import NAMES, where
from engine.report.card import Report
from engine.report.figures import TOKEN_KINDS, Figures
from engine.report.html import Chart, dollars, esc_line, figures, page, table, tokens

SESSIONS_SHOWN = 50
"""Sessions listed by cost (``--json`` has them all)."""
LOST_SHOWN = 20
"""Lost items named per kind under each compaction."""


def report_html(r: Report) -> str:
    """The report card's page (see the module docstring)."""
    t = r.totals
    since = f" since {r.since:%Y-%m-%d %H:%M}" if r.since else ""
    title = f"ctxscope report: {len(r.sessions)} sessions{since}"
    body = [
        f"<h1>{esc_line(title)}</h1>",
        figures(
            [
                ("sessions", f"{len(r.sessions):,}"),
                ("subagents", f"{len(r.subagents):,}"),
                ("API calls", f"{t.requests:,}"),
                ("cost at list price", dollars(t.total_cost)),
                ("compactions", f"{len(r.compactions):,}"),
                ("items lost at compactions", f"{sum(c.lost for c in r.compactions):,}"),
            ]
        ),
        table(
            ["", *(k.replace("_", " ") for k in TOKEN_KINDS)],
            [
                ["tokens", *(f"{t.tokens[k]:,}" for k in TOKEN_KINDS)],
                ["cost", *(dollars(t.cost[k]) for k in TOKEN_KINDS)],
            ],
            numeric=set(range(1, len(TOKEN_KINDS) + 1)),
        ),
        "<h2>Cost per day</h2>",
        _days_chart(r),
        "<h2>Compactions and what they lost</h2>",
        *_compactions(r),
        "<h2>Tool results by the context they take</h2>",
        table(
            ["tool", "results", "tokens as recorded", "as history keeps them"],
            [
                [
                    x["tool"],
                    f"{x['results']:,}",
                    f"{x['tokens_recorded']:,}",
                    f"{x['tokens_kept']:,}",
                ]
                for x in r.tools
            ],
            numeric={1, 2, 3},
        )
        if r.tools
        else '<p class="muted">No tool results recorded.</p>',
        "<h2>Sessions by cost</h2>",
        _sessions(r),
        *(f'<p class="muted">note: {esc_line(n)}</p>' for n in r.notes),
    ]
    return page(title, body)


def _days_chart(r: Report) -> str:
    days: dict[str, Figures] = {}
    for s in r.sessions:
        for day, fig in s.days.items():
            days.setdefault(day, Figures()).add(fig)
    order = sorted(days)
    chart = Chart(
        values=[days[d].total_cost or 0.0 for d in order],
        title="dollars per day at list price" + (f" ({order[0]} to {order[-1]})" if order else ""),
        x_label="day",
        bars=True,
        labels=order,
        value_text="dollars",
    )
    return chart.svg().replace("<svg ", '<svg class="days" ', 1)


def _compactions(r: Report) -> list[str]:
    if not r.compactions:
        return ['<p class="muted">No compaction recorded.</p>']
    out = [f"<p><b>{esc_line(line)}</b></p>" for line in r.losses.lines()]
    out.append(
        table(
            ["session", "compaction", "trigger", "at tokens", "minutes in", "lost", "title"],
            [
                [
                    c.facts.session_id,
                    c.facts.id,
                    c.facts.trigger,
                    f"{c.pre_tokens:,}",
                    "–" if c.after_start_minutes is None else f"{c.after_start_minutes:,.0f}",
                    c.lost,
                    (c.session.title if c.session else "")[:60],
                ]
                for c in r.compactions
            ],
            numeric={0, 1, 3, 4, 5},
        )
    )
    if r.degenerate:
        d = r.degenerate_json()
        out.append(
            f'<h3 class="flag">Degenerate compactions: {d["count"]}</h3>'
            + table(
                ["session", "compaction", "kind", "what", "cost", "of"],
                [
                    [f.session_id, f.compaction_id, f.kind, f.detail, dollars(f.cost), f.cost_of]
                    for f in r.degenerate
                ],
                numeric={0, 1, 4},
            )
        )
    for c in r.lost_most():
        loss = c.losses
        if loss is None or not loss.lost:
            continue
        head = (
            f"Session {c.facts.session_id}, compaction {c.facts.id}: lost {c.lost} items at "
            f"{tokens(c.pre_tokens)} tokens"
        )
        out.append(f'<div class="compaction"><h3>{esc_line(head)}</h3><ul class="lost">')
        for kind in NAMES:
            items = loss.lost_of(kind)
            for item in items[:LOST_SHOWN]:
                out.append(
                    f"<li>{esc_line(NAMES[kind])}: <code>{esc_line(item.key)}</code> "
                    f'<span class="muted">{esc_line(where(item))}</span></li>'
                )
            if len(items) > LOST_SHOWN:
                out.append(f"<li>… and {len(items) - LOST_SHOWN} more {esc_line(NAMES[kind])}</li>")
        out.append("</ul></div>")
    return out


def _sessions(r: Report) -> str:
    ranked = sorted(r.sessions, key=lambda s: -(s.figures.total_cost or 0.0))[:SESSIONS_SHOWN]
    if not ranked:
        return '<p class="muted">No session.</p>'
    return table(
        ["id", "agent", "model", "calls", "compactions", "cost", "title"],
        [
            [
                s.facts.id,
                s.agent,
                s.facts.model,
                f"{s.figures.requests:,}",
                s.compactions,
                dollars(s.figures.total_cost),
                s.facts.title[:60],
            ]
            for s in ranked
        ],
        numeric={0, 3, 4, 5},
    )
