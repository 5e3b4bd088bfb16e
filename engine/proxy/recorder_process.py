"""The recorder in a process of its own, so that storing a request never holds the
forwarding process's interpreter (issue 44).

In one process the recorder's thread and the event loop share one interpreter lock: each
request's parsing, pricing and writing (about 1 ms of CPU for a small body, two thirds of what
the proxy spent on it) then competed with the forwarding of the next requests, which with 8
clients at once queued behind it. Here the proxy writes each capture (pickled) into a pipe to
a child process (``python -m engine.proxy.recorder_process``), which stores it with the same
:class:`~engine.proxy.recorder.Recorder` logic and prints each stored request's line itself.

Handing over never blocks the event loop: the pipe is non-blocking, and what does not fit
waits in a buffer the loop writes out as the pipe drains. Nothing is held back: a small
capture is in the pipe before its answer is sent to the client, and the child stores each
capture as it arrives. Closing writes what is left and closes the pipe; the child stores
everything before the end of the pipe, then says which conversations it recorded and what it
could not store, and ends. If the proxy dies, the pipe ends just the same: what is in it is
stored. The child is in a session of its own, so Ctrl+C and SIGTERM sent to the terminal's
process group are the proxy's to act on.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import operator
import os
import pickle
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from engine.exchanges import Exchange
from engine.proxy.recorder import Capture, Recorder, pins_in
from engine.settings.config import Settings

PIPE_BYTES = 1 << 20
"""The pipe's size asked for (Linux: at most /proc/sys/fs/pipe-max-size, 1 MiB by default,
without privileges): a 600 KB request goes in one write, not sixteen waits for the child to
drain 64 KiB."""
CAPTURE_FIELDS = operator.attrgetter(*(f.name for f in dataclasses.fields(Capture)))
"""A capture's fields, in order: what goes into the pipe (``Capture(*fields)`` again in the
child). A tuple of them pickles in less than half the time the dataclass does (no
``copyreg`` in Python per capture): 45 against 110 µs on the forwarding path, where the
proxy's caches are cold from waiting on the upstream (``bench/bench_proxy.py``, issue 44)."""
PENDING_LIMIT = 64 << 20
"""Bytes of captures waiting for room in the pipe (the child storing slower than requests
come) past which the proxy forwards no new request until they are down to a quarter of it:
the agent waits a moment instead of the proxy's memory growing without end (it grew by about
0.13 MiB a request with an upstream that answers at once) or a capture being dropped."""
ROOT = Path(__file__).resolve().parents[2]
"""The folder ``engine`` is imported from (the child imports it from there too)."""


