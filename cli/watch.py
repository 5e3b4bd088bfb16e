"""``ctxscope watch [PATH] [--jsonl] [--session ID]``: follow an agent while it works.

PATH is a Claude Code session file or a Codex rollout, a folder (its newest session,
switching when a newer one starts) or nothing (the newest session of the agents' own
folders: ``~/.claude/projects``, ``$CLAUDE_CONFIG_DIR/projects``, ``watch_claude_dir``;
``$CODEX_HOME/sessions`` or ``~/.codex/sessions``, or ``watch_codex_dir``). The window and
auto-compact point are the agent's own (:mod:`engine.recordings.agents`). The loop is the
engine's (:func:`engine.recordings.watching.follow`, the workbench's too); this module holds
the arguments and the printing. The session is stored as it is read
(:class:`engine.recordings.follow.Follower`; the same session on every run). Without
``--jsonl`` the workbench opens on it; with ``--jsonl`` one JSON object per update goes to
stdout, each with the current state (context, countdown, ``warning``); a ``compaction`` event
adds the compaction's figures (:func:`update_json`, docs/watch.md). ``--session ID`` follows
a session another ctxscope process is running, read-only. Ends cleanly on SIGTERM, Ctrl+C and
when stdout closes.

Never silent: what the follower cannot read (a file with no conversation yet, records of
kinds this version does not read, a file it cannot open) is a ``notice`` event with the
import report's words (:attr:`engine.recordings.follow.Follower.notices`), shown by the
workbench as a notification.
"""

from __future__ import annotations

import argparse
import time
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.arguments import (
    SESSION_ID,
    CliError,
    Parents,
    Subcommands,
    silence_stdout,
)
from cli.signals import on_signals

if TYPE_CHECKING:
    import threading

    from engine.recordings.follow import Figures, Follower, Update
    from engine.recordings.watching import Target
    from engine.settings.config import Settings

EVENTS = ("compaction", "subagent", "warning")
"""An update's ``event``: the first of these it holds, else ``update``."""


def target(path: Path | None, settings: Settings) -> Target:
    """The file to follow (:class:`engine.recordings.watching.Target`), or a line saying why
    there is none."""
    from engine.recordings.watching import NoSuchTarget, Target

    try:
        return Target(path, settings)
    except NoSuchTarget as exc:
        raise CliError(str(exc)) from None


def notice_json(text: str, path: Path, follower: Follower) -> dict[str, Any]:
    """A ``notice`` event: what the follower could not read (yet), in the report's words,
    with the state of the last update (none before the first)."""
    session = follower.session.id if follower.session else None
    out = {"event": "notice", "session": session, "path": str(path), "message": text}
    if follower.figures is not None:
        out |= state_json(follower.figures)
    return out


def state_json(fig: Figures) -> dict[str, Any]:
    """The state every ``--jsonl`` line carries: the context as the agent's last usage reports
    it (the ``figures``' own), the next request estimated, the countdown to its own
    auto-compaction, whether it is past the warning ratio."""
    return {
        "messages": fig.messages,
        "tool_calls": fig.tool_calls,
        "context_tokens": fig.context_tokens,
        "next_request_tokens": fig.next_request_tokens,
        "context_window": fig.context_window,
        "percent": fig.percent,
        "until_compact": fig.until_compact,
        "compact_at": fig.compact_at,
        "warning": fig.warning,
        "compactions": fig.compactions,
        "last_usage": fig.last_usage,
    }


def update_json(update: Update, path: Path, event: str) -> dict[str, Any]:
    out = {
        "event": event,
        "session": update.session_id,
        "path": str(path),
        "records": update.records,
        **state_json(update.figures),
    }
    if update.compaction is not None:
        out["compaction"] = update.compaction
    return out


def add_watch_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "watch",
        parents=parents.plain,
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


def cmd_watch(args: argparse.Namespace, settings: Settings) -> int:
    import threading

    from cli.common import open_store

    stop = threading.Event()
    if args.session is not None:
        return _watch_stored(args, settings, stop)
    followed = target(args.path, settings)
    store = open_store(args, settings)
    if not args.jsonl:
        return _workbench(args, settings, followed, store)
    with on_signals(stop.set):
        return _follow_jsonl(followed, settings, store, stop)


