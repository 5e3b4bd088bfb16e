"""Looking at sessions without changing them: ``sessions``, ``show`` and ``context``."""

from __future__ import annotations

import argparse
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from cli.arguments import (
    SESSION_ID,
    SESSION_REF,
    CliError,
    Parents,
    Subcommands,
    checked,
    row_id,
)

if TYPE_CHECKING:
    import threading
    from collections.abc import Callable
    from datetime import datetime

    from engine.compaction.policy import Plan
    from engine.context.sources import Breakdown
    from engine.figures import SessionFigures
    from engine.llm.base import ProviderRequest, ProviderResponse, StreamEvent
    from engine.models import Compaction, History, Session, SessionInfo
    from engine.recordings.own_agent import OwnAgentView
    from engine.session.core import AgentCore
    from engine.settings.config import Settings
    from engine.store import Store

LOST_NAMED = 5
"""Lost items ``show`` names per compaction and kind (``--json`` has them all)."""


def add_sessions_parser(sub: Subcommands, parents: Parents) -> None:
    sessions = sub.add_parser("sessions", parents=parents.with_json, help="list stored sessions")
    for flag, what in (
        ("--user", "made by this login name (stored with record_origin on)"),
        ("--machine", "made on this machine (host name; stored with record_origin on)"),
        ("--project", "working in this folder: its path, or its last part"),
    ):
        sessions.add_argument(flag, default=None, help=f"only the sessions {what}")


def cmd_sessions(args: argparse.Namespace, settings: Settings) -> int:
    from cli.common import emit, open_store
    from engine.figures import by_last_active
    from engine.recordings.figures import sessions_figures

    store = open_store(args, settings, read_only=True)
    every = store.list_sessions()
    infos = [i for i in every if _wanted(i.session, args)]
    figs = sessions_figures(
        store,
        [i.session for i in infos],
        settings,
        sums={i.session.id: (i.current_tokens, i.compactions) for i in infos if i.session.id},
        every=len(infos) == len(every),
    )
    infos = by_last_active(infos, figs)
    data = [
        {
            **info.session.model_dump(mode="json"),
            "rounds": info.rounds,
            "messages": info.messages,
            "current_tokens": info.current_tokens,
            "compactions": info.compactions,
            "started_at": _when(info.started_at, figs[info.session.id or 0]),
            "last_at": _when(info.last_at, figs[info.session.id or 0]),
            "cost": figures["cost"],
            "figures": figures,
        }
        for info in infos
        for figures in [figs[info.session.id or 0].to_json()]
    ]
    text = _sessions_table(infos, figs) if infos and not args.json else "no sessions yet"
    emit(args, data, text)
    return 0


def _when(at: datetime | None, fig: SessionFigures) -> str | None:
    """A round's time in ``sessions --json``: null before the first round, and for a
    recording that says no time (its stored times are the import's)."""
    return None if at is None or not fig.times_recorded else at.isoformat()


def _sessions_table(infos: list[SessionInfo], figs: dict[int, SessionFigures]) -> str:
    """``sessions``' table: every column piped; on a narrow terminal (80 columns) the last
    time, the window, the compactions and the rounds left out, in that order, before the
    title is cut (:mod:`cli.table`)."""
    from cli.table import Column, table, terminal_width

    shown = [(info, figs[info.session.id or 0]) for info in infos]
    dates = [_own_dates(info, fig) for info, fig in shown]
    columns = [
        Column("ID", [str(info.session.id) for info in infos], right=True),
        Column("STARTED", [start for start, _ in dates]),
        Column("LAST", [last for _, last in dates], drop=1),
        Column("AGENT", [one_line(fig.agent) for _, fig in shown]),
        Column("ROUNDS", [str(info.rounds) for info in infos], right=True, drop=4),
        Column(
            "CONTEXT",
            ["–" if fig.context_tokens is None else f"{fig.context_tokens:,}" for _, fig in shown],
            right=True,
        ),
        Column("WINDOW", [f"{fig.window:,}" for _, fig in shown], right=True, drop=2),
        Column("COMP", [str(fig.compactions) for _, fig in shown], right=True, drop=3),
        Column("COST", [fig.cost_text for _, fig in shown], right=True),
        Column("TITLE", [one_line(info.session.title) or "(untitled)" for info in infos]),
    ]
    return table(columns, terminal_width())


