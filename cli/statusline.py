"""``ctxscope statusline``: one line for Claude Code's status bar, from the session's figures.

Set as Claude Code's ``statusLine`` command (docs/cli.md#statusline), it is run after each
assistant message with the session as JSON on stdin (``session_id``, ``transcript_path``,
``model``, ``workspace``, …) and prints one line: the context at the last call against the
window, what is left before the agent compacts by its own rule, and the cost — the figures of
the session's :class:`~engine.figures.SessionFigures`, the record ``sessions``, ``show``,
``context`` and the workbench print.

A status line must never hold the agent up, so the line is printed from a small cache
(``$XDG_CACHE_HOME/ctxscope/statusline/``, one file per transcript, named by a digest of its
path): this module imports nothing but the standard library. When the transcript changed
since the cached line was made, the cached line is printed marked ``…`` and one refresher
process is started in the background (:func:`refresh`): it follows the transcript as
``ctxscope watch`` does (the same stored session on every run, read incrementally), computes
the figures and writes the cache, which the next run prints. ``--wait`` refreshes before
printing (exact, slower: for scripts and tests).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from cli.arguments import (
    Parents,
    Subcommands,
)

MAX_INPUT = 1 << 20
"""What is read of stdin at most: Claude Code's status JSON is a few hundred bytes."""

REFRESH_LOCK_AGE = 30.0
"""Seconds after which a refresher that left its lock (and stopped touching it) is taken for
dead."""

LINGER = 600.0
"""Seconds a background refresher keeps following an unchanged transcript before it exits:
while the agent works, each message is read incrementally by the same process
(``CTXSCOPE_STATUSLINE_LINGER`` sets another)."""

POLL = 0.25
"""Seconds between two looks at the followed transcript."""

_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}


def printable(text: str) -> str:
    """``text`` on one line with every control character shown escaped: a recording's title or
    model name never writes an escape sequence into the agent's terminal."""
    return text.translate(_CONTROL)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ctxscope" / "statusline"


def cache_file(transcript: str, db: str | None) -> Path:
    """The cache of one transcript (and database): named by a digest, never by the path
    itself, so nothing the status JSON says chooses where a file is written."""
    import hashlib

    key = hashlib.sha256(f"{transcript}\0{db or ''}".encode("utf-8", "replace")).hexdigest()
    return cache_dir() / f"{key[:32]}.json"


def stamp(path: Path) -> list[int] | None:
    """What tells a transcript changed: its size and modification time."""
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def read_cache(file: Path) -> dict[str, Any] | None:
    import json

    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_cache(file: Path, data: dict[str, Any]) -> None:
    """Whole or not at all: a reader never sees half a file."""
    import json

    file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = file.with_name(f".{file.name}.{os.getpid()}")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, file)


def status_line(figures: dict[str, Any]) -> str:
    """The line, from a :meth:`SessionFigures.to_json`: ``Opus 5 · ctx 54,242/1,000,000 5.4% ·
    912,758 to auto-compact · $20.32``."""
    parts = []
    if figures.get("model"):
        parts.append(str(figures["model"]))
    context, window = figures.get("context_tokens"), figures.get("context_window")
    if isinstance(context, int) and isinstance(window, int) and window > 0:
        parts.append(f"ctx {context:,}/{window:,} {figures.get('percent')}%")
    until = figures.get("until_auto_compact")
    if isinstance(until, int):
        parts.append(f"{until:,} to auto-compact")
    elif figures.get("auto_compact_at") is None:
        parts.append("auto-compact point not known")
    cost = figures.get("cost")
    parts.append("–" if not isinstance(cost, int | float) else f"${cost:,.2f}")
    return printable(" · ".join(parts))


def _args(argv: list[str]) -> tuple[str | None, bool, str | None]:
    """``[--db PATH] [--wait] [--refresh TRANSCRIPT]`` (``--refresh`` is the background
    refresher's own call)."""
    db = refresh_of = None
    wait = False
    rest = iter(argv)
    for arg in rest:
        if arg == "--db":
            db = next(rest, None)
        elif arg.startswith("--db="):
            db = arg.split("=", 1)[1]
        elif arg == "--wait":
            wait = True
        elif arg == "--refresh":
            refresh_of = next(rest, None)
        elif arg in ("-h", "--help"):
            print(__doc__.strip().splitlines()[0])
            print("usage: ctxscope statusline [--db PATH] [--wait]  (the status JSON on stdin)")
            raise SystemExit(0)
        else:
            print(f"ctxscope statusline: unknown argument {printable(arg)!r}", file=sys.stderr)
            raise SystemExit(2)
    return db, wait, refresh_of


