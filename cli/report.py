"""``ctxscope report``: the report card of every stored session (engine/report/)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from cli.arguments import (
    Parents,
    Subcommands,
    UsageError,
    checked,
    output_file,
)

if TYPE_CHECKING:
    from engine.report import Figures, Report
    from engine.settings.config import Settings

SHOWN = 15
"""Rows of a group, tool or session list in the text form (``--json`` has them all)."""
LOST_NAMED = 3
"""Lost items named per kind under each "lost the most" compaction (``--json`` and ``--html``
have them all)."""
KEY_WIDTH = 48
"""Characters of a group's name in the text (a longer one keeps its tail: where folders differ)."""
NAMES = {
    "file_read": "files read",
    "file_changed": "files changed",
    "command": "commands",
    "error": "errors",
    "request": "requests",
    "decision": "decisions",
}


def add_report_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "report",
        parents=parents.with_json,
        help="a report card of every session: usage, cost, compactions and what they kept",
    )
    p.add_argument("--since", help="from this date (2026-02-01, 20260201), time or days ago (7d)")
    p.add_argument(
        "--by",
        choices=("project", "day", "agent", "model", "session"),
        help="figures per project, day, agent, model or session",
    )
    p.add_argument(
        "--html",
        action="store_true",
        help="write the report card as an HTML page (one file, no script; to stdout or -o)",
    )
    p.add_argument(
        "-o", "--output", type=checked(output_file), metavar="FILE", help="write here, not stdout"
    )


def cmd_report(args: argparse.Namespace, settings: Settings) -> int:
    from cli.common import emit, open_store
    from engine.report import SinceError, build_report, parse_since

    try:
        since = parse_since(args.since) if args.since else None
    except SinceError as exc:
        raise UsageError(str(exc)) from None
    store = open_store(args, settings, read_only=True)
    report = build_report(store, settings, since, args.by)
    if getattr(args, "html", False):
        from engine.report.card_page import report_html

        write_out(args, report_html(report))
        return 0
    if getattr(args, "output", None) is not None:
        raise UsageError("-o FILE writes the --html page; the text and --json go to stdout")
    emit(args, report.as_json(), "\n".join(text_lines(report)))
    return 0


def write_out(args: argparse.Namespace, text: str) -> None:
    """``text`` to ``-o FILE``, else to stdout."""
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")


def dollars(value: float | None) -> str:
    return "no price" if value is None else f"${value:,.2f}"


def _tokens(f: Figures) -> str:
    from engine.report import TOKEN_KINDS

    return " · ".join(f"{k.replace('_', ' ')} {f.tokens[k]:,}" for k in TOKEN_KINDS)


def _agent_label(name: str) -> str:
    """An agent's group in words, as every other surface names it (``Claude Code``, not
    ``claude-code``); a name no agent has (``ctxscope``, ``proxy``) as it is."""
    from engine.recordings.agents import label_of

    return label_of(name) or name


def text_lines(r: Report) -> list[str]:
    from cli.common import sessions_counted
    from engine.report import TOKEN_KINDS, Figures
    from engine.terminal_text import printable

    t = r.totals
    out = [
        f"{sessions_counted(len(r.sessions), len(r.subagents))} · {t.requests:,} requests · "
        f"{dollars(t.total_cost)}" + (f" since {r.since:%Y-%m-%d %H:%M}" if r.since else ""),
        f"tokens: {_tokens(t)}",
        "cost: " + " · ".join(f"{k.replace('_', ' ')} {dollars(t.cost[k])}" for k in TOKEN_KINDS),
    ]
    if t.unpriced_requests:
        out.append(f"{t.unpriced_requests:,} requests of models without a price are not in it")
    if r.by:
        out.append("")
        out.append(f"by {r.by}:")
        named = _agent_label if r.by == "agent" else str
        for key, fig in list(r.groups.items())[:SHOWN]:
            shown = printable(named(key), one_line=True)
            if len(shown) > KEY_WIDTH:  # the tail tells one project from another, not the head
                shown = "…" + shown[-(KEY_WIDTH - 1) :]
            n = r.group_sessions.get(key, 0)
            out.append(
                f"  {shown:{KEY_WIDTH}}  {n:>5} {'session ' if n == 1 else 'sessions'}  "
                f"{fig.requests:>7,} requests  {dollars(fig.total_cost):>12}"
            )
        if len(r.groups) > SHOWN:
            out.append(f"  … and {len(r.groups) - SHOWN} more (--json has them all)")
    out += ["", *_compaction_lines(r), "", *_tool_lines(r.tools)]
    src = r.sources
    if src.get("sessions"):
        kinds = " · ".join(f"{k.replace('_', ' ')} {n:,}" for k, n in src["by_kind"].items())
        out.append(f"proxied sessions' last requests by source ({src['sessions']}): {kinds}")
        if src["mcp_servers"]:
            servers = " · ".join(
                f"{printable(k, one_line=True)} {n:,}" for k, n in src["mcp_servers"].items()
            )
            out.append(f"  MCP servers: {servers}")
    subs = r.subagents
    if subs:
        fig = Figures()
        for s in subs:
            fig.add(s.figures)
        parents = len({s.facts.parent_session_id for s in subs})
        out += [
            "",
            f"subagents: {len(subs)} sessions under {parents} sessions · {fig.requests:,} "
            f"requests · {dollars(fig.total_cost)}",
        ]
    out += [f"note: {printable(n, one_line=True)}" for n in r.notes]
    return out