def _own_dates(info: SessionInfo, fig: SessionFigures) -> tuple[str, str]:
    """When the session itself began and last ran, in UTC (issue 39: ``sessions`` showed the
    time a recording was imported): ``2026-02-11 20:36`` and ``21:46`` within a day, the last
    with its date (``02-12 01:10``) on another; before its first round, when it was made;
    ``–`` for a recording that says no time (:func:`engine.figures.session_times`)."""
    from engine.figures import session_times

    start, last = session_times(fig, info.session, info.started_at, info.last_at)
    if start is None or last is None:
        return "–", "–"
    last_text = f"{last:%H:%M}" if last.date() == start.date() else f"{last:%m-%d %H:%M}"
    return f"{start:%Y-%m-%d %H:%M}", last_text


def _wanted(session: Session, args: argparse.Namespace) -> bool:
    """Does the session pass ``sessions``' filters (``--user``, ``--machine``, ``--project``)?"""
    user, machine, project = (getattr(args, n, None) for n in ("user", "machine", "project"))
    if user is not None and session.user != user:
        return False
    if machine is not None and session.machine != machine:
        return False
    folder = PurePath(session.workspace)
    return project is None or project in (session.workspace, folder.name)


def session_cost(store: Any, settings: Settings, session: Any) -> float | None:
    """What a session's model calls cost at list price (:class:`SessionFigures`' ``cost``):
    the calls an API billed, each at its own model's price, never the offline provider's
    local counts; None without such calls or without a price."""
    from engine.recordings.figures import session_figures

    cost = session_figures(store, session, settings).cost
    return None if cost is None else round(cost, 6)


def add_show_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser("show", parents=parents.with_json, help="a session as stored")
    p.add_argument(
        "session",
        type=SESSION_REF,
        metavar="ID",
        help="its number, or a recording's file, or the recording agent's own session id",
    )
    p.add_argument(
        "--observations",
        action="store_true",
        help="also print each tool result's full text, as the model saw it",
    )
    p.add_argument(
        "--what-ifs",
        action="store_true",
        help="a proxied session: its conversation replayed under each strategy (docs/proxy.md)",
    )
    p.add_argument(
        "--request",
        type=checked(row_id, "request number"),
        metavar="N",
        help="a proxied session: request #N's body exactly as sent (docs/proxy.md)",
    )
    p.add_argument(
        "--diff",
        type=checked(row_id, "request number"),
        metavar="N",
        help="a proxied session: the text request #N changed since the request before",
    )


