"""``ctxscope watch [PATH] [--jsonl] [--session ID]``: follow an agent while it works.

PATH is a Claude Code session file or a Codex rollout, a folder (its newest session,
switching when a newer one starts) or nothing (the newest session under ``watch_claude_dir``,
by default ``$CLAUDE_CONFIG_DIR/projects`` or ``~/.claude/projects``, and ``watch_codex_dir``,
by default ``$CODEX_HOME/sessions`` or ``~/.codex/sessions``). Codex's auto-compact trigger is
``model_auto_compact_token_limit`` from its ``config.toml`` when set. The session is stored as it is
read (:class:`engine.recordings.follow.Follower`; the same session on every run). Without
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
import json
import os
import signal
import threading
import time
import tomllib
from collections.abc import Generator
from contextlib import closing
from pathlib import Path
from typing import Any

from cli.common import CliError, db_path, get_session, open_store, silence_stdout
from engine.config import Settings
from engine.params import session_settings
from engine.recordings.files import special_file
from engine.recordings.follow import Figures, Follower, Update
from engine.terminal_text import printable

EVENTS = ("compaction", "subagent", "warning")
"""An update's ``event``: the first of these it holds, else ``update``."""

SWITCH_CHECK = 2.0
"""Seconds between two looks for a newer session in a watched folder."""

SAVE_EVERY = 1.0
"""Seconds at most between two stores of a followed file while records keep coming."""


def claude_dirs(settings: Settings) -> list[Path]:
    if settings.watch_claude_dir is not None:
        return [settings.watch_claude_dir]
    home = os.environ.get("CLAUDE_CONFIG_DIR")
    return [Path(home) / "projects" if home else Path.home() / ".claude" / "projects"]


def codex_home(settings: Settings) -> Path:
    """Codex's own folder: above ``watch_codex_dir``, else ``$CODEX_HOME``, else ``~/.codex``."""
    if settings.watch_codex_dir is not None:
        return settings.watch_codex_dir.parent
    home = os.environ.get("CODEX_HOME")
    return Path(home) if home else Path.home() / ".codex"


def codex_dir(settings: Settings) -> Path:
    return settings.watch_codex_dir or codex_home(settings) / "sessions"


