"""Compacting by hand and what goes with it: ``compact`` (and its dry run), ``uncompact``,
``recall`` and ``pin``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from cli.arguments import (
    EXIT_ERROR,
    SESSION_ID,
    CliError,
    Parents,
    Subcommands,
    UsageError,
    add_wait,
    checked,
    count,
    row_id,
)

if TYPE_CHECKING:
    from engine.events import Event
    from engine.settings.config import Settings


def add_compact_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser("compact", parents=parents.with_json, help="compact a session now")
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument("--focus", help="what the summary must keep")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="show what would be archived and the draft summary; change nothing",
    )
    add_wait(p)


def cmd_compact(args: argparse.Namespace, settings: Settings) -> int:
    from cli.common import emit, get_session, make_agent, open_store, session_to_change
    from engine.compaction.ledger import fidelity_line
    from engine.context.history import CompactionResult
    from engine.models import Trigger

    store = open_store(args, settings)
    session = get_session(store, args.session)

    def progress(event: Event) -> None:
        if not args.json:
            print(f"… {event.type.replace('_', ' ')}", file=sys.stderr)

    if args.dry_run:  # changes nothing: a recording is looked at, not forked
        return _dry_run(args, make_agent(store, session, settings, progress, lease_wait=args.wait))
    if session.recorded:
        # a fork is made for a change only: with nothing to compact there is none (issue 39)
        looked = make_agent(store, session, settings, lease_wait=args.wait)
        draft = looked.prepare_compaction(focus=args.focus, dry_run=True)
        if isinstance(draft, CompactionResult):
            reason = draft.compaction.error
            emit(args, {"compaction": None, "reason": reason}, f"nothing compacted: {reason}")
            return 0
    session = session_to_change(store, session, args)
    agent = make_agent(store, session, settings, progress, lease_wait=args.wait)
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
    from cli.common import emit
    from engine.compaction.ledger import fidelity_line
    from engine.context.history import CompactionResult
    from engine.messages.tokens import count_text

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


def add_uncompact_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "uncompact",
        parents=parents.with_json,
        help="undo the latest compaction: its messages return to history",
    )
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument(
        "--compaction",
        type=checked(row_id, "compaction id"),
        metavar="N",
        help="the compaction to undo (must be the latest)",
    )


def cmd_uncompact(args: argparse.Namespace, settings: Settings) -> int:
    from cli.common import emit, get_session, make_agent, open_store, session_to_change

    store = open_store(args, settings)
    session = get_session(store, args.session)
    compaction = args.compaction
    done = [
        c.id
        for c in store.compactions(args.session)
        if c.outcome in ("success", "fallback") and c.undone_at is None
    ]
    if session.recorded and (not done or (compaction is not None and compaction not in done)):
        # refused here, before a fork is made for nothing
        what = "no compaction to undo" if not done else f"no compaction {compaction} to undo"
        raise CliError(f"session {session.id} has {what} (see `ctxscope show`)")
    session = session_to_change(store, session, args)
    if args.forked is not None and compaction is not None:
        compaction = args.forked.compactions[compaction]  # the fork's copy of it
    agent = make_agent(store, session, settings)
    undone = agent.uncompact(compaction)
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


def add_recall_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "recall",
        parents=parents.with_json,
        help="search a session's archived segments (what the Recall tool sees)",
    )
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument("query", help="the words to look for")
    p.add_argument("--limit", type=checked(count), default=5, help="passages to return (default 5)")


def cmd_recall(args: argparse.Namespace, settings: Settings) -> int:
    from cli.common import emit, get_session, open_store
    from tools.recall import MAX_LIMIT as RECALL_MAX_LIMIT
    from tools.recall import hit_line

    if not 1 <= args.limit <= RECALL_MAX_LIMIT:
        raise UsageError(f"--limit must be between 1 and {RECALL_MAX_LIMIT}, got {args.limit}")
    store = open_store(args, settings, read_only=True)
    get_session(store, args.session)
    hits = store.search_archive(args.session, args.query, args.limit)
    data = {"session_id": args.session, "query": args.query, "hits": [h.model_dump() for h in hits]}
    text = "\n".join(hit_line(h.model_dump()) for h in hits) or (
        f'no archived message of session {args.session} matches "{args.query}"'
    )
    emit(args, data, text)
    return 0


def add_pin_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "pin", parents=parents.with_json, help="pin a message or a round: never archived"
    )
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument("target", metavar="MSG|rN", help="a message id, or rN for round N")
    p.add_argument("--unpin", action="store_true", help="unpin instead")


def cmd_pin(args: argparse.Namespace, settings: Settings) -> int:
    from cli.common import (
        emit,
        get_session,
        make_agent,
        open_store,
        session_to_change,
        stderr_warnings,
    )
    from engine.models import PROXY_PROVIDER

    store = open_store(args, settings)
    session = get_session(store, args.session)
    history = store.history(args.session).messages
    target = args.target
    if target.startswith("r") and target[1:].isdigit():
        ids = [m.id or 0 for m in history if m.meta.round == int(target[1:])]
        what = f"round {target[1:]}"
    elif target.isdigit():
        ids = [m.id or 0 for m in history if m.id == int(target)]
        what = f"message {target}"
    else:
        raise CliError(f"pin what? {target!r} is neither a message id nor rN (a round)")
    if not ids:
        raise CliError(f"session {session.id} has no {what} in history (see `ctxscope show`)")
    if session.provider == PROXY_PROVIDER:
        # A proxied session's pins steer the agent's next compaction (`--steer pins`): they
        # are made in place; the recording's messages themselves do not change.
        changed = store.pin(args.session, ids, pinned=not args.unpin)
    else:
        session = session_to_change(store, session, args)
        if args.forked is not None:
            ids = [args.forked.messages[i] for i in ids]  # the fork's copies
        agent = make_agent(store, session, settings, stderr_warnings)
        changed = agent.pin(ids, pinned=not args.unpin)
    data = {"session_id": session.id, "messages": ids, "pinned": not args.unpin, "changed": changed}
    verb = "unpinned" if args.unpin else "pinned"
    emit(args, data, f"{verb} {what} ({len(ids)} messages, {changed} changed)")
    return 0
