"""What every subcommand shares: the one-line error, exit codes, settings and the
database from the arguments, JSON or text output, and an agent over a session."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from engine.config import Settings, database_file, load_settings, workspace_folder
from engine.events import Event
from engine.models import Session
from engine.params import session_settings
from engine.store import SessionNotFound, Store
from engine.validation import row_id, seconds

EXIT_ERROR = 1


EXIT_USAGE = 2


EXIT_INTERRUPTED = 130


class CliError(Exception):
    """A problem the user can fix; printed as one line."""


class UsageError(CliError):
    """A bad value the parser could not see (a workspace change not asked for, a missing
    database for a command that only reads): one line, exit code 2 like argparse's."""


def resume_target(text: str) -> int | str:
    """``--resume``'s value: ``latest`` or a session id."""
    return "latest" if text == "latest" else row_id(text)


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error: what was wrong and where to read the usage, exit 2.

    argparse prints the whole usage block before its error; a long command's usage buries the
    one line that matters.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


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


def silence_stdout() -> None:
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


def db_path(args: argparse.Namespace, settings: Settings) -> Path | str:
    """The database file, or a PostgreSQL database's URL (storage.md)."""
    return database_file(settings, getattr(args, "db", None))


def open_store(args: argparse.Namespace, settings: Settings, read_only: bool = False) -> Store:
    """The database; ``read_only`` for commands that only look (they never write a session).

    A command that only looks refuses a missing file rather than create an empty database;
    a file the process may not write (a read-only mount) is opened read-only, which every
    looking command says once on stderr, and a writing command is refused in one line.
    """
    path = db_path(args, settings)
    if read_only and isinstance(path, Path) and not path.exists():
        raise UsageError(
            f"no database at {path} (import a recording or run `ctxscope ask` first; "
            "--db or CTXSCOPE_DB names another file)"
        )
    store = Store.open(path, read_only=read_only, busy_timeout=settings.db_busy_timeout)
    if store.read_only and not read_only:
        store.close()
        raise UsageError(f"{path} is read-only ({store.read_only_reason}); this command writes")
    if store.read_only_reason:
        print(
            f"ctxscope: {path} is read-only ({store.read_only_reason}); opened for reading",
            file=sys.stderr,
        )
    return store


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        print(text)


def get_session(store: Store, session_id: int) -> Session:
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
    """An agent over ``session``, planning with the numbers the session stores (imported
    lazily: the listing commands need no provider)."""
    from engine.llm.factory import make_provider
    from engine.session import Agent

    workspace = workspace_folder(recorded=session.workspace)
    settings = session_settings(settings, session)  # the provider refuses what the window does
    provider = make_provider(settings)
    kwargs: dict[str, Any] = {} if events is None else {"events": events}
    return Agent(store, session, settings, provider, workspace, lease_wait=lease_wait, **kwargs)


def stderr_warnings(event: Event) -> None:
    if event.type == "budget_warning":
        print(f"ctxscope: warning: {getattr(event, 'message', '')}", file=sys.stderr)
