"""What every subcommand shares: settings and the database from the arguments, JSON or text
output, and an agent over a session; the one-line error and the exit codes are
:mod:`cli.arguments`' (the parser's light part), named here too."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.arguments import EXIT_ERROR as EXIT_ERROR  # the light part, shared with the parser
from cli.arguments import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from cli.arguments import EXIT_USAGE as EXIT_USAGE
from cli.arguments import CliError as CliError
from cli.arguments import UsageError as UsageError
from cli.arguments import silence_stdout as silence_stdout
from engine.settings.config import Settings, database_file, load_settings
from engine.terminal_text import json_printable, printable
from engine.validation import database_path

if TYPE_CHECKING:  # the rest when a command asks: `sessions` needs no agent (bench_startup.py)
    from engine.events import Event
    from engine.models import Session
    from engine.store import Store


def settings_for(args: argparse.Namespace) -> Settings:
    named = os.environ.get("CTXSCOPE_DB")
    if named and "db" not in args:
        try:
            database_path(named)  # any URL but postgresql:// refused before it names a file
        except ValueError as exc:
            raise UsageError(f"CTXSCOPE_DB: {exc}") from None
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


def shown_database(target: Path | str) -> str:
    """The database as the user is shown it: a file's path, a URL without its password."""
    if isinstance(target, Path):
        return str(target)
    from engine.store.postgres import masked

    return masked(target)


def open_store(args: argparse.Namespace, settings: Settings, read_only: bool = False) -> Store:
    """The database; ``read_only`` for commands that only look (they never write a session).

    A command that only looks refuses a missing file rather than create an empty database;
    a file the process may not write (a read-only mount) is opened read-only, which every
    looking command says once on stderr, and a writing command is refused in one line.
    """
    from engine.store import Store

    path = db_path(args, settings)
    if read_only and isinstance(path, Path) and not path.exists():
        raise UsageError(
            f"no database at {path} (import a recording or run `ctxscope ask` first; "
            "--db or CTXSCOPE_DB names another file)"
        )
    if isinstance(path, Path) and not path.exists():
        refused = cannot_create(path)
        if refused:
            raise UsageError(
                f"cannot create the database {path}: {refused} (--db or CTXSCOPE_DB names "
                "another file)"
            )
    store = Store.open(path, read_only=read_only, busy_timeout=settings.db_busy_timeout)
    if store.read_only and not read_only:
        store.close()
        raise UsageError(
            f"{store.where} is read-only ({store.read_only_reason}); this command writes"
        )
    if store.read_only_reason:
        print(
            printable(
                f"ctxscope: {store.where} is read-only ({store.read_only_reason}); "
                "opened for reading",
                one_line=True,
            ),
            file=sys.stderr,
        )
    return store