def main(argv: list[str]) -> int:
    """``ctxscope statusline`` (``argv`` after the word ``statusline``)."""
    import json

    db, wait, refresh_of = _args(argv)
    if refresh_of is not None:
        linger = os.environ.get("CTXSCOPE_STATUSLINE_LINGER", "")
        return refresh(Path(refresh_of), db, float(linger) if linger else LINGER)
    try:
        status = json.loads(sys.stdin.read(MAX_INPUT) or "{}")
    except ValueError:
        status = {}
    transcript = status.get("transcript_path") if isinstance(status, dict) else None
    if not isinstance(transcript, str) or not transcript:
        print("ctxscope: no transcript_path in the status JSON")
        return 0
    path = Path(transcript)
    file = cache_file(transcript, db)
    now = stamp(path)
    cached = read_cache(file)
    if cached is not None and cached.get("stamp") == now and "figures" in cached:
        print(status_line(cached["figures"]))
        return 0
    if wait:
        refresh(path, db)
        cached = read_cache(file)
        print(status_line(cached["figures"]) if cached else "ctxscope: the session cannot be read")
        return 0
    _start_refresher(path, db, file)
    if cached is not None and "figures" in cached:
        print(status_line(cached["figures"]) + " …")
    else:
        print("ctxscope: reading the session…")
    return 0


def _start_refresher(path: Path, db: str | None, file: Path) -> None:
    """One refresher at a time per transcript, in the background, its output discarded."""
    import subprocess

    lock = file.with_suffix(".lock")
    try:
        file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        try:
            if time.time() - lock.stat().st_mtime < REFRESH_LOCK_AGE:
                return  # one is at work
            lock.unlink()
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except OSError:
            return
    except OSError:
        return
    os.close(fd)
    command = [sys.executable, "-m", "cli.statusline", "--refresh", str(path)]
    if db is not None:
        command += ["--db", db]
    child = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "CTXSCOPE_STATUSLINE_LOCK": str(lock)},
    )
    lock.write_text(str(child.pid))


def refresh(path: Path, db: str | None, linger: float = 0.0) -> int:
    """Follow the transcript into the store (as ``watch`` does: the same session each time),
    compute its figures and write the cache; with ``linger``, keep following it — each
    change read incrementally, the cache written again — until it has not changed for that
    many seconds. Runs in the background; its errors go to the cache as a line, never to the
    agent's screen."""
    file = cache_file(str(path), db)
    lock = os.environ.get("CTXSCOPE_STATUSLINE_LOCK")
    try:
        with _Following(path, db) as following:
            idle_since = time.monotonic()
            while True:
                before = stamp(path)
                if following.look():
                    write_cache(
                        file, {"stamp": before, "figures": following.figures(), "made": time.time()}
                    )
                    idle_since = time.monotonic()
                if lock:
                    os.utime(lock)  # alive: no second refresher is started
                if time.monotonic() - idle_since >= linger:
                    return 0
                time.sleep(POLL)
    except Exception as exc:  # noqa: BLE001 - a status line shows the failure in one line
        write_cache(
            file,
            {"stamp": None, "figures": {"model": f"ctxscope: {type(exc).__name__}: {exc}"}},
        )
        return 1
    finally:
        if lock:
            Path(lock).unlink(missing_ok=True)


class _Following:
    """The transcript followed into the store, and its session's figures
    (:func:`engine.recordings.figures.session_figures`)."""

    def __init__(self, path: Path, db: str | None) -> None:
        import argparse

        from cli.common import open_store, settings_for
        from engine.recordings.follow import Follower

        args = argparse.Namespace(db=db, config=None)
        self.settings = settings_for(args)
        self.store = open_store(args, self.settings)
        self.follower = Follower(path, self.settings, self.store)
        self.path = path

    def __enter__(self) -> _Following:
        return self

    def __exit__(self, *exc: object) -> None:
        self.store.close()

    def look(self) -> bool:
        """Read what was appended and store it; True when something was."""
        update = self.follower.poll()
        self.follower.save_pending()
        if self.follower.session is None:
            raise ValueError(f"{self.path} holds no conversation yet")
        return update is not None

    def figures(self) -> dict[str, Any]:
        from engine.recordings.figures import session_figures

        assert self.follower.session is not None
        return session_figures(self.store, self.follower.session, self.settings).to_json()


def add_statusline_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "statusline",
        parents=parents.plain,
        help="one line for Claude Code's statusLine: context, until auto-compact, cost "
        "(the status JSON on stdin; docs/cli.md#statusline)",
    )
    p.add_argument("--wait", action="store_true", help="read the session before printing")


def cmd_statusline(args: Any, settings: Any) -> int:
    """``python -m cli.main statusline``: the same as the console script's fast path."""
    argv = ["--wait"] if args.wait else []
    if getattr(args, "db", None):
        argv += ["--db", str(args.db)]
    return main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
