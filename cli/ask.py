"""``ask``: one round of the agent, headless, streaming its events (``--json``: one per
line, then a ``result`` line)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.arguments import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    SESSION_ID,
    CliError,
    Parents,
    Subcommands,
    UsageError,
    add_wait,
    checked,
    silence_stdout,
    workspace,
)
from cli.signals import on_signals

if TYPE_CHECKING:
    from engine.events import Event
    from engine.models import Session
    from engine.settings.config import Settings
    from engine.store import Store


def add_ask_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser("ask", parents=parents.with_json, help="run one round headless")
    p.add_argument("input", help="the user input")
    p.add_argument("--session", type=SESSION_ID, metavar="ID", help="continue this session")
    p.add_argument("--workspace", type=checked(workspace), default=argparse.SUPPRESS)
    p.add_argument(
        "--move-workspace",
        action="store_true",
        help="with --session: let --workspace change the session's recorded workspace",
    )
    p.add_argument("--model", default=argparse.SUPPRESS)
    p.add_argument("--strategy", default=argparse.SUPPRESS)
    p.add_argument("--allow-bash", action="store_true", help="let the agent run Bash")
    p.add_argument("--allow-edits", action="store_true", help="let the agent change files")
    add_wait(p)


def cmd_ask(args: argparse.Namespace, settings: Settings) -> int:
    import json

    from cli.common import get_session, make_agent, open_store, session_to_change
    from engine.events import RoundStarted, TextDelta, ToolFinished, ToolStarted
    from engine.models import RoundStatus
    from engine.settings.config import session_origin, workspace_folder
    from engine.settings.params import strategy_params
    from engine.terminal_text import json_printable, printable
    from engine.validation import workspace_refusal
    from tools.sandbox import choose

    store = open_store(args, settings)
    if args.session is not None:
        session = get_session(store, args.session)
        wanted = getattr(args, "strategy", None)
        if wanted and wanted != session.strategy:
            raise CliError(
                f"session {session.id} uses the {session.strategy} strategy; switch it first "
                f"with `ctxscope strategy {session.id} {wanted}` (the switch is recorded)"
            )
        wanted_workspace = getattr(args, "workspace", None)
        _check_move(session, wanted_workspace, args.move_workspace)  # before any fork is made
        session = session_to_change(store, session, args)
        session = _moved(store, session, wanted_workspace)
    else:
        workspace = workspace_folder(getattr(args, "workspace", None))
        if not workspace.is_dir():
            raise CliError(f"workspace {workspace} is not a directory")
        refused = workspace_refusal(workspace)
        if refused:
            raise UsageError(
                f"{workspace} cannot be a workspace ({refused}): run ctxscope from a project "
                "folder or give --workspace FOLDER"
            )
        session = store.create_session(
            workspace=str(workspace),
            title=args.input[:60],
            strategy=settings.strategy,
            params=strategy_params(settings, settings.strategy),
            origin=session_origin(settings),
        )

    running: list[Any] = []

    def on_event(event: Event) -> None:
        try:
            show_event(event)
        except BrokenPipeError:
            # Nobody reads any more: end the round cleanly (interrupted), print nothing more.
            silence_stdout()
            for agent in running:
                agent.cancel()

    def show_event(event: Event) -> None:
        if args.json:
            print(json_printable(event.model_dump_json()), flush=True)
        elif isinstance(event, ToolStarted):
            # The model names the tool (a recording's text can steer it): shown escaped.
            name = printable(event.call.name, one_line=True)
            print(f"→ {name} {json.dumps(event.call.input)}", file=sys.stderr)
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
            print(f"… {json_printable(event.model_dump_json())}", file=sys.stderr)

    agent = make_agent(store, session, settings, on_event, lease_wait=args.wait)
    running.append(agent)
    with agent.writing("round"), on_signals(agent.cancel):  # the round ends cleanly
        store.update_session(
            agent.session_id, provider=agent.provider.name, model=agent.provider.model
        )
        outcome = agent.run(args.input)
    sandbox = choose(settings.bash_sandbox)  # where Bash ran (tools.sandbox)
    if args.json:
        print(
            json_printable(
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
                        "sandbox": sandbox,
                        **({"fork": args.fork} if getattr(args, "fork", None) else {}),
                    },
                    ensure_ascii=False,
                )
            )
        )
    else:
        print(printable(outcome.answer))  # the model's text, from tool output too
        print(
            f"(session {agent.session_id}, round {outcome.round_index}, sandbox: {sandbox})",
            file=sys.stderr,
        )
    if outcome.status == RoundStatus.INTERRUPTED:
        return EXIT_INTERRUPTED
    return 0 if outcome.status == RoundStatus.FINISHED else EXIT_ERROR


def _check_move(session: Session, wanted: Path | None, move: bool) -> None:
    """Refused before any fork is made: a session without a workspace it may use (recorded
    by another agent, or one that names ``/`` or the home folder) given none — a recording
    never chooses the folder the agent works in (issue 29) — and a different workspace
    without ``--move-workspace`` (it would silently point the session's files elsewhere)."""
    from engine.session.workspace import session_workspace, why_no_workspace

    if session_workspace(session) is None:
        if wanted is None:
            raise UsageError(why_no_workspace(session))
        return
    if wanted is not None and str(wanted) != session.workspace and not move:
        raise UsageError(
            f"session {session.id} works in {session.workspace}; --workspace {wanted} would "
            "move it there: add --move-workspace to do so, or leave --workspace out"
        )


def _moved(store: Store, session: Session, wanted: Path | None) -> Session:
    """The session in ``wanted``, once :func:`_check_move` allowed it: a move asked for with
    ``--move-workspace``, or the first workspace of a session that had none it may use."""
    from engine.session.workspace import session_workspace

    if wanted is None or (session_workspace(session) and str(wanted) == session.workspace):
        return session
    return store.update_session(session.id or 0, workspace=str(wanted))