def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    from cli.common import emit, find_session, open_store
    from engine.messages.render import render_react
    from engine.recordings.figures import recorded_window, session_figures
    from engine.settings.params import describe_params
    from engine.terminal_text import plural, printable

    store = open_store(args, settings, read_only=True)
    session = find_session(store, args.session)
    sid = session.id or 0
    if getattr(args, "request", None) is not None or getattr(args, "diff", None) is not None:
        return show_request(args, store.exchanges(sid))
    history = store.history(sid)
    rounds = store.rounds(sid)
    compactions = store.compactions(sid)
    segments = store.segments(sid)
    todos = store.get_todos(sid)
    data: dict[str, Any] = {
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
        "subagents": [
            {"session_id": i.session.id, "agent_id": i.session.agent_id}
            for i in store.list_sessions()
            if i.session.parent_session_id == sid
        ],
    }
    fig = session_figures(store, session, settings)
    data["figures"] = fig.to_json()
    # The numbers it plans with: those stored, a recording in its own agent's window (the one
    # `context`, the workbench and replay plan in: planning_settings)
    params = session.params
    window = recorded_window(store, session, settings, fig)
    if params is not None and window is not None:
        params = params.model_copy(update={"context_window": window})
    data["plans_with"] = None if params is None else params.model_dump(mode="json")
    cost_line = ""
    if session.recorded and data["usage"]:
        # What the recorded calls cost at list price, each cache write by its lifetime, each
        # call at its own model's price of its day; no figure for a model without a price.
        data["recorded_cost"] = data["figures"]["cost"]
        data["recorded_cost_note"] = fig.cost_note
        cost_line = (
            f"the recorded calls cost {fig.cost_text} ({fig.cost_note})"
            if fig.cost is not None
            else fig.cost_note
        )
    elif session.recorded:
        from engine.recordings.own_agent import own_view

        view = own_view(fig, 0, store.first_message(sid))
        if view.totals:
            # A run that records its totals only (SWE-agent's model_stats): its own figures,
            # said as such; ctxscope prices no call it does not have.
            data["recorded_totals"] = dict(view.totals)
            cost_line = view.totals_line
    observations = store.observations(sid) if getattr(args, "observations", False) else []
    if observations:
        data["observations"] = [o.model_dump(mode="json") for o in observations]
    exchanges = store.exchanges(sid)
    if exchanges:  # a session recorded by `ctxscope proxy`: its exact requests (docs/proxy.md)
        from engine.proxy.report import request_lines, request_report

        data["requests"] = request_report(exchanges, settings)
        if getattr(args, "what_ifs", False):
            from cli.common import CliError
            from engine.proxy.whatif import NoConversation, what_if_table

            try:
                data["what_ifs"] = what_if_table(exchanges, settings)
            except NoConversation as exc:
                raise CliError(f"session {sid}: {exc}; nothing to replay") from None
    lines = [
        f"session {session.id}: {one_line(session.title) or '(untitled)'}",
        f"workspace {one_line(session.workspace)}"
        + (
            ""
            if session.workspace_given
            else " (recorded by another agent; not used until "
            f"given: ask --session {session.id} --workspace FOLDER)"
        )
        + f"  provider {one_line(session.provider)}  "
        f"model {one_line(session.model)}  strategy {one_line(session.strategy)}",
        f"plans with {describe_params(params)}",
        f"{plural(len(rounds), 'round')} ({sum(r.archived for r in rounds)} archived), "
        f"{plural(len(history.messages), 'message')} in history, "
        f"{plural(len(compactions), 'compaction')}",
        printable(fig.context_line(), one_line=True),
        *([printable(cost_line, one_line=True)] if cost_line else []),
        "",
        render_react(history),
    ]
    data["losses"], data["degenerate"] = [], []
    if compactions:  # what a compaction lost, and its flags: loaded for a session that has one
        lines += compaction_lines(store, sid, compactions, settings, data)
    if exchanges:
        lines.extend(request_lines(data["requests"]))
    if "what_ifs" in data:
        from engine.proxy.whatif import what_if_lines

        lines.extend(what_if_lines(data["what_ifs"]))
    for o in observations:
        lines.append(
            f"\n--- observation {one_line(o.tool_use_id)} ({one_line(o.tool_name)}), "
            f"round {o.round_index} "
            f"step {o.step}, {o.tokens_full} tokens ---\n{o.text}"
        )
    if todos:
        lines.append("todo: " + "; ".join(f"[{t.status}] {t.content}" for t in todos))
    emit(args, data, "\n".join(lines))
    return 0


def compaction_lines(
    store: Any, sid: int, compactions: list[Any], settings: Settings, data: dict[str, Any]
) -> list[str]:
    """``show``'s line per compaction, with what it lost by name and its degenerate flags
    (``data``'s ``losses`` and ``degenerate`` filled in)."""
    from engine.compaction.losses import lost_lines, session_losses
    from engine.recordings.degenerate import session_flags

    losses = {loss.compaction_id: loss for loss in session_losses(store, sid)}
    data["losses"] = [loss.as_json() for loss in losses.values()]
    flags = session_flags(store, sid, settings)
    data["degenerate"] = [f.as_json() for f in flags]
    lines: list[str] = []
    for c in compactions:
        lines.append(compaction_line(c))
        if c.id in losses and c.undone_at is None:
            # What it lost by name (the figure line above stays as it is); --json has them all.
            lines += [f"  {line}" for line in lost_lines(losses[c.id], LOST_NAMED)]
        lines += [f"  degenerate: {f.line()}" for f in flags if f.compaction_id == c.id]
    return lines


def compaction_line(c: Compaction) -> str:
    """``show``'s line for one compaction: strategy, trigger, outcome, sizes, what the summary
    keeps, and whether the recorded agent made it."""
    from engine.compaction.ledger import fidelity_line
    from engine.recordings.base import recorded_compaction

    return (
        f"compaction {c.id} ({c.strategy}, {c.placement or 'no summary'}): {c.trigger} "
        f"{c.outcome} {c.tokens_before} → {c.tokens_after} tokens, {c.rounds_compacted} "
        f"rounds / {c.messages_compacted} messages archived"
        + (f" ({c.error})" if c.error else "")
        + (f"; the summary keeps {fidelity_line(c.fidelity)}" if c.fidelity else "")
        + (
            "; recorded: made by the original agent"
            + "".join(f" ({w})" for w in [recorded_compaction(c.stats)] if w)
            if c.stats.get("recorded")
            else ""
        )
    )