def codex_compact_limit(settings: Settings) -> int | None:
    """``model_auto_compact_token_limit`` from Codex's ``config.toml``, if it sets one."""
    try:
        config = tomllib.loads((codex_home(settings) / "config.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    limit = config.get("model_auto_compact_token_limit")
    return limit if isinstance(limit, int) and limit > 0 else None


CLAUDE_SESSIONS = "*/*.jsonl"
"""Claude Code: ``projects/<project>/<session>.jsonl``."""
CODEX_ROLLOUTS = "*/*/*/rollout-*.jsonl"
"""Codex: ``sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``."""


def newest_session(folder: Path, pattern: str) -> Path | None:
    """The most recently written session file matching ``pattern`` in ``folder``, subagent
    files left out."""
    files = [p for p in folder.glob(pattern) if not p.name.startswith("agent-")]
    return max(files, key=lambda p: p.stat().st_mtime, default=None)


class Target:
    """The file being followed: fixed, or the newest of a folder (or of the agents' folders)."""

    def __init__(self, path: Path | None, settings: Settings) -> None:
        self.fixed = path if path is not None and path.is_file() else None
        self.pending: Path | None = None
        """A file not written yet, in a folder that exists: watched once it appears (an
        agent starting writes its session file after its first turn; issue 39 said "no such
        file" and ended)."""
        if path is not None and self.fixed is None and not path.is_dir():
            what = special_file(path)
            if not what and not path.exists() and path.parent.is_dir():
                self.pending = path
            else:
                raise CliError(f"cannot watch {path}: {what or 'no such file or folder'}")
        self.folders: list[tuple[Path, str]]
        if path is not None and path.is_dir():
            # A project folder, or a Codex sessions folder (or one of its days).
            self.folders = [(path, "*.jsonl"), (path, CODEX_ROLLOUTS)]
        else:
            self.folders = [(d, CLAUDE_SESSIONS) for d in claude_dirs(settings)]
            self.folders.append((codex_dir(settings), CODEX_ROLLOUTS))
        self.checked = 0.0

    def current(self) -> Path | None:
        if self.pending is not None and self.pending.is_file():
            self.fixed, self.pending = self.pending, None
        if self.fixed is not None or self.pending is not None:
            return self.fixed
        self.checked = time.monotonic()
        newest = (newest_session(d, pattern) for d, pattern in self.folders if d.is_dir())
        found = [f for f in newest if f is not None]
        return max(found, key=lambda p: p.stat().st_mtime, default=None)

    def due(self) -> bool:
        if self.pending is not None:
            return True  # looked for at every poll until it is written
        return self.fixed is None and time.monotonic() - self.checked >= SWITCH_CHECK


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
    it, the countdown to its own auto-compaction, whether it is past the warning ratio."""
    return {
        "messages": fig.messages,
        "tool_calls": fig.tool_calls,
        "context_tokens": fig.context_tokens,
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


def follow(
    target: Target, settings: Settings, store: Any, stop: threading.Event
) -> Generator[tuple[Update | str, Path, Follower], None, None]:
    """Each update of the followed file, and each notice (a string) about what it could not
    read, until ``stop`` is set; switches to a newer session. Close it
    (``contextlib.closing``) before the store: what was read last is stored then."""
    follower: Follower | None = None
    limit = codex_compact_limit(settings)
    saved, dirty = 0.0, False
    try:
        while not stop.is_set():
            began = time.monotonic()
            if follower is None or target.due():
                path = target.current()
                if path is not None and (follower is None or path != follower.path):
                    if follower is not None:
                        follower.save_pending()
                    follower = Follower(path, settings, store, compact_limit=limit)
            if follower is not None:
                update = follower.look()
                for notice in follower.take_notices():
                    yield notice, follower.path, follower
                if update is not None:
                    yield update, follower.path, follower
                    dirty = True
                # While records keep coming they are reported at every look but stored once
                # a look finds nothing new, or every SAVE_EVERY seconds: storing the last
                # round again takes longer than a look, and would delay the next report.
                if dirty and (update is None or time.monotonic() - saved >= SAVE_EVERY):
                    follower.save_pending(update)
                    saved, dirty = time.monotonic(), False
            # The interval runs from the start of the look: a look (and a save) that took
            # longer is followed by the next look at once.
            stop.wait(max(0.0, settings.watch_poll_interval - (time.monotonic() - began)))
    finally:
        if follower is not None and dirty:
            follower.save_pending()


def _stop_on_signals(stop: threading.Event) -> None:
    def handler(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def cmd_watch(args: argparse.Namespace, settings: Settings) -> int:
    stop = threading.Event()
    if args.session is not None:
        return _watch_stored(args, settings, stop)
    target = Target(args.path, settings)
    store = open_store(args, settings)
    if not args.jsonl:
        return _workbench(args, settings, target, store)
    _stop_on_signals(stop)
    if target.pending is not None:
        waiting = f"{target.pending} is not written yet: waiting for it"
        print(json.dumps({"event": "notice", "session": None, "path": str(target.pending),
                          "message": waiting}), flush=True)  # fmt: skip
    try:
        with closing(follow(target, settings, store, stop)) as updates:
            for update, path, follower in updates:
                if isinstance(update, str):
                    print(json.dumps(notice_json(update, path, follower)), flush=True)
                    continue
                event = next((e for e in EVENTS if e in update.events), "update")
                print(json.dumps(update_json(update, path, event)), flush=True)
    except BrokenPipeError:
        silence_stdout()  # the reader went away: that ends the watch, quietly
    finally:
        store.close()
    return 0


def _workbench(args: argparse.Namespace, settings: Settings, target: Target, store: Any) -> int:
    from engine.config import workspace_folder
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
    follower = Follower(path, settings, store, compact_limit=codex_compact_limit(settings))
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
    store = open_store(args, settings, read_only=True)
    session = get_session(store, args.session)
    assert session.id is not None
    settings = session_settings(settings, session)  # its window and threshold
    _stop_on_signals(stop)
    marker: tuple[int, int, int] | None = None
    window = settings.context_window
    try:
        while not stop.is_set():
            now = store.history_marker(session.id)
            if now != marker:
                marker = now
                messages = store.all_messages(session.id)
                last = store.last_usage(session.id)
                used = last.usage.input_side + last.usage.output_tokens if last else 0
                compactions = len(store.compactions(session.id))
                data = {
                    "event": "update",
                    "session": session.id,
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
