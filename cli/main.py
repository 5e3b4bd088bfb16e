"""The headless command line: ``ctxscope sessions | show | context | compact | import | export |
ask | strategy | strategies``.

Every subcommand but ``export`` (which writes the format asked for) takes ``--json`` and then
prints one JSON document (``ask --json``: one event per line, then a ``result`` line); the
shapes are documented in the README. Errors a user can meet (unknown session, unreadable file,
bad option or setting) print one line on stderr and exit non-zero. Without a subcommand, the
console script opens the workbench (``tui``); this module never imports it — the TUI passes
itself in as ``run_tui``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.compaction.ledger import fidelity_line
from engine.compaction.policy import Plan
from engine.compaction.strategies import STRATEGIES, get_strategy
from engine.config import Settings, SettingsError, load_settings
from engine.context.builder import LAYERS
from engine.context.history import CompactionResult
from engine.events import Event, RoundStarted, TextDelta, ToolFinished, ToolStarted
from engine.messages.render import render_react
from engine.messages.tokens import count_text
from engine.models import RoundStatus, Session, Trigger
from engine.recordings import ImportError_, import_parsed, parse_path
from engine.recordings.export import FORMATS as EXPORT_FORMATS
from engine.recordings.export import export_jsonl, export_markdown
from engine.recordings.hidden import hidden_prefix
from engine.store import SessionNotFound, Store, StoreError
from tools.recall import MAX_LIMIT as RECALL_MAX_LIMIT
from tools.recall import hit_line

DEFAULT_DB = Path("sessions") / "ctxscope.db"
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """A problem the user can fix; printed as one line."""


# ---------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db", type=Path, default=argparse.SUPPRESS, help="database file (env CTXSCOPE_DB)"
    )
    common.add_argument(
        "--config", type=Path, default=argparse.SUPPRESS, help="settings file (ctxscope.toml)"
    )
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print JSON (see README)")

    parser = argparse.ArgumentParser(
        prog="ctxscope",
        description="See and steer an LLM agent's context. Without a command: the workbench.",
        parents=[common],
    )
    parser.add_argument("--workspace", type=Path, help="the agent's working directory")
    parser.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        metavar="ID",
        help="open a stored session (the latest without ID)",
    )
    parser.add_argument("--model", help="Anthropic model name, or 'offline'")
    parser.add_argument(
        "--strategy", help="compaction strategy of a new session (default: layered)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("sessions", parents=[common, as_json], help="list stored sessions")
    p = sub.add_parser("show", parents=[common, as_json], help="a session as stored")
    p.add_argument("session", type=int, metavar="ID")
    p = sub.add_parser(
        "context", parents=[common, as_json], help="the exact request the next step would send"
    )
    p.add_argument("session", type=int, metavar="ID")
    p.add_argument("--input", default="", help="a next user input to include")
    p = sub.add_parser("compact", parents=[common, as_json], help="compact a session now")
    p.add_argument("session", type=int, metavar="ID")
    p.add_argument("--focus", help="what the summary must keep")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="show what would be archived and the draft summary; change nothing",
    )
    _add_wait(p)
    p = sub.add_parser(
        "uncompact",
        parents=[common, as_json],
        help="undo the latest compaction: its messages return to history",
    )
    p.add_argument("session", type=int, metavar="ID")
    p.add_argument(
        "--compaction", type=int, metavar="N", help="the compaction to undo (must be the latest)"
    )
    p = sub.add_parser(
        "pin", parents=[common, as_json], help="pin a message or a round: never archived"
    )
    p.add_argument("session", type=int, metavar="ID")
    p.add_argument("target", metavar="MSG|rN", help="a message id, or rN for round N")
    p.add_argument("--unpin", action="store_true", help="unpin instead")
    p = sub.add_parser(
        "import",
        parents=[common, as_json],
        help="store recorded sessions: Claude Code JSONL, Anthropic-messages JSONL, "
        "mini-swe-agent / SWE-agent trajectories, or a directory of them",
    )
    p.add_argument("file", type=Path, metavar="FILE|DIR")
    p.add_argument("--workspace", type=Path, default=argparse.SUPPRESS)
    p = sub.add_parser(
        "export",
        parents=[common],
        help="write a session as Anthropic-messages JSON lines (re-importable) or Markdown",
    )
    p.add_argument("session", type=int, metavar="ID")
    p.add_argument("--format", choices=EXPORT_FORMATS, default="anthropic-jsonl")
    p.add_argument(
        "--include-archived",
        action="store_true",
        help="also write the messages compactions archived (before their summaries)",
    )
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="write here, not stdout")
    p = sub.add_parser(
        "strategy",
        parents=[common, as_json],
        help="show a session's compaction strategy, or switch it (the switch is recorded)",
    )
    p.add_argument("session", type=int, metavar="ID")
    p.add_argument("name", nargs="?", help="the strategy to switch to")
    sub.add_parser(
        "strategies", parents=[common, as_json], help="the compaction strategies and their parts"
    )
    p = sub.add_parser(
        "replay",
        parents=[common, as_json],
        help="replay a stored session under other strategies and compare them",
    )
    p.add_argument("session", type=int, metavar="ID")
    p.add_argument(
        "--strategy",
        dest="replay_strategies",
        default="all",
        help="strategies to replay, comma-separated, or all",
    )
    p.add_argument("--csv", type=Path, metavar="FILE", help="also write the table as CSV")
    p = sub.add_parser(
        "recall",
        parents=[common, as_json],
        help="search a session's archived segments (what the Recall tool sees)",
    )
    p.add_argument("session", type=int, metavar="ID")
    p.add_argument("query", help="the words to look for")
    p.add_argument("--limit", type=int, default=5, help="passages to return (default 5)")
    p = sub.add_parser("ask", parents=[common, as_json], help="run one round headless")
    p.add_argument("input", help="the user input")
    p.add_argument("--session", type=int, metavar="ID", help="continue this session")
    p.add_argument("--workspace", type=Path, default=argparse.SUPPRESS)
    p.add_argument("--model", default=argparse.SUPPRESS)
    p.add_argument("--strategy", default=argparse.SUPPRESS)
    p.add_argument("--allow-bash", action="store_true", help="let the agent run Bash")
    p.add_argument("--allow-edits", action="store_true", help="let the agent change files")
    _add_wait(p)
    return parser


def _add_wait(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wait",
        nargs="?",
        type=float,
        const=math.inf,
        default=0.0,
        metavar="SECONDS",
        help="when another ctxscope writes the session, wait for it (without SECONDS: as "
        "long as it takes) instead of refusing",
    )


# ---------------------------------------------------------------------- entry point
def main(
    argv: Sequence[str] | None = None,
    run_tui: Callable[[argparse.Namespace, Settings], int] | None = None,
) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = settings_for(args)
        if args.command is None:
            if run_tui is None:
                raise CliError("no command given (the workbench starts from `ctxscope`)")
            return run_tui(args, settings)
        command = COMMANDS[args.command]
        return command(args, settings)
    except (CliError, SettingsError, StoreError, ImportError_, ValueError) as exc:
        print(f"ctxscope: {exc}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, SettingsError) else EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``| head``): say nothing more, and let no flush at exit fail.
        _silence_stdout()
        return EXIT_ERROR


def _silence_stdout() -> None:
    """Point stdout at /dev/null (the Python docs' advice after a ``BrokenPipeError``)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def settings_for(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    if getattr(args, "model", None):
        overrides["model"] = args.model
    if getattr(args, "strategy", None):
        overrides["strategy"] = args.strategy
    if getattr(args, "allow_bash", False):
        overrides["bash_policy"] = "allow"
    elif getattr(args, "command", None) == "ask":
        overrides["bash_policy"] = "deny"  # headless: nobody to ask
    if getattr(args, "allow_edits", False):
        overrides["edit_policy"] = "allow"
    return load_settings(getattr(args, "config", None), **overrides)


def db_path(args: argparse.Namespace, settings: Settings) -> Path:
    return Path(getattr(args, "db", None) or settings.db or DEFAULT_DB)


def open_store(args: argparse.Namespace, settings: Settings, read_only: bool = False) -> Store:
    """The database; ``read_only`` for commands that only look (they never write a session)."""
    return Store.open(
        db_path(args, settings), read_only=read_only, busy_timeout=settings.db_busy_timeout
    )


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        print(text)


def _get_session(store: Store, session_id: int) -> Session:
    try:
        return store.get_session(session_id)
    except SessionNotFound as exc:
        raise CliError(f"{exc} (see `ctxscope sessions`)") from None


def make_agent(
    store: Store,
    session: Session,
    settings: Settings,
    events: Callable[[Event], None] | None = None,
    lease_wait: float = 0.0,
) -> Any:
    """An agent over ``session`` (imported lazily: the listing commands need no provider)."""
    from engine.llm.factory import make_provider
    from engine.session import Agent

    workspace = Path(session.workspace or os.getcwd())
    provider = make_provider(settings)
    kwargs: dict[str, Any] = {} if events is None else {"events": events}
    return Agent(store, session, settings, provider, workspace, lease_wait=lease_wait, **kwargs)


# ---------------------------------------------------------------------- commands
def cmd_sessions(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(args, settings, read_only=True)
    infos = store.list_sessions()
    data = [
        {
            **info.session.model_dump(mode="json"),
            "rounds": info.rounds,
            "messages": info.messages,
            "current_tokens": info.current_tokens,
            "compactions": info.compactions,
        }
        for info in infos
    ]
    rows = [
        f"{'ID':>4}  {'UPDATED':16}  {'ROUNDS':>6}  {'MSGS':>5}  {'TOKENS':>7}  {'COMP':>4}  TITLE"
    ]
    for info in infos:
        s = info.session
        rows.append(
            f"{s.id:>4}  {s.updated_at:%Y-%m-%d %H:%M}  {info.rounds:>6}  {info.messages:>5}  "
            f"{info.current_tokens:>7}  {info.compactions:>4}  {s.title or '(untitled)'}"
        )
    emit(args, data, "\n".join(rows) if infos else "no sessions yet")
    return 0


def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(args, settings, read_only=True)
    session = _get_session(store, args.session)
    sid = args.session
    history = store.history(sid)
    rounds = store.rounds(sid)
    compactions = store.compactions(sid)
    segments = store.segments(sid)
    todos = store.get_todos(sid)
    data = {
        "session": session.model_dump(mode="json"),
        "rounds": [r.model_dump(mode="json") for r in rounds],
        "summaries": [s.model_dump(mode="json") for s in history.summaries],
        "history": [m.model_dump(mode="json") for m in history.messages],
        "archived_segments": [s.model_dump(mode="json") for s in segments],
        "compactions": [{**c.model_dump(mode="json"), "ratio": c.ratio} for c in compactions],
        "todos": [t.model_dump(mode="json") for t in todos],
        "usage": [u.model_dump(mode="json") for u in store.usages(sid)],
        "superseded_summaries": [
            s.model_dump(mode="json") for s in store.summaries(sid) if not s.active
        ],
        "strategy_switches": [w.model_dump(mode="json") for w in store.strategy_switches(sid)],
    }
    lines = [
        f"session {session.id}: {session.title or '(untitled)'}",
        f"workspace {session.workspace}  provider {session.provider}  model {session.model}"
        f"  strategy {session.strategy}",
        f"{len(rounds)} rounds ({sum(r.archived for r in rounds)} archived), "
        f"{len(history.messages)} messages in history, {len(compactions)} compactions",
        "",
        render_react(history),
    ]
    for c in compactions:
        lines.append(
            f"compaction {c.id} ({c.strategy}, {c.placement or 'no summary'}): {c.trigger} "
            f"{c.outcome} {c.tokens_before} → {c.tokens_after} tokens, {c.rounds_compacted} "
            f"rounds / {c.messages_compacted} messages archived"
            + (f" ({c.error})" if c.error else "")
            + (f"; the summary keeps {fidelity_line(c.fidelity)}" if c.fidelity else "")
        )
    if todos:
        lines.append("todo: " + "; ".join(f"[{t.status}] {t.content}" for t in todos))
    emit(args, data, "\n".join(lines))
    return 0


def cmd_context(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(args, settings, read_only=True)
    session = _get_session(store, args.session)
    agent = make_agent(store, session, settings)
    built, budget = agent.preview_and_budget(args.input)
    plan = agent.plan(args.input)
    data = {
        "session_id": session.id,
        "layers": [{"name": name, "tokens": built.layers[name]} for name in LAYERS],
        "total": built.total,
        "context_window": settings.context_window,
        "threshold": settings.threshold_tokens,
        "budget": {
            "last_usage": budget.last_usage,
            "input_estimate": budget.input_estimate,
            "estimated_total": budget.estimated_total,
            "source": budget.source,
            "fires": budget.fire,
        },
        "strategy": {**agent.strategy.describe(), "plan": plan_json(plan)},
        "request": built.request.model_dump(mode="json"),
    }
    hidden = hidden_prefix(store, session.id or 0)
    conversation = sum(built.layers[name] for name in LAYERS[3:])
    if hidden is not None:
        # An imported session: its first prompt as recorded minus what the transcript shows
        # is what the original agent sent around the conversation (its own L1/L2).
        data["as_original_agent"] = {
            "first_prompt_tokens": hidden.first_prompt_tokens,
            "transcript_tokens": hidden.transcript_tokens,
            "hidden_prefix_tokens": hidden.tokens,
            "conversation_tokens": conversation,
            "total": hidden.tokens + conversation,
        }
    width = max(len(n) for n in LAYERS)
    lines = [f"{name:<{width}}  {built.layers[name]:>8}" for name in LAYERS]
    lines.append(
        f"{'total':<{width}}  {built.total:>8}   (threshold {settings.threshold_tokens:,}"
        f" of {settings.context_window:,})"
    )
    lines.append(
        f"strategy {agent.strategy.name}: {plan.measure.describe()}"
        + (
            f" → compacts {len(plan.cut)} messages first"
            if plan.compacts
            else f" ({plan.reason})"
            if plan.measure.fires and plan.reason
            else ""
        )
    )
    if hidden is not None:
        lines.append(
            f"as the original agent saw it: {hidden.tokens + conversation} tokens (its hidden "
            f"prefix {hidden.tokens} = first prompt {hidden.first_prompt_tokens} − transcript "
            f"{hidden.transcript_tokens}, + this conversation {conversation})"
        )
    lines.append("")
    lines.append(json.dumps(built.request.model_dump(mode="json"), ensure_ascii=False, indent=2))
    emit(args, data, "\n".join(lines))
    return 0


def plan_json(plan: Plan) -> dict[str, Any]:
    """A strategy's decision as ``context --json`` reports it."""
    m = plan.measure
    return {
        "measure": m.what,
        "value": m.value,
        "comparison": m.comparison,
        "threshold": m.threshold,
        "source": m.source,
        "fires": m.fires,
        "compacts": plan.compacts,
        "cut_messages": [msg.id for msg in plan.cut],
        "cut_rounds": plan.cut_rounds,
        "reason": plan.reason,
    }


def cmd_strategy(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(args, settings)
    session = _get_session(store, args.session)
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
    from engine.replay.runner import replay

    wanted = args.replay_strategies
    names = list(STRATEGIES) if wanted == "all" else wanted.split(",")
    for name in names:
        if name not in STRATEGIES:
            raise CliError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}, all")
    store = open_store(args, settings)
    session = _get_session(store, args.session)
    workspace = Path(session.workspace or os.getcwd())
    results = []
    for name in names:

        def progress(step: int, total: int, name: str = name) -> None:
            if not args.json and (step == total or step % 50 == 0):
                print(f"… {name}: step {step} of {total}", file=sys.stderr)

        results.append(replay(store, args.session, name, settings, workspace, on_step=progress))
    rows = [r.row() for r in results]
    data = {
        "session_id": args.session,
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
    text = "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in table
    )
    emit(args, data, text)
    return 0


def cmd_compact(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(args, settings)
    session = _get_session(store, args.session)

    def progress(event: Event) -> None:
        if not args.json:
            print(f"… {event.type.replace('_', ' ')}", file=sys.stderr)

    agent = make_agent(store, session, settings, progress, lease_wait=args.wait)
    if args.dry_run:
        return _dry_run(args, agent)
    result = agent.compact(focus=args.focus, trigger=Trigger.MANUAL)
    c = result.compaction
    data = {
        "compaction": {**c.model_dump(mode="json"), "ratio": c.ratio},
        "summary": None if result.summary is None else result.summary.model_dump(mode="json"),
        "segment": None
        if result.segment is None
        else {
            "id": result.segment.id,
            "first_round": result.segment.first_round,
            "last_round": result.segment.last_round,
            "messages": len(result.segment.messages),
            "tokens": result.segment.tokens,
        },
    }
    if c.outcome in ("success", "fallback"):
        text = (
            f"compacted rounds {result.segment.first_round}–{result.segment.last_round} "
            f"({c.messages_compacted} messages): {c.tokens_before:,} → {c.tokens_after:,} tokens"
            if result.segment
            else ""
        )
        if c.fidelity is not None:
            text += f"\nthe summary keeps {fidelity_line(c.fidelity)}"
        if result.summary is not None:
            text += "\n\n" + result.summary.content
    elif c.outcome == "skipped":
        text = f"nothing compacted: {c.error}"
    else:
        text = f"compaction failed: {c.error}"
    emit(args, data, text)
    return 0 if c.outcome != "failed" else EXIT_ERROR


def _dry_run(args: argparse.Namespace, agent: Any) -> int:
    """``compact --dry-run``: the draft, stored nowhere."""
    draft = agent.prepare_compaction(focus=args.focus, dry_run=True)
    if isinstance(draft, CompactionResult):
        reason = draft.compaction.error
        emit(
            args,
            {"dry_run": True, "compacts": False, "reason": reason},
            f"nothing would be compacted: {reason}",
        )
        return 0
    c = draft.record
    summary = draft.summary
    rounds = sorted({m.meta.round for m in draft.messages if m.meta.round is not None})
    prompt = agent.strategy.summary.prompt if agent.strategy.summary else ""
    call_tokens = count_text(prompt) + sum(m.tokens or 0 for m in draft.summarised)
    archived = sum(m.tokens or 0 for m in draft.messages)
    data: dict[str, Any] = {
        "dry_run": True,
        "compacts": True,
        "strategy": agent.strategy.name,
        "archive": {
            "messages": [m.id for m in draft.messages],
            "rounds": rounds,
            "tokens": archived,
        },
        "supersedes_summaries": draft.supersede,
        "summary": None if summary is None else summary.model_dump(mode="json"),
        "tokens_before": c.tokens_before,
        "tokens_after": c.tokens_after,
        "summary_call": {
            "model": agent.provider.model,
            "writes_it": "model" if agent.provider.is_model else "extractive (offline)",
            "input_tokens": call_tokens if summary is not None else 0,
        },
        "stats": c.stats,
        "fidelity": c.fidelity,
    }
    span = f"rounds {rounds[0]}–{rounds[-1]}" if len(rounds) > 1 else f"round {rounds[0]}"
    text = (
        f"would archive {len(draft.messages)} messages ({span}, "
        f"{archived:,} tokens): {c.tokens_before:,} → {c.tokens_after:,} "
        f"tokens of history; nothing was changed"
    )
    if c.fidelity is not None:
        text += f"\nthe draft summary keeps {fidelity_line(c.fidelity)}"
    if summary is not None:
        text += f"\n\ndraft summary ({summary.placement.value}):\n\n{summary.content}"
    emit(args, data, text)
    return 0


def cmd_uncompact(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(args, settings)
    session = _get_session(store, args.session)
    agent = make_agent(store, session, settings)
    undone = agent.uncompact(args.compaction)
    data = {
        "compaction": undone.model_dump(mode="json"),
        "history_messages": len(agent.history.history.messages),
    }
    text = (
        f"undid compaction {undone.id}: {undone.messages_compacted} messages are back in "
        f"history ({len(agent.history.history.messages)} now); its summary stays in the archive"
    )
    emit(args, data, text)
    return 0


def cmd_recall(args: argparse.Namespace, settings: Settings) -> int:
    if not 1 <= args.limit <= RECALL_MAX_LIMIT:
        raise CliError(f"--limit must be between 1 and {RECALL_MAX_LIMIT}, got {args.limit}")
    store = open_store(args, settings)
    _get_session(store, args.session)
    hits = store.search_archive(args.session, args.query, args.limit)
    data = {"session_id": args.session, "query": args.query, "hits": [h.model_dump() for h in hits]}
    text = "\n".join(hit_line(h.model_dump()) for h in hits) or (
        f'no archived message of session {args.session} matches "{args.query}"'
    )
    emit(args, data, text)
    return 0


def cmd_pin(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(args, settings)
    session = _get_session(store, args.session)
    agent = make_agent(store, session, settings, _stderr_warnings)
    history = agent.history.history.messages
    target = args.target
    if target.startswith("r") and target[1:].isdigit():
        ids = [m.id for m in history if m.meta.round == int(target[1:])]
        what = f"round {target[1:]}"
    elif target.isdigit():
        ids = [m.id for m in history if m.id == int(target)]
        what = f"message {target}"
    else:
        raise CliError(f"pin what? {target!r} is neither a message id nor rN (a round)")
    if not ids:
        raise CliError(f"session {session.id} has no {what} in history (see `ctxscope show`)")
    changed = agent.pin(ids, pinned=not args.unpin)
    data = {"session_id": session.id, "messages": ids, "pinned": not args.unpin, "changed": changed}
    verb = "unpinned" if args.unpin else "pinned"
    emit(args, data, f"{verb} {what} ({len(ids)} messages, {changed} changed)")
    return 0


def _stderr_warnings(event: Event) -> None:
    if event.type == "budget_warning":
        print(f"ctxscope: warning: {getattr(event, 'message', '')}", file=sys.stderr)


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    # Everything is parsed and checked before the database is opened: a refusal never
    # creates or touches it.
    parsed = parse_path(args.file)
    workspace = str(Path(getattr(args, "workspace", None) or os.getcwd()).resolve())
    store = open_store(args, settings)
    reports = import_parsed(store, parsed, workspace, settings)
    data: dict[str, Any] = reports[0].as_json() if len(reports) == 1 else {}
    if args.file.is_dir():
        data = {
            "sessions": [r.as_json() for r in reports],
            "files_skipped": dict(parsed.skipped_files),
        }
    lines = []
    for r in reports:
        text = (
            f"imported {r.path} ({r.fmt}) as session {r.session.id}: {r.rounds} rounds, "
            f"{r.messages} messages, {r.observations} observations, {r.usage_records} usage "
            f"records, {r.compactions} compactions; tokens {r.tokens_raw} recorded → "
            f"{r.tokens_stored} in history"
        )
        if r.missing_results:
            text += (
                f"; {r.missing_results} tool calls had no recorded result and were "
                "paired with an error result"
            )
        if r.skipped:
            text += "; skipped " + ", ".join(f"{n} {k}" for k, n in sorted(r.skipped.items()))
        lines.append(text)
        lines.extend(f"  warning: {w}" for w in r.warnings)
    if parsed.skipped_files:
        lines.append(
            "files skipped: "
            + ", ".join(f"{n} {k}" for k, n in sorted(parsed.skipped_files.items()))
        )
    emit(args, data, "\n".join(lines))
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(args, settings)
    _get_session(store, args.session)
    write = export_markdown if args.format == "markdown" else export_jsonl
    text = write(store, args.session, include_archived=args.include_archived)
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
    return 0


def cmd_ask(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(args, settings)
    if args.session is not None:
        session = _get_session(store, args.session)
        wanted = getattr(args, "strategy", None)
        if wanted and wanted != session.strategy:
            raise CliError(
                f"session {session.id} uses the {session.strategy} strategy; switch it first "
                f"with `ctxscope strategy {session.id} {wanted}` (the switch is recorded)"
            )
        if getattr(args, "workspace", None):
            session = store.update_session(session.id or 0, workspace=str(args.workspace.resolve()))
    else:
        workspace = Path(getattr(args, "workspace", None) or os.getcwd()).resolve()
        if not workspace.is_dir():
            raise CliError(f"workspace {workspace} is not a directory")
        session = store.create_session(
            workspace=str(workspace), title=args.input[:60], strategy=settings.strategy
        )

    running: list[Any] = []

    def on_event(event: Event) -> None:
        try:
            show_event(event)
        except BrokenPipeError:
            # Nobody reads any more: end the round cleanly (interrupted), print nothing more.
            _silence_stdout()
            for agent in running:
                agent.cancel()

    def show_event(event: Event) -> None:
        if args.json:
            print(event.model_dump_json(), flush=True)
        elif isinstance(event, ToolStarted):
            print(f"→ {event.call.name} {json.dumps(event.call.input)}", file=sys.stderr)
        elif isinstance(event, ToolFinished):
            print(
                f"  {event.status}: {event.tokens_full} tokens seen, "
                f"{event.tokens_compressed} kept",
                file=sys.stderr,
            )
        elif isinstance(event, (RoundStarted, TextDelta)):
            pass
        elif event.type in (
            "compaction_started",
            "compaction_finished",
            "compaction_failed",
            "budget_warning",
            "notice",
            "retry_waiting",
            "error",
        ):
            print(f"… {event.model_dump_json()}", file=sys.stderr)

    agent = make_agent(store, session, settings, on_event, lease_wait=args.wait)
    running.append(agent)
    with agent.writing("round"), _cancel_on_signals(agent):
        store.update_session(
            agent.session_id, provider=agent.provider.name, model=agent.provider.model
        )
        outcome = agent.run(args.input)
    if args.json:
        print(
            json.dumps(
                {
                    "type": "result",
                    "session_id": agent.session_id,
                    "round_index": outcome.round_index,
                    "status": outcome.status.value,
                    "answer": outcome.answer,
                    "steps": outcome.steps,
                    "error": outcome.error,
                    "provider": agent.provider.name,
                    "model": agent.provider.model,
                },
                ensure_ascii=False,
            )
        )
    else:
        print(outcome.answer)
        print(f"(session {agent.session_id}, round {outcome.round_index})", file=sys.stderr)
    if outcome.status == RoundStatus.INTERRUPTED:
        return EXIT_INTERRUPTED
    return 0 if outcome.status == RoundStatus.FINISHED else EXIT_ERROR


@contextmanager
def _cancel_on_signals(agent: Any) -> Iterator[None]:
    """SIGINT and SIGTERM interrupt the round cleanly (its Bash command ends with it)."""

    def interrupt(signum: int, frame: object) -> None:
        agent.cancel()

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    "sessions": cmd_sessions,
    "show": cmd_show,
    "context": cmd_context,
    "compact": cmd_compact,
    "import": cmd_import,
    "export": cmd_export,
    "ask": cmd_ask,
    "strategy": cmd_strategy,
    "strategies": cmd_strategies,
    "uncompact": cmd_uncompact,
    "replay": cmd_replay,
    "pin": cmd_pin,
    "recall": cmd_recall,
}


if __name__ == "__main__":
    sys.exit(main())
