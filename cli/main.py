"""The headless command line: ``ctxscope sessions | show | context | compact | import | export |
ask | strategy | strategies | watch``.

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
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from cli.common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    Parser,
    UsageError,
    add_wait,
    checked,
    resume_target,
    settings_for,
    silence_stdout,
)
from engine.config import Settings, SettingsError, is_database_url
from engine.store import StoreError
from engine.validation import count, existing_folder, output_file, row_id

SESSION_ID = checked(row_id)
"""A session id argument: a whole number within SQLite's range, else argparse's one line."""

Command = Callable[[argparse.Namespace, Settings], int]

EXPORT_FORMATS = ("anthropic-jsonl", "markdown")
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
}
"""Each subcommand and the module of ``cli`` that runs it (as ``cmd_<name>``)."""


def command(name: str) -> Command:
    """The function that runs subcommand ``name``, its module imported now."""
    module = importlib.import_module(f"cli.{COMMANDS[name]}")
    run: Command = getattr(module, f"cmd_{name}")
    return run


def database_argument(text: str) -> Path | str:
    """``--db``: a file, or a PostgreSQL database's URL (kept as text: a Path would fold
    its ``//``)."""
    return text if is_database_url(text) else Path(text)


def build_parser() -> argparse.ArgumentParser:
    common = Parser(add_help=False)
    common.add_argument(
        "--db",
        type=database_argument,
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
        "--workspace", type=checked(existing_folder), help="the agent's working directory"
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

    sessions = sub.add_parser("sessions", parents=[common, as_json], help="list stored sessions")
    for flag, what in (
        ("--user", "made by this login name (stored with record_origin on)"),
        ("--machine", "made on this machine (host name; stored with record_origin on)"),
        ("--project", "working in this folder: its path, or its last part"),
    ):
        sessions.add_argument(flag, default=None, help=f"only the sessions {what}")
    p = sub.add_parser("show", parents=[common, as_json], help="a session as stored")
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument(
        "--observations",
        action="store_true",
        help="also print each tool result's full text, as the model saw it",
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
    p.add_argument("file", type=Path, metavar="FILE|DIR")
    p.add_argument(
        "--workspace",
        type=checked(existing_folder),
        default=argparse.SUPPRESS,
        help="the folder its tools work in (default: the folder the recording names)",
    )
    p = sub.add_parser(
        "export",
        parents=[common],
        help="write a session as Anthropic-messages JSON lines (re-importable) or Markdown",
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
        type=checked(count, "the window"),
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
    p.add_argument("session", type=SESSION_ID, metavar="ID")
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
        type=checked(count, "the window"),
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
    p = sub.add_parser("ask", parents=[common, as_json], help="run one round headless")
    p.add_argument("input", help="the user input")
    p.add_argument("--session", type=SESSION_ID, metavar="ID", help="continue this session")
    p.add_argument("--workspace", type=checked(existing_folder), default=argparse.SUPPRESS)
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
        return command(args.command)(args, settings)
    except (CliError, SettingsError, StoreError, ValueError) as exc:  # ImportError_ is a ValueError
        print(f"ctxscope: {exc}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, (SettingsError, UsageError)) else EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``| head``): say nothing more, and let no flush at exit fail.
        silence_stdout()
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