def cannot_create(path: Path) -> str | None:
    """Why this process cannot create a file at ``path`` (the nearest folder that exists is
    on a read-only file system, or not writable by it), or None. SQLite says only "unable to
    open database file"."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return f"{folder} is on a read-only file system"
    except OSError as exc:
        return f"{folder} cannot be read ({exc.strerror})"
    if not os.access(folder, os.W_OK):
        return f"no permission to write in {folder}"
    return None


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    """Print a command's result: ``data`` as JSON with ``--json``, else ``text``.

    Either way through :mod:`engine.terminal_text`: the text holds recorded titles, messages
    and names, so every control character in it is shown escaped, never sent."""
    fork = getattr(args, "fork", None)
    if fork is not None and isinstance(data, dict):
        data = {**data, "fork": fork}
    if args.json:
        print(json_printable(json.dumps(data, ensure_ascii=False, indent=2, default=str)))
    else:
        print(printable(text))


def sessions_counted(sessions: int, subagents: int) -> str:
    """``250 sessions (50 subagents)``: every session stored, subagents' included, as
    ``import``, ``report`` and ``sessions`` count them."""
    from engine.terminal_text import plural

    text = plural(sessions, "session")
    return text + f" ({plural(subagents, 'subagent')})" if subagents else text


def get_session(store: Store, session_id: int) -> Session:
    from engine.store import SessionNotFound

    try:
        return store.get_session(session_id)
    except SessionNotFound as exc:
        raise CliError(f"{exc} (see `ctxscope sessions`)") from None


def agent_session(args: argparse.Namespace, settings: Settings) -> int:
    """The ctxscope session ``args.session`` names when it is not a number: the proxied
    session recorded under an agent's own session id (docs/proxy.md), else what
    :func:`find_session` finds (a recording's file, a recording agent's own session id)."""
    store = open_store(args, settings, read_only=True)
    try:
        found = store.proxy_session(f"proxy:{args.session}")
        if found is None:
            found = find_session(store, args.session).id
    finally:
        store.close()
    assert found is not None
    return found


def find_session(store: Store, ref: int | str) -> Session:
    """The session ``ref`` names: its number; or a recording's file (the session imported or
    watched from it; a file its agent wrote on since, by the session id it records); or the
    recording agent's own session id (stored at import, a file of that name imported from the
    history, or a watched recording's id) — ``ctxscope show 8463c716-…`` and ``show
    ~/.claude/projects/…/8463c716-….jsonl`` as well as ``show 12``."""
    if isinstance(ref, int):
        return get_session(store, ref)
    from engine.recordings.importing import imported_source

    sources = store.sources()
    file = Path(ref).expanduser()
    if file.is_file():
        resolved = str(file.resolve())
        known = store.imported_files().get(resolved)
        if known is not None and known.sessions:
            return get_session(store, known.sessions[0])
        digest = (imported_source(file, 0) or "").removesuffix("#0")
        for sid, source in sources.items():
            if (digest and source.startswith(digest + "#")) or source.startswith(resolved + "#"):
                return get_session(store, sid)
        # the file grew since (its agent wrote on): the session its agent named in it
        for recorded_id in _recorded_ids(file):
            for sid in store.recorded_as(recorded_id):
                return get_session(store, sid)
        raise CliError(f"no stored session was imported or watched from {ref} (import it first)")
    for sid, source in sources.items():
        if source.endswith("#" + ref) and not source.startswith("import:"):
            return get_session(store, sid)  # a watched recording's own id
    for sid in store.recorded_as(ref):
        return get_session(store, sid)  # an imported recording's own id
    for path, known in store.imported_files().items():
        if Path(path).stem == ref and known.sessions:
            return get_session(store, known.sessions[0])
    raise CliError(
        f"no stored session is {ref!r}: give its number (see `ctxscope sessions`), the "
        "recording's file, or the agent's own session id of a recording imported "
        "(`ctxscope import`) or watched"
    )


def _recorded_ids(file: Path) -> list[str]:
    """The ids the recording agent gave the sessions of ``file``: its name first (Claude Code
    names a transcript by its session id), then what its records say (read again)."""
    from engine.recordings.importing import parse_sessions

    try:
        named = [p.source_session for p in parse_sessions(file) if p.source_session]
    except (OSError, ValueError):  # ImportError_ is a ValueError: not a recording
        named = []
    return [file.stem, *named]


def session_to_change(store: Store, session: Session, args: argparse.Namespace) -> Session:
    """The session a command's change goes to: ``session``, or for a recorded one (imported,
    watched) a fork of it, said on stderr and in ``--json`` (``fork``), so the recording stays
    as it was. ``args.forked`` keeps the fork (its id maps) for ids the user gave."""
    fork = store.fork_to_change(session)
    args.forked = fork
    if fork is None:
        return session
    print(f"ctxscope: {fork.note}", file=sys.stderr)
    args.fork = {"session_id": fork.session.id, "of": fork.of, "source": fork.source}
    return fork.session


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
    from engine.recordings.own_agent import planning_settings
    from engine.session import Agent
    from engine.session.workspace import session_workspace

    workspace = session_workspace(session)  # None: recorded elsewhere, none given yet
    # the session's window (a recording's own agent's): the provider refuses what it does not hold
    settings = planning_settings(store, session, settings)
    provider = make_provider(settings)
    kwargs: dict[str, Any] = {} if events is None else {"events": events}
    return Agent(store, session, settings, provider, workspace, lease_wait=lease_wait, **kwargs)


def stderr_warnings(event: Event) -> None:
    if event.type == "budget_warning":
        said = printable(str(getattr(event, "message", "")), one_line=True)
        print(f"ctxscope: warning: {said}", file=sys.stderr)
