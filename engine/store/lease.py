"""One writer per session: the lease a round or a compaction holds while it writes.

A lease row names its holder — host, pid, the process' start time (so a reused pid is not
mistaken for the holder) and a random token — and carries a heartbeat the holder refreshes
from a background thread. Another process may take the lease over only when the holder is
provably dead: on the same host, its process is gone; on another host (a shared file system),
its heartbeat is older than ``stale_after`` seconds. Until then a second writer is refused
with :class:`SessionBusy`, or waits for its turn.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache

from engine.models import utcnow
from engine.store.errors import StoreError


class SessionBusy(StoreError):
    """Another live process writes this session now."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a session's lease."""

    owner: str
    host: str
    pid: int
    started: str
    purpose: str
    acquired_at: datetime
    heartbeat_at: datetime

    def describe(self) -> str:
        where = f"pid {self.pid}" if self.host == this_host() else f"pid {self.pid} on {self.host}"
        return f"{where}, {self.purpose} since {self.acquired_at:%H:%M:%S} UTC"


def this_host() -> str:
    return socket.gethostname()


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), or None when it is gone.

    Where ``/proc`` is missing, "" for a live process: liveness then rests on the pid alone.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode(errors="replace")
        # Field 22 counts after the command name, which is in parentheses and may hold spaces.
        return stat.rsplit(")", 1)[1].split()[19]
    except FileNotFoundError:
        return None
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return ""


@cache
def _own_start() -> str:
    return process_start(os.getpid()) or ""


def new_owner() -> tuple[str, str, int, str]:
    """A fresh owner token, and this process' host, pid and start time."""
    host, pid = this_host(), os.getpid()
    return f"{host}:{pid}:{secrets.token_hex(8)}", host, pid, _own_start()


def is_alive(holder: Holder, stale_after: float, now: datetime | None = None) -> bool:
    """Is the holder still running? Only a provably dead holder may be taken over."""
    if holder.host == this_host():
        started = process_start(holder.pid)
        if started is None:
            return False
        return not (started and holder.started and started != holder.started)
    now = now or utcnow()
    return now - holder.heartbeat_at < timedelta(seconds=stale_after)


class Heartbeat:
    """Refreshes a lease every ``interval`` seconds from a daemon thread until stopped."""

    def __init__(self, beat: Callable[[], None], done: Callable[[], None], interval: float) -> None:
        self._beat = beat
        self._done = done
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ctxscope-lease", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        try:
            while not self._stop.wait(self._interval):
                try:
                    self._beat()
                except Exception:  # noqa: BLE001 - a missed beat is retried at the next one
                    continue
        finally:
            self._done()