class RecorderProcess:
    """Stores captures into the database at ``path`` from a child process; the same
    ``submit``/``close``/``conversations``/``failures``/``pins_of`` as :class:`Recorder`.

    ``submit`` is called on the proxy's event loop; ``close`` once that loop has stopped.
    ``on_stored`` runs in the child, so it must be picklable (a module-level function or a
    ``functools.partial`` of one)."""

    def __init__(
        self,
        path: Path | str,
        on_stored: Callable[[Exchange], None] | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.path = path
        self.settings = settings or Settings()
        replies_in, replies_out = os.pipe()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *_pythonpath()])}
        self._child = subprocess.Popen(
            [sys.executable, "-m", "engine.proxy.recorder_process", str(replies_out)],
            stdin=subprocess.PIPE,
            pass_fds=(replies_out,),
            start_new_session=True,
            env=env,
        )
        os.close(replies_out)
        self._replies = os.fdopen(replies_in, "rb")
        assert self._child.stdin is not None
        self._pipe: IO[bytes] = self._child.stdin
        self._fd = self._pipe.fileno()
        with contextlib.suppress(OSError, AttributeError):  # Linux only; 64 KiB elsewhere
            fcntl.fcntl(self._fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        self._pending = bytearray()
        """Pickled captures the pipe had no room for yet (written as it drains)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._caught_up: list[Callable[[], None]] = []
        """What waits for :attr:`behind` to end (:meth:`when_caught_up`)."""
        self._write_all(pickle.dumps((str(path), self.settings, on_stored)))
        os.set_blocking(self._fd, False)
        self._closed = False
        self.conversations: dict[int, str] = {}
        """As :attr:`Recorder.conversations`: filled in when the recorder is closed."""
        self.failures: deque[str] = deque(maxlen=100)
        """As :attr:`Recorder.failures`: filled in when the recorder is closed."""

    def submit(self, capture: Capture) -> None:
        """Hand ``capture`` over (on the event loop); returns at once."""
        data = pickle.dumps(CAPTURE_FIELDS(capture), protocol=pickle.HIGHEST_PROTOCOL)
        if self._loop is not None:  # the loop waits for room in the pipe: after what waits
            self._pending += data
            return
        # Nothing waits (then nothing is pending): into the pipe as it is, not copied first.
        written = self._write_some(data)
        if written == len(data):
            return
        self._pending += memoryview(data)[written:]
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:  # not on an event loop: wait for room in the pipe
            os.set_blocking(self._fd, True)
            self._write_all(bytes(self._pending))
            self._pending.clear()
            os.set_blocking(self._fd, False)
            return
        self._loop.add_writer(self._fd, self._drained)

    @property
    def behind(self) -> bool:
        """More than :data:`PENDING_LIMIT` bytes of captures wait for the pipe."""
        return len(self._pending) > PENDING_LIMIT

    def when_caught_up(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the event loop) once what waits is down to a quarter of
        :data:`PENDING_LIMIT`; at once if it is already."""
        if len(self._pending) <= PENDING_LIMIT // 4:
            callback()
        else:
            self._caught_up.append(callback)

    def _write_some(self, data: bytes) -> int:
        """Write what the pipe has room for of ``data``; how much was handled (all of it if
        the child is gone: said when the recorder is closed)."""
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except BrokenPipeError:
            return len(data)

    def _drained(self) -> None:
        """The pipe has room again: write what waits; stop watching once it is all out."""
        self._flush()
        if not self._pending and self._loop is not None:
            self._loop.remove_writer(self._fd)
            self._loop = None
        if self._caught_up and len(self._pending) <= PENDING_LIMIT // 4:
            waiting, self._caught_up = self._caught_up, []
            for callback in waiting:
                callback()

    def _flush(self) -> None:
        try:
            while self._pending:
                written = os.write(self._fd, self._pending)
                del self._pending[:written]
        except BlockingIOError:
            pass  # the pipe is full: the loop writes the rest when it drains
        except BrokenPipeError:
            self._pending.clear()  # the child is gone: said when the recorder is closed

    def _write_all(self, data: bytes) -> None:
        try:
            self._pipe.write(data)
            self._pipe.flush()
        except BrokenPipeError:
            pass

    def close(self) -> None:
        """Write what is left, end the pipe, and wait for the child to store everything."""
        if self._closed:
            return
        self._closed = True
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_writer(self._fd)
        self._loop = None
        os.set_blocking(self._fd, True)
        self._write_all(bytes(self._pending))
        self._pending.clear()
        try:
            self._pipe.close()
        except BrokenPipeError:
            pass
        said = self._replies.read()
        self._replies.close()
        self._child.wait()
        try:
            replies = json.loads(said)
        except (json.JSONDecodeError, UnicodeDecodeError):
            self.failures.append(
                f"the recorder's process ended (exit code {self._child.returncode}) "
                "before it said what it stored"
            )
            return
        self.conversations.update({int(k): str(v) for k, v in replies["conversations"].items()})
        self.failures.extend(str(f) for f in replies["failures"])

    def pins_of(self, client: str) -> list[str]:
        """As :meth:`Recorder.pins_of`: a read of its own, in this process."""
        return pins_in(self.path, client)


def _pythonpath() -> list[str]:
    existing = os.environ.get("PYTHONPATH", "")
    return [p for p in existing.split(os.pathsep) if p]


def main(replies_fd: int) -> None:
    """The child: store each capture from stdin as it comes, until the pipe ends; then
    write what it recorded (JSON) to ``replies_fd``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    source = sys.stdin.buffer
    replies: dict[str, Any] = {"conversations": {}, "failures": []}
    try:
        path, settings, on_stored = pickle.load(source)
    except (EOFError, pickle.UnpicklingError):
        path = None
    if path is not None:
        recorder = Recorder(path, on_stored=on_stored, settings=settings)
        while True:
            try:
                fields = pickle.load(source)
            except (EOFError, pickle.UnpicklingError):
                break  # the end of the pipe (or a capture cut by the proxy's death)
            recorder.record(Capture(*fields))
        recorder.close_store()
        replies = {
            "conversations": {str(k): v for k, v in recorder.conversations.items()},
            "failures": list(recorder.failures),
        }
    try:
        with os.fdopen(replies_fd, "w", encoding="utf-8") as out:
            json.dump(replies, out)
    except BrokenPipeError:
        pass  # the proxy is gone: what it handed over is stored


if __name__ == "__main__":
    main(int(sys.argv[1]))