def show_request(args: argparse.Namespace, exchanges: list[Any]) -> int:
    """``show ID --request N`` (the body as sent) or ``--diff N`` (what it changed)."""
    from cli.common import emit
    from engine.proxy.request_text import (
        NoSuchRequest,
        diff_text,
        find,
        request_diff,
        request_json,
        request_text,
    )

    number = args.request if args.request is not None else args.diff
    try:
        previous, exchange = find(exchanges, number)
    except NoSuchRequest as exc:
        raise CliError(f"session {args.session}: {exc}") from None
    if args.request is not None:
        emit(args, request_json(exchange), request_text(exchange))
    else:
        diff = request_diff(previous, exchange)
        emit(args, diff, diff_text(diff))
    return 0


def add_context_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "context", parents=parents.with_json, help="the exact request the next step would send"
    )
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument("--input", default="", help="a next user input to include")


def cmd_context(args: argparse.Namespace, settings: Settings) -> int:
    import json

    from cli.common import emit, get_session, open_store
    from engine.context.builder import LAYERS
    from engine.context.sources import session_breakdown
    from engine.recordings.figures import session_figures
    from engine.recordings.hidden import hidden_prefix
    from engine.recordings.own_agent import own_view

    store = open_store(args, settings, read_only=True)
    session = get_session(store, args.session)
    # The history and observations as stored, read once for the agent, the hidden prefix and
    # the breakdown: the agent's copy is shared only when it has nothing to count (it fills a
    # message's missing count; the other two read the stored figures).
    history = store.history(session.id or 0)
    counted = all(m.tokens is not None for m in history.messages) and all(
        s.tokens is not None for s in history.summaries
    )
    agent = request_core(store, session, settings, history if counted else None)
    settings = agent.settings  # the session's own numbers
    built, budget = agent.preview_and_budget(args.input)
    plan = agent.strategy.plan(agent.policy_view(args.input))
    request = built.request.model_dump(mode="json")  # printed as it is, text and --json
    data: dict[str, Any] = {
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
        "request": request,
    }
    observations = store.observations(session.id or 0) if session.recorded else None
    hidden = hidden_prefix(store, session.id or 0, history, observations)
    conversation = sum(built.layers[name] for name in LAYERS[3:])
    fig = session_figures(store, session, settings)
    data["figures"] = fig.to_json()
    own = fig if session.recorded else None
    view = (
        None
        if own is None
        else own_view(
            own, 0 if hidden is None else hidden.tokens, store.first_message(session.id or 0)
        )
    )
    if view is not None:
        recorded_context(data, view)
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
    tool_names = [t.get("name", "") for t in built.request.tools]
    breakdown = session_breakdown(
        store, session, view, built.layers, tool_names, history, observations
    )
    data["by_source"] = breakdown.as_json()
    width = max(len(n) for n in LAYERS)
    shown = {layer["name"]: layer["tokens"] for layer in data["layers"]}
    lines = [own_line(own)] if own is not None else []
    if view is not None and view.totals:  # a run that records its totals only: said as its own
        data["recorded"]["totals"] = dict(view.totals)
        lines.append(view.totals_line)
    lines += [f"{name:<{width}}  {shown[name]:>8}" for name in LAYERS]
    lines.append(
        f"{'total':<{width}}  {data['total']:>8}   (threshold {settings.threshold_tokens:,}"
        f" of {settings.context_window:,})"
        + (
            ""
            if own is None
            else f"; a what-if: {who(own)} compacts at its own point"
            if own.auto_compact_at is not None
            else f"; a what-if: {who(own)}'s own auto-compact point is not known"
        )
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
    lines.append(source_line(breakdown))
    lines.append("")
    lines.append(json.dumps(request, ensure_ascii=False, indent=2))
    emit(args, data, "\n".join(lines))
    return 0


def request_core(
    store: Store, session: Session, settings: Settings, history: History | None = None
) -> AgentCore:
    """What an agent over ``session`` (:func:`cli.common.make_agent`) holds and would send,
    without the agent: ``context`` runs no round, so it loads neither the round loop nor the
    tools' code (issue 44). A read-only store: the agent would close no crashed round.
    ``history``: the session's, just read from the store."""
    from engine.session.core import AgentCore
    from engine.session.workspace import session_workspace

    assert store.read_only  # the agent plans in the session's window (planning_settings)
    provider = SendsNothing(settings.model)
    workspace = session_workspace(session)
    return AgentCore(store, session, settings, provider, workspace, stored_history=history)


class SendsNothing:
    """The provider of an agent that only looks: ``context`` builds the request and sends
    nothing, so it makes no provider (:func:`engine.llm.factory.make_provider`: the offline
    rules, or the Anthropic client's wrapper, and their modules). Nothing the request or the
    plan is built from asks the provider; a call is a bug, and says so."""

    name = "none"
    is_model = False

    def __init__(self, model: str) -> None:
        self.model = model

    def complete(
        self,
        request: ProviderRequest,
        on_event: Callable[[StreamEvent], None],
        cancel: threading.Event | None = None,
    ) -> ProviderResponse:
        raise AssertionError("`ctxscope context` sends no request")

    def ask_text(
        self,
        system: str,
        text: str,
        timeout: float,
        *,
        model: str | None = None,
        retries: int | None = None,
    ) -> str:
        raise AssertionError("`ctxscope context` asks for no summary")


def source_line(b: Breakdown) -> str:
    """``by source (exact): system prompt 3,100 · MCP github 4,000 (3 tools) · …``."""
    from engine.terminal_text import printable

    parts = []
    for s in sorted(b.sources, key=lambda s: -s.tokens)[:12]:
        items = f" ({len(s.items)} tools)" if s.kind in ("mcp", "tools") and s.items else ""
        parts.append(f"{s.name} {s.tokens:,}{items}")
    return printable(f"by source ({b.label}, {b.total:,}): " + " · ".join(parts), one_line=True)


def one_line(text: str) -> str:
    """A recorded title or name for one line of text output: newlines shown escaped too (the
    rest of the text is made printable as a whole by :func:`cli.common.emit`)."""
    from engine.terminal_text import printable

    return printable(text, one_line=True)


def who(fig: SessionFigures) -> str:
    """The agent in words: ``Claude Code`` or ``the recorded agent``."""
    return fig.agent or "the recorded agent"


def recorded_context(data: dict[str, Any], view: OwnAgentView) -> None:
    """``context --json`` of a recorded session: its own agent's figures first (``recorded``:
    window, auto-compact point, context as its last call reported it — the session's
    :class:`SessionFigures`); L1 is that agent's own prompt and tools as recorded (the hidden
    prefix), not ctxscope's system prompt; ctxscope's threshold and request stay as
    what-ifs."""
    from dataclasses import asdict

    own = view.figures
    figures = own.to_json()
    data["recorded"] = {
        "agent": figures["agent"],
        "model": own.model,
        "context_window": own.window,
        "auto_compact_at": own.auto_compact_at,
        "context_tokens": own.context_tokens,
        "context_source": own.context_source,
        "until_auto_compact": own.until_auto_compact,
        "compactions": own.compactions,
        "cost": figures["cost"],
        "cost_note": own.cost_note,
        # the system prompt and tools as the recording lists them: line, counts, tools' names
        "prompt": None if view.prompt is None else asdict(view.prompt),
    }
    data["auto_compact_at"] = own.auto_compact_at
    what_if_layers = [dict(layer) for layer in data["layers"]]
    system, tools = view.prefix_parts
    for layer in data["layers"]:
        if layer["name"] == "L1 system" and tools:
            layer["tokens"] = system
            layer["what"] = (
                f"{who(own)}'s own system prompt and the rest it sent around the conversation "
                "(first prompt − transcript − its tools)"
            )
        elif layer["name"] == "L1 system":
            layer["tokens"] = system
            layer["what"] = f"{who(own)}'s own prompt and tools (first prompt − transcript)"
        elif layer["name"] == "L1 tools" and tools and view.prompt is not None:
            layer["tokens"] = tools
            layer["what"] = (
                f"its {len(view.prompt.tools)} tools as the recording holds them (line "
                f"{view.prompt.line}), counted by ctxscope"
            )
        elif layer["name"] == "L1 tools":
            layer["tokens"] = 0
            layer["what"] = "in L1 system: the recording does not tell them apart"
    data["total"] = sum(layer["tokens"] for layer in data["layers"])
    data["what_if"] = {
        "strategy": data["strategy"]["name"],
        "threshold": data.pop("threshold"),
        "layers": what_if_layers,
        "note": "ctxscope's own strategy, had it run this session; `request` is the request "
        "ctxscope would send (its own system prompt and tools), not the recorded one",
    }


def own_line(own: SessionFigures) -> str:
    """The first line of ``context`` for a recorded session: its own agent's figures."""
    from engine.terminal_text import printable

    source = (
        "no call's usage recorded"  # SWE-agent: only the run's totals (info.model_stats)
        if own.context_tokens is None
        else "its last API call's input counted by ctxscope: the agent records none"
        if own.context_estimated
        else "its last API call as recorded"
    )
    model = f" ({own.model})" if own.model else ""
    return printable(
        f"recorded by {who(own)}{model}: {own.context_line()} ({source})", one_line=True
    )


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
