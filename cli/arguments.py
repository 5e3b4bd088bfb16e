"""What parsing the command line needs, and nothing heavier: the one-line errors, exit codes,
the parser, the argument checks, and what a command has stored (for an interrupt's line).

``ctxscope --help`` and a bad argument are answered from here alone, before anything of the
engine, pydantic or Textual is imported (issue 32: ``--help`` took 9.4× ``python -c pass``).
The checks are :mod:`engine.validation`'s, imported when an argument is first checked (that
module needs nothing but the standard library), so a command that parses no id or number
does not load even that.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import re
import sys
from collections.abc import Callable
from typing import Any, NamedTuple, NoReturn

EXIT_ERROR = 1


EXIT_USAGE = 2


EXIT_INTERRUPTED = 130


class CliError(Exception):
    """A problem the user can fix; printed as one line."""


class UsageError(CliError):
    """A bad value the parser could not see (a workspace change not asked for, a missing
    database for a command that only reads): one line, exit code 2 like argparse's."""


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error: what was wrong and where to read the usage, exit 2.

    argparse prints the whole usage block before its error; a long command's usage buries the
    one line that matters.
    """

    def error(self, message: str) -> NoReturn:
        # argparse echoes the bad value (``invalid choice: '…'``): shown escaped. Imported
        # here, on the error path only (the sanitiser needs nothing but ``re``).
        from engine.terminal_text import printable

        said = printable(message, one_line=True)
        self.exit(EXIT_USAGE, f"{self.prog}: {said} (see `{self.prog} --help`)\n")


def _validation(name: str) -> Callable[..., Any]:
    """:mod:`engine.validation`'s check ``name``, imported at its first use."""

    def check(text: str, *fixed: Any) -> Any:
        run: Callable[..., Any] = getattr(importlib.import_module("engine.validation"), name)
        return run(text, *fixed)

    check.__name__ = name
    return check


row_id = _validation("row_id")
count = _validation("count")
seconds = _validation("seconds")
output_file = _validation("output_file")
existing_folder = _validation("existing_folder")
window = _validation("window")
database_path = _validation("database_path")
workspace = _validation("workspace")


def resume_target(text: str) -> int | str:
    """``--resume``'s value: ``latest``, a session id or an agent's own session id."""
    return "latest" if text == "latest" else session_ref(text)


def checked(check: Callable[[str], Any], *fixed: Any) -> Callable[[str], Any]:
    """An argparse ``type=`` from an :mod:`engine.validation` check: its ``ValueError`` becomes
    argparse's one-line error (``argument ID: session id must be …``)."""

    def convert(text: str) -> Any:
        try:
            return check(text, *fixed)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = check.__name__
    return convert


def add_wait(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wait",
        nargs="?",
        type=checked(seconds),
        const=math.inf,
        default=0.0,
        metavar="SECONDS",
        help="when another ctxscope writes the session, wait for it (without SECONDS: as "
        "long as it takes) instead of refusing",
    )


STORED: list[str] = []
"""What the running command has stored for good so far (``import``: its sessions, once their
transaction committed), for the line an interrupt ends it with (:func:`cli.main.interrupted`)."""


def silence_stdout() -> None:
    """Point stdout at /dev/null (the Python docs' advice after a ``BrokenPipeError``)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


AGENT_SESSION = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
"""An agent's own session id (Claude Code's ``session_id``, Codex's ``prompt_cache_key``)."""


def session_ref(text: str) -> int | str:
    """A session id argument: ctxscope's number, or an agent's own session id (a UUID)."""
    if AGENT_SESSION.fullmatch(text.strip()):
        return text.strip()
    return int(row_id(text))


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


Subcommands = Any
"""argparse's subparsers action (``parser.add_subparsers()``), whose ``add_parser`` makes a
subcommand's parser; :func:`cli.main.described` adds its description and example."""


class Parents(NamedTuple):
    """The options a subcommand's parser inherits: ``--db`` and ``--config`` (``plain``), and
    those with ``--json`` (``with_json``)."""

    plain: list[argparse.ArgumentParser]
    with_json: list[argparse.ArgumentParser]
