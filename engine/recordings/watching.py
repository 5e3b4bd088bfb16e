"""The one follow loop: ``ctxscope watch --jsonl`` prints what it yields, the workbench's watch
screen posts it as messages.

:class:`Target` is the file followed: a fixed file, or the newest session of a folder (or of
every followable agent's home folders, :func:`engine.recordings.agents.home_folders`),
switching when a newer one starts. :func:`follow` looks at it every ``watch_poll_interval``
seconds (a :class:`~engine.recordings.follow.Follower` reads what was appended, parses it with
its agent's parser and keeps the session stored) and yields each update and each notice until
told to stop; what was read last is stored when the loop is closed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import Any

from engine.recordings import agents
from engine.recordings.follow import Follower, Update
from engine.settings.config import Settings

SWITCH_CHECK = 2.0
"""Seconds between two looks for a newer session in a watched folder."""

SAVE_EVERY = 1.0
"""Seconds at most between two stores of a followed file while records keep coming."""

FOLDER_FILES = "*.jsonl"
"""A folder given to ``watch``: its own session files, beside the agents' layouts."""


def newest_session(folder: Path, pattern: str) -> Path | None:
    """The most recently written session file matching ``pattern`` in ``folder``, companion
    files (Claude Code's subagents) left out."""
    files = [
        p
        for p in folder.glob(pattern)
        if p.is_file() and not agents.is_companion(p.relative_to(folder))
    ]
    return max(files, key=lambda p: p.stat().st_mtime, default=None)


class NoSuchTarget(ValueError):
    """A path to watch that is neither a file nor a folder (its kind named)."""


class Target:
    """The file being followed: fixed, or the newest of a folder (or of the agents' folders)."""

    def __init__(
        self, path: Path | None, settings: Settings, env: Mapping[str, str] | None = None
    ) -> None:
        self.fixed = path if path is not None and path.is_file() else None
        self.pending: Path | None = None
        """A file not written yet, in a folder that exists: watched once it appears (an agent
        starting writes its session file after its first turn; issue 39 said "no such file"
        and ended)."""
        if path is not None and self.fixed is None and not path.is_dir():
            from engine.recordings.files import special_file

            what = special_file(path)
            if not what and not path.exists() and path.parent.is_dir():
                self.pending = path
            else:
                raise NoSuchTarget(f"cannot watch {path}: {what or 'no such file or folder'}")
        followed = [a for a in agents.AGENTS if a.follow_glob]
        self.folders: list[tuple[Path, str]]
        if path is not None and path.is_dir():
            # A project folder, or an agent's sessions folder (or one of its days).
            self.folders = [(path, FOLDER_FILES)]
            self.folders += [(path, a.follow_glob) for a in followed if a.follow_glob]
        else:
            environ = os.environ if env is None else env
            self.folders = [
                (folder.path, a.follow_glob)
                for a in followed
                for folder in a.home_folders(environ, settings)
                if a.follow_glob
            ]
            self.folders = list(dict.fromkeys(self.folders))
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


Event = tuple[Update | str, Path, Follower]
"""What :func:`follow` yields: an update (or a notice, a string) of the file at the path,
and the follower that read it."""


def follow(
    target: Target,
    settings: Settings,
    store: Any,
    stopped: Callable[[], bool],
    wait: Callable[[float], object],
    follower: Follower | None = None,
    save_at_once: bool = False,
) -> Generator[Event, None, None]:
    """Each update of the followed file, and each notice about what it could not read, until
    ``stopped()``; ``wait(seconds)`` waits between two looks (an event's ``wait`` ends at
    once when it is set). Switches to a newer session of a folder. Given a ``follower``, goes
    on with it. Close the generator (``contextlib.closing``) before the store: what was read
    last is stored then.

    While records keep coming they are reported at every look but stored once a look finds
    nothing new, or every :data:`SAVE_EVERY` seconds: storing the last round again takes
    longer than a look and would delay the next report. ``save_at_once`` stores each update
    before it is yielded (the workbench redraws from the store)."""
    saved, dirty = 0.0, False
    try:
        while not stopped():
            began = time.monotonic()
            if follower is None or target.due():
                path = target.current()
                if path is not None and (follower is None or path != follower.path):
                    if follower is not None:
                        follower.save_pending()
                    follower = Follower(path, settings, store)
            if follower is not None:
                update = follower.look()
                if update is not None and save_at_once:
                    follower.save_pending(update)
                for notice in follower.take_notices():
                    yield notice, follower.path, follower
                if update is not None:
                    yield update, follower.path, follower
                    dirty = not save_at_once
                if dirty and (update is None or time.monotonic() - saved >= SAVE_EVERY):
                    follower.save_pending(update)
                    saved, dirty = time.monotonic(), False
            # The interval runs from the start of the look: a look (and a save) that took
            # longer is followed by the next look at once.
            wait(max(0.0, settings.watch_poll_interval - (time.monotonic() - began)))
    finally:
        if follower is not None and dirty:
            follower.save_pending()