def _compaction_lines(r: Report) -> list[str]:
    from statistics import median

    from engine.compaction.ledger import KINDS
    from engine.compaction.losses import lost_lines
    from engine.terminal_text import printable

    comps = r.compactions
    if not comps:
        return ["compactions: none recorded"]
    auto = sum(1 for c in comps if c.facts.trigger == "auto")
    pre = [c.pre_tokens for c in comps]
    after = [c.after_start_minutes for c in comps if c.after_start_minutes is not None]
    out = [
        f"compactions: {len(comps)} ({auto} auto, {len(comps) - auto} manual) · at "
        f"{median(pre):,.0f} tokens (median; {min(pre):,}–{max(pre):,})"
        + (f" · {median(after):,.0f} min after the session's start (median)" if after else "")
    ]
    kept = r.kept_overall()
    parts = [
        f"{NAMES[k]} {v['percent']:.0f} % ({v['kept']}/{v['total']})"
        for k in KINDS
        if (v := kept[k])["total"]
    ]
    if parts:
        out.append("  what the summaries kept: " + " · ".join(parts))
    out += [f"  {printable(line, one_line=True)}" for line in r.losses.lines()]
    calls = [c for c in comps if c.call_model or c.call_tokens]
    if calls:
        costs = [c.call_cost for c in calls if c.call_cost is not None]
        out.append(
            f"  compaction calls recorded: {len(calls)} · "
            + (dollars(sum(costs)) if costs else "no price")
        )
    if r.degenerate:
        d = r.degenerate_json()
        kinds = " · ".join(f"{k.replace('_', ' ')} {n}" for k, n in d["by_kind"].items() if n)
        out.append(
            f"  degenerate compactions: {d['count']} ({kinds}) · "
            + (dollars(d["cost"]) if d["cost"] is not None else "no cost known")
        )
        out += [f"    {printable(f.line(), one_line=True)}" for f in r.degenerate[:SHOWN]]
        if len(r.degenerate) > SHOWN:
            out.append(f"    … and {len(r.degenerate) - SHOWN} more (--json has them all)")
    worst = r.lost_most()
    if worst:
        out.append("  lost the most at a compaction (ctxscope show ID):")
        for c in worst:
            title = printable(c.session.title if c.session else "", one_line=True)[:40]
            minutes = (
                f", {c.after_start_minutes:,.0f} min in"
                if c.after_start_minutes is not None
                else ""
            )
            out.append(
                f"    session {c.facts.session_id:>5}  lost {c.lost} items at "
                f"{c.pre_tokens:,}"
                + (f" → {c.post_tokens:,}" if c.post_tokens is not None else "")
                + f" tokens{minutes}  {title}"
            )
            if c.losses is not None:
                out += [
                    f"      {printable(line, one_line=True)}"
                    for line in lost_lines(c.losses, LOST_NAMED)
                ]
    return out


def _tool_lines(tools: list[dict[str, Any]]) -> list[str]:
    from engine.terminal_text import printable

    if not tools:
        return ["tool results: none recorded"]
    out = ["tool results by the context they take (tokens as recorded → kept in history now):"]
    for t in tools[:SHOWN]:
        out.append(
            f"  {printable(t['tool'], one_line=True)[:24]:24} {t['results']:>6} results  "
            f"{t['tokens_recorded']:>10,} → {t['tokens_kept']:>10,}"
        )
    return out
