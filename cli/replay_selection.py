"""``ctxscope replay --since … [--project …]``: the what-ifs at scale (issue 33).

Every recorded session the selection holds is replayed under each strategy, as
``ctxscope replay ID`` replays one, and the figures are added up per strategy beside the
as-recorded totals: what each strategy would have sent and cost over a week of sessions
against what the agents really did.

The selection is the report's (:func:`engine.report.build_report`): with ``--since``, the
sessions that have calls from then on. ``--project`` keeps the sessions of one project (its
folder, or the folder's last name). Only recorded sessions are replayed, so each strategy's
totals cover the same sessions as the as-recorded ones; the others are counted as skipped:
``subagent`` (its calls are a session of their own; its parent's replay does not send
them), ``not recorded`` (a session ctxscope ran itself has no as-recorded row to compare
with) and ``no recorded calls`` (a recording without usage).

Sessions are replayed one after another, each with its strategies side by side on the
process pool of :func:`engine.replay.parallel.replay_strategies` (one pool at a time, never
one inside another).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from cli.common import UsageError, emit, open_store
from cli.replay_setup import replay_names, replay_setup
from engine.report import SinceError, build_report, parse_since
from engine.settings.config import Settings
from engine.terminal_text import printable

SUMMED = ("steps", "compactions", "total_input", "cache_read", "cache_write")
"""The figures of a replay's row that are added up over sessions (and ``cost``)."""


def in_project(workspace: str, project: str) -> bool:
    """Whether a session's folder is ``project``: the same path, or a folder of that name."""
    folder = workspace.rstrip("/\\")
    return folder == project.rstrip("/\\") or Path(folder).name == project


def add_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One strategy's rows (``replay --json``'s) added up; cost None if any is None."""
    out: dict[str, Any] = {"sessions": len(rows)}
    for key in SUMMED:
        out[key] = sum(int(r[key]) for r in rows)
    costs = [r["cost"] for r in rows]
    out["cost"] = None if None in costs else round(sum(costs), 4)
    return out


def cmd_replay_selection(args: argparse.Namespace, settings: Settings) -> int:
    from engine.replay.as_recorded import AS_RECORDED, as_recorded
    from engine.replay.parallel import default_jobs, replay_strategies

    if args.since is None and args.project is None:
        raise UsageError("replay: give a session ID, or select sessions with --since/--project")
    if args.csv is not None:
        raise UsageError("replay: --csv writes one session's table; give a session ID")
    try:
        since = parse_since(args.since) if args.since else None
    except SinceError as exc:
        raise UsageError(str(exc)) from None
    names = replay_names(args.replay_strategies)
    base = settings
    store = open_store(args, settings, read_only=True)
    report = build_report(store, settings, since)
    skipped: Counter[str] = Counter()
    chosen: list[int] = []
    for line in report.sessions:
        facts = line.facts
        if args.project is not None and not in_project(facts.workspace, args.project):
            continue
        if facts.parent_session_id is not None:
            skipped["subagent"] += 1
        elif not store.get_session(facts.id).recorded:
            skipped["not recorded"] += 1
        else:
            chosen.append(facts.id)
    db = store.url or store.path.resolve()
    jobs = args.jobs or default_jobs(len(names))
    tty = not args.json and sys.stderr.isatty()
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in [AS_RECORDED, *names]}
    sessions: list[dict[str, Any]] = []
    notes: set[str] = set()
    for n, sid in enumerate(chosen, 1):
        session = store.get_session(sid)
        settings, workspace, own = replay_setup(store, session, base, args)
        assert own is not None  # a recording has its agent's view
        recorded = as_recorded(store, sid, settings, own.context_window)
        if recorded is None:
            skipped["no recorded calls"] += 1
            continue

        def progress(name: str, step: int, total: int, n: int = n, sid: int = sid) -> None:
            if tty and step == total:
                print(f"… session {n} of {len(chosen)} (id {sid}): {name} done", file=sys.stderr)

        results = [
            recorded,
            *replay_strategies(db, sid, names, settings, workspace, jobs=jobs, on_step=progress),
        ]
        row_list = [r.row() for r in results]
        for row in row_list:
            rows[row["strategy"]].append(row)
        notes.update(r.price_note for r in results if r.cost is None and r.price_note)
        sessions.append({"session_id": sid, "strategies": row_list})
    store.close()
    totals = [{"strategy": name} | add_rows(found) for name, found in rows.items() if found]
    data = {
        "selection": {
            "since": since,
            "project": args.project,
            "sessions": len(sessions),
            "skipped": dict(skipped),
        },
        "window": args.window,
        "totals": totals,
        "cost_notes": sorted(notes),
        "sessions": sessions,
    }
    emit(args, data, "\n".join(text_lines(data)))
    return 0


def cell(total: dict[str, Any], column: str) -> str:
    value = total[column]
    if value is None:
        return "–"  # a model without a price: the note says which
    if column == "cost":
        return f"${value:,.4f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def text_lines(data: dict[str, Any]) -> list[str]:
    sel = data["selection"]
    skipped = ", ".join(f"{n} {why}" for why, n in sel["skipped"].items())
    window = f"a window of {data['window']:,} tokens" if data["window"] else "each agent's window"
    out = [
        f"{sel['sessions']} sessions replayed in {window}"
        + (f" (skipped: {skipped})" if skipped else "")
    ]
    if not data["totals"]:
        return [*out, "no recorded session in the selection"]
    columns = ["strategy", "sessions", *SUMMED, "cost"]
    table = [columns] + [[cell(t, c) for c in columns] for t in data["totals"]]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    out += [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in table
    ]
    out += [f"cost: {printable(n, one_line=True)}" for n in data["cost_notes"]]
    return out
