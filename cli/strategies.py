"""Strategies: ``strategy`` (switch a session's), ``strategies`` (list them) and ``replay``
(a recorded session under each)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pydantic import ValidationError

from cli.common import (
    CliError,
    emit,
    get_session,
    open_store,
)
from engine.compaction.strategies import STRATEGIES, get_strategy
from engine.config import Settings, StrategySettings, workspace_folder

LAYERED_NUMBERS = ("context_window", "threshold_ratio", "keep_rounds", "min_messages")
"""Seed 000's numbers are the engine's own settings, not a ``[strategies.*]`` section."""


def _value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_overrides(overrides: list[str], strategy: str | None = None) -> dict[str, Any]:
    """``STRATEGY.KEY=VALUE`` (or ``KEY=VALUE`` for ``strategy``) as ``{strategy: {key: v}}``."""
    out: dict[str, Any] = {}
    for item in overrides:
        name, sep, value = item.partition("=")
        if not sep:
            raise CliError(f"--set {item!r}: expected KEY=VALUE")
        owner, dot, key = name.rpartition(".")
        owner = owner if dot else (strategy or "")
        if owner not in STRATEGIES:
            raise CliError(f"--set {item!r}: name the strategy (e.g. mock-user.trigger_tokens)")
        out.setdefault(owner, {})[key.strip()] = _value(value.strip())
    return out


def with_numbers(settings: Settings, numbers: dict[str, Any]) -> Settings:
    """``settings`` with strategies' numbers replaced (validated as a config file's are)."""
    if not numbers:
        return settings
    top = dict(numbers.get("layered", {}))
    unknown = [k for k in top if k not in LAYERED_NUMBERS]
    if unknown:
        raise CliError(f"layered has no number {unknown[0]!r}; it has {', '.join(LAYERED_NUMBERS)}")
    sections = settings.strategies.model_dump(by_alias=True)
    for name, values in numbers.items():
        if name != "layered":
            sections[name] = {**sections.get(name, {}), **values}
    try:
        strategies = StrategySettings.model_validate(sections)
        return Settings.model_validate({**settings.model_dump(), **top, "strategies": strategies})
    except ValidationError as exc:
        raise CliError(f"--set: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from exc


def cmd_strategy(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(args, settings, read_only=args.name is None)
    session = get_session(store, args.session)
    if args.name is not None:
        if args.name not in STRATEGIES:
            raise CliError(f"unknown strategy {args.name!r}; known: {', '.join(STRATEGIES)}")
        # a round or a compaction in progress runs under the old strategy: one writer at a time
        with store.acquire_lease(args.session, "strategy switch"):
            session = store.switch_strategy(args.session, args.name)
    switches = store.strategy_switches(args.session)
    data = {
        "session_id": session.id,
        "strategy": session.strategy,
        "switches": [w.model_dump(mode="json") for w in switches],
    }
    text = f"session {session.id} uses {session.strategy}"
    if switches:
        last = switches[-1]
        text += f" (switched from {last.previous} at {last.created_at:%Y-%m-%d %H:%M})"
    emit(args, data, text)
    return 0


def cmd_strategies(args: argparse.Namespace, settings: Settings) -> int:
    rows = [get_strategy(name, settings).describe() for name in STRATEGIES]
    keys = ["name", "checks", "summary", "placement", "lifecycle", "seed"]
    width = {k: max(len(k), *(len(r[k]) for r in rows)) for k in keys}
    lines = ["  ".join(f"{k:<{width[k]}}" for k in keys)]
    lines += ["  ".join(f"{r[k]:<{width[k]}}" for k in keys) for r in rows]
    emit(args, rows, "\n".join(lines))
    return 0


def cmd_replay(args: argparse.Namespace, settings: Settings) -> int:
    from engine.replay.runner import in_window, replay

    wanted = args.replay_strategies
    names = list(STRATEGIES) if wanted == "all" else wanted.split(",")
    for name in names:
        if name not in STRATEGIES:
            raise CliError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}, all")
    store = open_store(args, settings, read_only=True)
    session = get_session(store, args.session)
    workspace = workspace_folder(recorded=session.workspace)
    if args.window is not None:
        if args.window <= 0:
            raise CliError("--window must be a positive number of tokens")
        settings = in_window(settings, args.window)
    settings = with_numbers(settings, parse_overrides(args.overrides))
    results = []
    for name in names:

        def progress(step: int, total: int, name: str = name) -> None:
            if not args.json and (step == total or step % 50 == 0):
                print(f"… {name}: step {step} of {total}", file=sys.stderr)

        results.append(replay(store, args.session, name, settings, workspace, on_step=progress))
    rows = [r.row() for r in results]
    data = {
        "session_id": args.session,
        "window": settings.context_window,
        "strategies": rows,
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
                    "cost": round(s.cost, 6),
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
    kinds = list(rows[0]["recall_last"]) if rows else []
    header = columns + [f"recall_{k}" for k in kinds]

    def cells(row: dict[str, Any]) -> list[str]:
        recall = [row["recall_last"].get(k) for k in kinds]
        return [str(row[c]) for c in columns] + ["–" if v is None else f"{v:.0%}" for v in recall]

    if args.csv is not None:
        lines = [",".join(header)] + [",".join(cells(r)) for r in rows]
        args.csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = [header] + [cells(r) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    text = f"replayed in a {settings.context_window:,}-token window\n" + "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in table
    )
    emit(args, data, text)
    return 0