def _follow_jsonl(followed: Target, settings: Settings, store: Any, stop: threading.Event) -> int:
    """One JSON line per update of the followed session until ``stop`` is set or stdout
    closes."""
    import json

    from engine.recordings.figures import session_figures
    from engine.recordings.watching import follow

    if followed.pending is not None:
        waiting = f"{followed.pending} is not written yet: waiting for it"
        print(json.dumps({"event": "notice", "session": None, "path": str(followed.pending),
                          "message": waiting}), flush=True)  # fmt: skip
    try:
        # Each update stored before it is printed, so its ``figures`` are the session's record
        # as every other surface prints it (engine/figures), not a second computation.
        watched = follow(followed, settings, store, stop.is_set, stop.wait, save_at_once=True)
        with closing(watched) as updates:
            for update, path, follower in updates:
                if isinstance(update, str):
                    print(json.dumps(notice_json(update, path, follower)), flush=True)
                    continue
                event = next((e for e in EVENTS if e in update.events), "update")
                line = update_json(update, path, event)
                if follower.session is not None:
                    line["figures"] = session_figures(store, follower.session, settings).to_json()
                print(json.dumps(line), flush=True)
    except BrokenPipeError:
        silence_stdout()  # the reader went away: that ends the watch, quietly
    finally:
        store.close()
    return 0


def _workbench(args: argparse.Namespace, settings: Settings, target: Target, store: Any) -> int:
    from cli.common import db_path
    from engine.recordings.follow import Follower
    from engine.settings.config import workspace_folder
    from engine.terminal_text import printable
    from tui.watch import WatchApp

    path = target.current()
    if target.pending is not None:
        import sys

        print(f"ctxscope: {printable(str(target.pending))} is not written yet: waiting for it "
              "(Ctrl+C stops)", file=sys.stderr)  # fmt: skip
        while path is None:  # Ctrl+C: KeyboardInterrupt, said in one line by main
            time.sleep(settings.watch_poll_interval)
            path = target.current()
    if path is None:
        folders = dict.fromkeys(str(d) for d, _ in target.folders)
        raise CliError(f"no session file under {', '.join(folders)}")
    follower = Follower(path, settings, store)
    follower.poll()
    if follower.session is None:
        said = "; ".join(follower.take_notices()) or f"{path} holds no conversation yet"
        raise CliError(f"{printable(said, one_line=True)}; try again when the agent started")
    store.close()
    app = WatchApp(
        follower,
        db_path=db_path(args, settings),
        workspace=workspace_folder(None),
        settings=settings.model_copy(update={"model": "offline"}),
        resume=follower.session.id,
    )
    app.run()
    return app.return_code or 0


def _watch_stored(args: argparse.Namespace, settings: Settings, stop: threading.Event) -> int:
    """A session another ctxscope process writes: its figures whenever its history changes."""
    from cli.common import get_session, open_store
    from engine.settings.params import session_settings

    store = open_store(args, settings, read_only=True)
    session = get_session(store, args.session)
    assert session.id is not None
    settings = session_settings(settings, session)  # its window and threshold
    with on_signals(stop.set):
        return _print_stored(store, session.id, settings, stop)


def _print_stored(store: Any, session_id: int, settings: Settings, stop: threading.Event) -> int:
    """The stored session's figures each time its history changes, until ``stop`` is set."""
    import json

    marker: tuple[int, int, int] | None = None
    window = settings.context_window
    try:
        while not stop.is_set():
            now = store.history_marker(session_id)
            if now != marker:
                marker = now
                messages = store.all_messages(session_id)
                last = store.last_usage(session_id)
                used = last.usage.input_side + last.usage.output_tokens if last else 0
                compactions = len(store.compactions(session_id))
                data = {
                    "event": "update",
                    "session": session_id,
                    "path": store.where,
                    "messages": len(messages),
                    "tool_calls": sum(len(m.tool_calls) for m in messages),
                    "context_tokens": used,
                    "context_window": window,
                    "percent": round(100 * used / window, 1),
                    "until_compact": max(0, settings.threshold_tokens - used),
                    "warning": used >= settings.watch_warn_ratio * settings.threshold_tokens,
                    "compactions": compactions,
                }
                print(json.dumps(data), flush=True)
            stop.wait(settings.watch_poll_interval)
    except BrokenPipeError:
        silence_stdout()
    finally:
        store.close()
    return 0
