"""The headless command line: ``ctxscope sessions | show | context | compact | import | export |
ask | strategy | strategies | watch | proxy | run``.

Every subcommand but ``export`` (which writes the format asked for) takes ``--json`` and then
prints one JSON document (``ask --json``: one event per line, then a ``result`` line); the
shapes are documented in docs/cli.md. Errors a user can meet (unknown session, unreadable file,
bad option or setting) print one line on stderr and exit non-zero. Without a subcommand, the
console script opens the workbench (``tui``); this package never imports it —
:mod:`cli.workbench` passes it in as ``run_tui``.

This module is the entry point: the parser and the dispatch. Each group of subcommands lives in
its own module (:mod:`cli.look`, :mod:`cli.compacting`, :mod:`cli.strategies`,
:mod:`cli.recordings`, :mod:`cli.ask`), imported only when one of its commands runs, so a
command pays at start-up for what it uses and no more.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli import ready_for_interrupts

# Only the light part at start: ``--help`` and a bad argument are answered before the engine,
# pydantic or Textual is imported (tests/cli/test_startup.py, bench/bench_startup.py).
from cli.arguments import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    STORED,
    CliError,
    Parser,
    UsageError,
    add_wait,
    checked,
    count,
    database_path,
    output_file,
    resume_target,
    row_id,
    session_ref,
    silence_stdout,
    window,
    workspace,
)

if TYPE_CHECKING:
    from engine.settings.config import Settings

SESSION_ID = checked(session_ref)
"""A session id argument: a whole number within SQLite's range, or an agent's own session id
(a UUID: a proxied session, found by it when the command runs), else argparse's one line."""


def session_reference(text: str) -> int | str:
    """A session as the user names it: its number, or a recording's file or the recording
    agent's own session id (looked up once the database is open)."""
    if re.fullmatch(r"\s*[+-]?\d+\s*", text):  # a number: a row id, or refused as one
        number: int = row_id(text)
        return number
    if not text.strip():
        raise ValueError("give a session number, a recording's file or its session id")
    return text


SESSION_REF = checked(session_reference)
"""``show``'s session: a number (as :data:`SESSION_ID`), else a file or an agent's id."""

Command = Callable[[argparse.Namespace, "Settings"], int]

EXPORT_FORMATS = ("anthropic-jsonl", "markdown", "html")
"""``export --format``'s choices: :data:`engine.recordings.export.FORMATS`, written out so that
every command does not import the exporter to build the parser (a test checks they agree)."""

COMMANDS: dict[str, str] = {
    "sessions": "look",
    "show": "look",
    "context": "look",
    "compact": "compacting",
    "uncompact": "compacting",
    "recall": "compacting",
    "pin": "compacting",
    "import": "recordings",
    "export": "recordings",
    "ask": "ask",
    "strategy": "strategies",
    "strategies": "strategies",
    "replay": "strategies",
    "watch": "watch",
    "proxy": "proxy",
    "run": "proxy",
    "report": "report",
    "statusline": "statusline",
    "steer-check": "proxy",
    "check": "check",
}
"""Each subcommand and the module of ``cli`` that runs it (as ``cmd_<name>``)."""


def command(name: str) -> Command:
    """The function that runs subcommand ``name``, its module imported now."""
    module = importlib.import_module(f"cli.{COMMANDS[name]}")
    run: Command = getattr(module, f"cmd_{name.replace('-', '_')}")
    return run


EXAMPLES: dict[str, str] = {
    "sessions": "ctxscope sessions --project my-app --json",
    "show": "ctxscope show 12 --observations   (or: ctxscope show ~/.claude/projects/P/ID.jsonl)",
    "context": "ctxscope context 12",
    "compact": "ctxscope compact 12 --focus 'the failing test' --dry-run",
    "uncompact": "ctxscope uncompact 12",
    "pin": "ctxscope pin 12 r3",
    "import": "ctxscope import ~/.claude/projects/P/ID.jsonl   (no path: your whole history)",
    "report": "ctxscope report --since 7d --by project",
    "export": "ctxscope export 12 --format markdown > session.md",
    "strategy": "ctxscope strategy 12 masking --set masking.keep_last_observations=5",
    "strategies": "ctxscope strategies",
    "replay": "ctxscope replay 12 --strategy all --window 32000",
    "recall": "ctxscope recall 12 'TypeError'",
    "watch": "ctxscope watch ~/.claude/projects/P/ID.jsonl",
    "proxy": "ctxscope proxy --port 8787   (then ANTHROPIC_BASE_URL=http://127.0.0.1:8787)",
    "run": "ctxscope run -- claude -p 'fix the failing test'",
    "ask": "ctxscope ask 'list the Python files' --workspace . --allow-bash",
}
"""One example per subcommand, under its ``--help`` (a test runs each one's ``--help``)."""


