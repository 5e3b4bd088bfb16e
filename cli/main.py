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
import atexit
import gc
import importlib
import os
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
    Parents,
    Parser,
    UsageError,
    checked,
    database_path,
    resume_target,
    silence_stdout,
    workspace,
)

if TYPE_CHECKING:
    from engine.settings.config import Settings

Command = Callable[[argparse.Namespace, "Settings"], int]

COMMANDS: dict[str, str] = {
    "sessions": "look",
    "show": "look",
    "steer-check": "proxy",
    "context": "look",
    "compact": "compacting",
    "uncompact": "compacting",
    "pin": "compacting",
    "import": "recordings",
    "report": "report",
    "check": "check",
    "export": "recordings",
    "strategy": "strategies",
    "strategies": "strategies",
    "replay": "strategies",
    "recall": "compacting",
    "watch": "watch",
    "proxy": "proxy",
    "run": "proxy",
    "statusline": "statusline",
    "ask": "ask",
}
"""Each subcommand, in the order ``--help`` lists them, and the module of ``cli`` that runs it:
its parser is made by the module's ``add_<name>_parser`` and it runs as ``cmd_<name>``. A
command module imports at its top only what building its parser needs (no engine, no
pydantic): each command imports the rest when it runs."""


def _in_module(name: str, form: str) -> Any:
    """``form`` (``cmd_{}`` or ``add_{}_parser``) of subcommand ``name``, from its module."""
    module = importlib.import_module(f"cli.{COMMANDS[name]}")
    return getattr(module, form.format(name.replace("-", "_")))


def command(name: str) -> Command:
    """The function that runs subcommand ``name``, its module imported now."""
    run: Command = _in_module(name, "cmd_{}")
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


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser: the workbench's options, then each subcommand's, made by its own
    module (:data:`COMMANDS`).

    Given the command line (``argv``) whose first word is a subcommand, only that
    subcommand's parser is made: argparse hands every word after it to that parser alone, so
    the others would parse nothing, and making them (some 150 options, each formatted once
    by argparse to check it) was ~3 % of ``ctxscope context``'s start (issue 44). Any other
    command line (``--help``, options first, no command, a mistyped one) gets them all."""
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
    parents = Parents(plain=[common], with_json=[common, as_json])
    first = argv[0] if argv else None
    for name in [first] if first in COMMANDS else COMMANDS:
        _in_module(name, "add_{}_parser")(sub, parents)
    return parser


LOOKING = frozenset({"sessions", "show", "context", "statusline"})
"""Commands that only look: they write nothing but their output and start no process of the
user's (the statusline's refresher is ctxscope's own). What every Python program pays and
these need not (issue 44, measured on ``context`` with callgrind, which counts instructions
whatever the machine's load):

- pydantic's plugins: pydantic looks them up the first time a model class is built, reading
  every installed distribution's entry points (~4 ms of CPU, 1–2 % of these commands' start),
  and ctxscope uses none. Its documented switch, the environment variable
  ``PYDANTIC_DISABLE_PLUGINS``, is set for these commands unless the user set it; a command
  whose tools run the user's commands (``ask``) leaves it alone, since it would reach them
  through Bash;
- the garbage collector's passes over the start-up's objects (~2.7 % of ``context``'s
  instructions): the ~330 modules' classes, functions and schemas live until the process
  ends, so looking for garbage among them finds none. The collector is off while they are
  imported, then they are frozen (``gc.freeze()``: left out of every later collection) and
  the collector is on again for the command's own work — the pattern the ``gc`` module's
  documentation gives for a process that forks;
- its last passes at exit, over every object (~5 %): ``gc.freeze()`` as the last ``atexit``
  handler leaves them to the operating system. The modules are still torn down and every
  ``atexit`` handler runs; what it skips is collecting reference cycles, which these
  commands leave none that hold anything to write.
"""


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


def main(
    argv: Sequence[str] | None = None,
    run_tui: Callable[[argparse.Namespace, Settings], int] | None = None,
) -> int:
    command_name: str | None = None
    STORED.clear()
    try:
        ready_for_interrupts()  # Ctrl+C is KeyboardInterrupt again, caught below
        words = sys.argv[1:] if argv is None else list(argv)
        args = build_parser(words).parse_args(words)
        command_name = args.command
        return _run(args, run_tui)
    except KeyboardInterrupt:
        print(interrupted(command_name), file=sys.stderr)
        return EXIT_INTERRUPTED


def _run(
    args: argparse.Namespace,
    run_tui: Callable[[argparse.Namespace, Settings], int] | None,
) -> int:
    if args.command not in LOOKING:
        return _run_command(args, run_tui, lambda: None)
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")  # before any model class
    atexit.unregister(gc.freeze)  # once, however often main() runs in one process
    atexit.register(gc.freeze)  # runs after the handlers registered later (LIFO)
    collecting = gc.isenabled()
    gc.disable()

    def started() -> None:
        gc.freeze()
        if collecting:
            gc.enable()

    try:
        return _run_command(args, run_tui, started)
    finally:  # as it was (main() in a test's process): the exit handler freezes them again
        gc.unfreeze()
        if collecting:
            gc.enable()


def _run_command(
    args: argparse.Namespace,
    run_tui: Callable[[argparse.Namespace, Settings], int] | None,
    started: Callable[[], None],
) -> int:
    """The command, ``started()`` called once the start-up (imports, settings) is done."""
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
        started()
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
