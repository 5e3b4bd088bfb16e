"""Strategies: ``strategy`` (switch a session's), ``strategies`` (list them) and ``replay``
(a recorded session under each)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from cli.arguments import (
    SESSION_ID,
    CliError,
    Parents,
    Subcommands,
    UsageError,
    checked,
    count,
    output_file,
    window,
)

if TYPE_CHECKING:
    from engine.models import Session, StrategyParams
    from engine.settings.config import Settings


def add_strategy_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "strategy",
        parents=parents.with_json,
        help="show a session's compaction strategy and its numbers, or switch them "
        "(the switch is recorded)",
    )
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument("name", nargs="?", help="the strategy to switch to (default: the session's own)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one of the strategy's numbers for this session, e.g. trigger_tokens=20000 "
        "(recorded with the switch)",
    )
    p.add_argument(
        "--window",
        type=checked(window),
        metavar="N",
        help="the context window the session plans in, in tokens",
    )


def cmd_strategy(args: argparse.Namespace, settings: Settings) -> int:
    from cli.common import emit, get_session, open_store, session_to_change
    from cli.replay_setup import parse_overrides
    from engine.compaction.strategies import STRATEGIES
    from engine.settings.params import describe_params

    changing = args.name is not None or bool(args.overrides) or args.window is not None
    store = open_store(args, settings, read_only=not changing)
    session = get_session(store, args.session)
    if changing:
        name = args.name or session.strategy
        if name not in STRATEGIES:
            raise CliError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
        numbers = parse_overrides(args.overrides, name)
        other = next((owner for owner in numbers if owner != name), None)
        if other is not None:
            raise UsageError(f"--set {other}.…: the session's strategy would be {name}")
        # refused numbers are refused before a recording is forked for them (issue 39)
        _new_params(session, name, settings, numbers.get(name, {}), args.window)
        session = session_to_change(store, session, args)
        assert session.id is not None
        # a round or a compaction in progress runs under the old numbers: one writer at a time
        with store.acquire_lease(session.id, "strategy switch"):
            session = get_session(store, session.id)
            params = _new_params(session, name, settings, numbers.get(name, {}), args.window)
            session = store.switch_strategy(session.id or 0, name, params)
    switches = store.strategy_switches(session.id or 0)
    data = {
        "session_id": session.id,
        "strategy": session.strategy,
        "params": None if session.params is None else session.params.model_dump(mode="json"),
        "switches": [w.model_dump(mode="json") for w in switches],
    }
    text = f"session {session.id} uses {session.strategy}: {describe_params(session.params)}"
    if switches:
        last = switches[-1]
        same = last.previous == last.strategy
        what = "numbers changed" if same else f"switched from {last.previous}"
        text += f"\n({what} at {last.created_at:%Y-%m-%d %H:%M})"
    emit(args, data, text)
    return 0


def _new_params(
    session: Session,
    name: str,
    settings: Settings,
    numbers: dict[str, Any],
    window: int | None,
) -> StrategyParams:
    """The numbers ``session`` plans with under ``name`` after the switch: its own when the
    strategy stays, else the new strategy's from the settings (``--config``) in the session's
    window; then ``--set`` and ``--window``."""
    from engine.settings.params import ParamsError, changed_params, strategy_params

    if session.params is not None and name == session.strategy:
        base = session.params
    else:
        base = strategy_params(settings, name)
        if session.params is not None:
            base = base.model_copy(update={"context_window": session.params.context_window})
    try:
        return changed_params(base, name, numbers, window)
    except ParamsError as exc:
        raise UsageError(f"--set: {exc}") from None


def add_strategies_parser(sub: Subcommands, parents: Parents) -> None:
    sub.add_parser(
        "strategies", parents=parents.with_json, help="the compaction strategies and their parts"
    )


def cmd_strategies(args: argparse.Namespace, settings: Settings) -> int:
    from cli.common import emit
    from engine.compaction.strategies import STRATEGIES, get_strategy

    rows = [get_strategy(name, settings).describe() for name in STRATEGIES]
    keys = ["name", "checks", "summary", "placement", "lifecycle", "seed"]
    width = {k: max(len(k), *(len(r[k]) for r in rows)) for k in keys}
    lines = ["  ".join(f"{k:<{width[k]}}" for k in keys)]
    lines += ["  ".join(f"{r[k]:<{width[k]}}" for k in keys) for r in rows]
    emit(args, rows, "\n".join(lines))
    return 0


def add_replay_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "replay",
        parents=parents.with_json,
        help="replay a stored session under other strategies and compare them",
    )
    p.add_argument(
        "session",
        type=SESSION_ID,
        metavar="ID",
        nargs="?",
        help="the session; without it, every recorded session --since/--project select",
    )
    p.add_argument(
        "--since",
        metavar="DATE|Nd",
        help="replay every recorded session with calls since then (as `report --since`)",
    )
    p.add_argument(
        "--project",
        metavar="NAME",
        help="only sessions of this project (its folder, or the folder's last name)",
    )
    p.add_argument(
        "--strategy",
        dest="replay_strategies",
        default="all",
        help="strategies to replay, comma-separated, or all",
    )
    p.add_argument(
        "--csv", type=checked(output_file), metavar="FILE", help="also write the table as CSV"
    )
    p.add_argument(
        "--window",
        type=checked(window),
        metavar="N",
        help="replay in a context window of N tokens (default: the configured one)",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="STRATEGY.KEY=VALUE",
        help="a strategy's number for this replay, e.g. mock-user.trigger_tokens=20000",
    )
    p.add_argument(
        "--jobs",
        type=checked(count, "--jobs"),
        metavar="N",
        help="replay N strategies at once, one process each (default: one per core)",
    )


def cmd_replay(args: argparse.Namespace, settings: Settings) -> int:
    from cli.common import emit, get_session, open_store
    from cli.replay_setup import replay_names, replay_setup
    from engine.replay.as_recorded import as_recorded
    from engine.replay.parallel import default_jobs, replay_strategies
    from engine.replay.runner import compared_steps
    from engine.terminal_text import printable

    if args.session is None:
        from cli.replay_selection import cmd_replay_selection

        return cmd_replay_selection(args, settings)
    if args.since is not None or args.project is not None:
        raise UsageError("replay: --since and --project select sessions; give them without an ID")
    names = replay_names(args.replay_strategies)
    store = open_store(args, settings, read_only=True)
    session = get_session(store, args.session)
    settings, workspace, own = replay_setup(store, session, settings, args)
    jobs = args.jobs or default_jobs(len(names))

    def progress(name: str, step: int, total: int) -> None:
        if not args.json and (step == total or step % 100 == 0):
            print(f"… {name}: step {step} of {total}", file=sys.stderr)

    # what really happened, first, in the agent's own window
    recorded = (
        None if own is None else as_recorded(store, args.session, settings, own.context_window)
    )
    db, sid = store.url or store.path.resolve(), args.session
    store.close()  # each replay opens the file itself, in this process or a worker
    results = replay_strategies(db, sid, names, settings, workspace, jobs=jobs, on_step=progress)
    if recorded is not None:
        results = [recorded, *results]
    rows = [r.row() for r in results]
    # a replay that stopped early is compared on the steps every replay played, never on
    # totals of different lengths (issue 39)
    upto = compared_steps(results)
    for result, row in zip(results, rows, strict=True):
        if upto is not None:
            row["compared"] = result.up_to(upto)
    data = {
        "session_id": args.session,
        "window": settings.context_window,
        "compared_over_steps": upto,
        "strategies": rows,
        "cost_note": results[0].price_note if results else "",
        "series": {
            r.strategy: [
                {
                    "step": s.step,
                    "round": s.round,
                    "tokens": s.tokens,
                    "original_tokens": s.original,
                    "cache_read": s.cache.read,
                    "cache_write": s.cache.write,
                    "uncached": s.cache.uncached,
                    "output": s.output,
                    "cost": None if s.cost is None else round(s.cost, 6),
                    "compactions": s.compactions,
                    "recall": s.recall,
                }
                for s in r.steps
            ]
            for r in results
        },
    }
    columns = ["strategy", "steps", "compactions", "peak", "total_input", "cache_read",
               "cache_write", "cost"]  # fmt: skip
    kinds = list(next((r["recall_last"] for r in rows if r["recall_last"]), {}))
    header = columns + [f"recall_{k}" for k in kinds]

    compared = ("total_input", "cache_read", "cache_write", "cost")
    if upto is not None:  # totals of different lengths: the steps all played instead
        header = [f"{c}_1-{upto}" if c in compared else c for c in header]

    def cells(row: dict[str, Any]) -> list[str]:
        recall = [row["recall_last"].get(k) for k in kinds]
        values = row | ({c: row["compared"][c] for c in compared} if upto is not None else {})
        if not row["complete"]:
            values["steps"] = f"{row['steps']} of {row['total_steps']}*"
        shown = ["–" if values[c] is None else str(values[c]) for c in columns]
        return shown + ["–" if v is None else f"{v:.0%}" for v in recall]

    if args.csv is not None:
        lines = [",".join(header)] + [",".join(cells(r)) for r in rows]
        args.csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = [header] + [cells(r) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    note = printable(results[0].price_note, one_line=True) if results else ""
    text = f"replayed in a {settings.context_window:,}-token window\n" + "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in table
    )
    prefix = next((r.agent_prefix for r in results if r.agent_prefix is not None), None)
    if prefix is not None:
        text += (
            f"\nplanned as the recorded agent sends: each request counted with {prefix:+,} "
            "tokens (its hidden prefix in place of ctxscope's system prompt and tools)"
        )
    if upto is not None:
        text += (
            f"\n* played only part of the recording: every row is compared on steps 1–{upto}, "
            "the steps all played (totals of different lengths compare nothing)"
        )
    # A strategy that could not play every recorded step says where and why.
    stops = [s["said"] for r in rows for s in r.get("stopped", [])]
    text += "".join(f"\n{said}" for said in stops)
    emit(args, data, f"{text}\ncost: {note}" if note else text)
    return 0