def described(sub: Any) -> None:
    """Every subcommand's ``--help`` opens with what it does (its one-line help) and ends
    with an example (issue 39: they had neither)."""
    add_parser = sub.add_parser

    def add(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs.setdefault("description", kwargs.get("help"))
        if name in EXAMPLES:
            kwargs.setdefault("epilog", f"example:\n  {EXAMPLES[name]}")
            kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        parser: argparse.ArgumentParser = add_parser(name, **kwargs)
        return parser

    sub.add_parser = add


def build_parser() -> argparse.ArgumentParser:
    common = Parser(add_help=False)
    common.add_argument(
        "--db",
        type=checked(database_path),
        default=argparse.SUPPRESS,
        help="database file, or postgresql://user@host:port/dbname (env CTXSCOPE_DB)",
    )
    common.add_argument(
        "--config", type=Path, default=argparse.SUPPRESS, help="settings file (ctxscope.toml)"
    )
    as_json = Parser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print JSON (shapes: docs/cli.md)")

    parser = Parser(
        prog="ctxscope",
        description="See and steer an LLM agent's context. Without a command: the workbench.",
        parents=[common],
    )
    parser.add_argument(
        "--workspace", type=checked(workspace), help="the agent's working directory"
    )
    parser.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        type=checked(resume_target),
        metavar="ID",
        help="open a stored session (the latest without ID)",
    )
    parser.add_argument("--model", help="Anthropic model name, or 'offline'")
    parser.add_argument(
        "--strategy", help="compaction strategy of a new session (default: layered)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    described(sub)

    sessions = sub.add_parser("sessions", parents=[common, as_json], help="list stored sessions")
    for flag, what in (
        ("--user", "made by this login name (stored with record_origin on)"),
        ("--machine", "made on this machine (host name; stored with record_origin on)"),
        ("--project", "working in this folder: its path, or its last part"),
    ):
        sessions.add_argument(flag, default=None, help=f"only the sessions {what}")
    p = sub.add_parser("show", parents=[common, as_json], help="a session as stored")
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
    p = sub.add_parser(
        "steer-check",
        parents=[common, as_json],
        help="a session's requests under steering rules against a model of the prompt cache, "
        "beside them passed through (docs/proxy.md)",
    )
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument(
        "--rules",
        type=checked(steer_rules),
        default=("dups", "stale", "pins"),
        metavar="RULES",
        help="dups, stale, pins (comma-separated) or all (default: all)",
    )
    p.add_argument(
        "--stale-turns",
        type=checked(count),
        default=10,
        metavar="N",
        help="a tool result older than N assistant turns is stale (default 10)",
    )
    p.add_argument(
        "--horizon",
        type=checked(share),
        default=0.25,
        metavar="H",
        help="the stale rule expects H times as many more requests as the session has had "
        "(default 0.25; 0: it clears only when the cache is written again anyway)",
    )
    p = sub.add_parser(
        "context", parents=[common, as_json], help="the exact request the next step would send"
    )
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument("--input", default="", help="a next user input to include")
    p = sub.add_parser("compact", parents=[common, as_json], help="compact a session now")
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument("--focus", help="what the summary must keep")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="show what would be archived and the draft summary; change nothing",
    )
    add_wait(p)
    p = sub.add_parser(
        "uncompact",
        parents=[common, as_json],
        help="undo the latest compaction: its messages return to history",
    )
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument(
        "--compaction",
        type=checked(row_id, "compaction id"),
        metavar="N",
        help="the compaction to undo (must be the latest)",
    )
    p = sub.add_parser(
        "pin", parents=[common, as_json], help="pin a message or a round: never archived"
    )
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument("target", metavar="MSG|rN", help="a message id, or rN for round N")
    p.add_argument("--unpin", action="store_true", help="unpin instead")
    p = sub.add_parser(
        "import",
        parents=[common, as_json],
        help="store recorded sessions: Claude Code, Codex CLI, Gemini CLI, OpenHands, aider, "
        "Anthropic-messages JSONL, mini-swe-agent / SWE-agent trajectories, or a directory "
        "of them",
    )
    p.add_argument(
        "file",
        type=Path,
        metavar="FILE|DIR",
        nargs="?",
        help="without it: every agent's default folders, incremental (docs/cli.md)",
    )
    p.add_argument(
        "--workspace",
        type=checked(workspace),
        default=argparse.SUPPRESS,
        help="the folder its tools work in (default: the folder the recording names)",
    )
    p.add_argument(
        "--hook",
        action="store_true",
        help="read a Claude Code hook's JSON on stdin (SessionEnd) and import the session it "
        "names (docs/importing.md#a-history-that-stays)",
    )
    p.add_argument(
        "--folder",
        type=Path,
        action="append",
        metavar="DIR",
        help="without FILE: read this folder too (aider histories; repeatable)",
    )
    p.add_argument(
        "--jobs", type=checked(count), default=None, help="processes parsing (default: every core)"
    )
    p.add_argument(
        "--progress", action="store_true", help="show progress on stderr even off a terminal"
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="a folder or a file of several sessions: one line per session (default: one line)",
    )
    p = sub.add_parser(
        "report",
        parents=[common, as_json],
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
    sub.add_parser(
        "check",
        parents=[common, as_json],
        help="check the database file's integrity (every page read; nothing written)",
    )
    p = sub.add_parser(
        "export",
        parents=[common],
        help="write a session as Anthropic-messages JSON lines (re-importable), Markdown, or an "
        "HTML page (one file, no script: the conversation, compactions and what each lost, "
        "the context over time, the cost)",
    )
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument("--format", choices=EXPORT_FORMATS, default="anthropic-jsonl")
    p.add_argument(
        "--include-archived",
        action="store_true",
        help="also write the messages compactions archived (before their summaries)",
    )
    p.add_argument(
        "-o", "--output", type=checked(output_file), metavar="FILE", help="write here, not stdout"
    )
    p = sub.add_parser(
        "strategy",
        parents=[common, as_json],
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
    sub.add_parser(
        "strategies", parents=[common, as_json], help="the compaction strategies and their parts"
    )
    p = sub.add_parser(
        "replay",
        parents=[common, as_json],
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
    p = sub.add_parser(
        "recall",
        parents=[common, as_json],
        help="search a session's archived segments (what the Recall tool sees)",
    )
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument("query", help="the words to look for")
    p.add_argument("--limit", type=checked(count), default=5, help="passages to return (default 5)")
    p = sub.add_parser(
        "watch",
        parents=[common],
        help="follow a Claude Code session while its agent works (see docs/watch.md)",
    )
    p.add_argument(
        "path",
        type=Path,
        nargs="?",
        metavar="PATH",
        help="a session file or a project folder (default: the newest session)",
    )
    p.add_argument("--jsonl", action="store_true", help="one JSON object per update, no screen")
    p.add_argument(
        "--session", type=SESSION_ID, metavar="ID", help="follow a ctxscope session (read-only)"
    )
    add_proxy_commands(sub, common)
    p = sub.add_parser(
        "statusline",
        parents=[common],
        help="one line for Claude Code's statusLine: context, until auto-compact, cost "
        "(the status JSON on stdin; docs/cli.md#statusline)",
    )
    p.add_argument("--wait", action="store_true", help="read the session before printing")
    p = sub.add_parser("ask", parents=[common, as_json], help="run one round headless")
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
    return parser


STORE_NOTHING_WHEN_INTERRUPTED = frozenset(
    {"sessions", "show", "context", "strategies", "recall", "export", "import", "replay", "report"}
)
"""Commands an interrupt leaves nothing stored by: they only read, or store in one transaction
that an interrupt rolls back (``import``), or store nothing (``replay``, which also stops its
workers first: engine/replay/parallel.py). ``ask`` and ``watch`` end on SIGINT themselves and
say what they kept."""


def interrupted(command: str | None) -> str:
    """The one line Ctrl+C ends a command with (exit 130, no traceback)."""
    if STORED:
        return f"ctxscope: interrupted; kept: {', '.join(STORED)}"
    if command is None or command in STORE_NOTHING_WHEN_INTERRUPTED:
        return "ctxscope: interrupted; nothing stored"
    return "ctxscope: interrupted; what it stored before stays (see `ctxscope sessions`)"


def add_proxy_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """``proxy`` and ``run`` (docs/proxy.md)."""
    for name, port, help_text in (
        ("proxy", 8787, "record every Messages API request an agent sends (docs/proxy.md)"),
        ("run", 0, "run a command with its Messages API requests recorded through the proxy"),
    ):
        p = sub.add_parser(name, parents=[common], help=help_text)
        p.add_argument(
            "--port",
            type=checked(port_number),
            default=port,
            help=f"port on 127.0.0.1 (default {port or 'a free one'})",
        )
        p.add_argument(
            "--upstream",
            default="https://api.anthropic.com",
            help="the API to forward to (default https://api.anthropic.com)",
        )
        p.add_argument("--jsonl", action="store_true", help="print one JSON line per request")
        p.add_argument(
            "--steer",
            type=checked(steer_rules),
            default=(),
            metavar="RULES",
            help="rewrite requests in flight, cache-aware: dups, stale, pins or all "
            "(default: none, every request passes as sent; docs/proxy.md)",
        )
        if name == "run":
            p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD …")


def steer_rules(text: str) -> tuple[str, ...]:
    """``--steer`` / ``--rules``: steering rules by name (the engine's list, imported now)."""
    rules: tuple[str, ...] = importlib.import_module("engine.proxy.steering").parse_rules(text)
    return rules


def share(text: str) -> float:
    """A number from 0 up (``--horizon``)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not 0 <= value < 1e6:
        raise ValueError(f"{text} must be 0 or more")
    return value


def port_number(text: str) -> int:
    """A TCP port: 0 (a free one) to 65535."""
    value = int(text) if text.isdigit() else -1
    if not 0 <= value <= 65535:
        raise ValueError(f"{text} is not a port (0 to 65535)")
    return value


def main(
    argv: Sequence[str] | None = None,
    run_tui: Callable[[argparse.Namespace, Settings], int] | None = None,
) -> int:
    command_name: str | None = None
    STORED.clear()
    try:
        ready_for_interrupts()  # Ctrl+C is KeyboardInterrupt again, caught below
        args = build_parser().parse_args(argv)
        command_name = args.command
        return _run(args, run_tui)
    except KeyboardInterrupt:
        print(interrupted(command_name), file=sys.stderr)
        return EXIT_INTERRUPTED


def _run(
    args: argparse.Namespace,
    run_tui: Callable[[argparse.Namespace, Settings], int] | None,
) -> int:
    from cli.common import settings_for  # parsed: now the engine is needed
    from engine.settings.config import SettingsError
    from engine.store import StoreError
    from engine.terminal_text import printable

    try:
        settings = settings_for(args)
        if args.command is None:
            if run_tui is None:
                raise CliError("no command given (the workbench starts from `ctxscope`)")
            return run_tui(args, settings)
        if isinstance(getattr(args, "session", None), str):
            from cli.common import agent_session

            args.session = agent_session(args, settings)
        return command(args.command)(args, settings)
    except (CliError, SettingsError, StoreError, ValueError) as exc:  # ImportError_ is a ValueError
        # The message may echo a path, an argument or a recorded name: shown escaped.
        print(f"ctxscope: {printable(str(exc), one_line=True)}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, (SettingsError, UsageError)) else EXIT_ERROR
    except BrokenPipeError:
        # The reader went away (``| head``): say nothing more, and let no flush at exit fail.
        silence_stdout()
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
