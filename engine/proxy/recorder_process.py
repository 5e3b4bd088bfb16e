"""The recorder in a process of its own, so that storing a request never holds the
forwarding process's interpreter (issue 44).

In one process the recorder's thread and the event loop share one interpreter lock: each
request's parsing, pricing and writing (about 1 ms of CPU for a small body, two thirds of what
the proxy spends on it) then competes with the forwarding of the next requests, which with 8
clients at once queue behind it. Here the proxy hands each capture to a queue (a feeder
thread sends it, so handing over never blocks the event loop) and a child process stores it
with the same :class:`~engine.proxy.recorder.Recorder` logic, printing each stored request's
line itself.

Nothing is held back: the child stores each capture as soon as it arrives; closing sends an
end mark after the last capture and waits for the child to store everything before it. If
the proxy dies without closing, the child still stores what reached it, then ends.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from collections import deque
from collections.abc import Callable
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

from engine.exchanges import Exchange
from engine.proxy.recorder import Capture, Recorder, pins_in
from engine.settings.config import Settings

PARENT_CHECK = 1.0
"""Seconds the child waits for a capture before it looks whether the proxy still runs."""
CLOSE_POLL = 1.0
"""Seconds closing waits for a reply from the child before it looks whether it still runs."""


def _record_forever(
    captures: Queue[Capture | None],
    replies: Queue[tuple[str, Any, Any]],
    path: str,
    settings: Settings,
    on_stored: Callable[[Exchange], None] | None,
    parent: int,
) -> None:
    """The child: store each capture as it comes, until the end mark or the proxy's end.

    Ctrl+C and SIGTERM sent to the whole process group are the proxy's to act on: the child
    ignores them and ends once the proxy has sent its end mark (or has gone)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    recorder = Recorder(path, on_stored=on_stored, settings=settings)
    sent: set[int] = set()
    failed = 0
    while True:
        try:
            capture = captures.get(timeout=PARENT_CHECK)
        except queue.Empty:
            if os.getppid() != parent:
                break  # the proxy died without closing: what it sent is stored
            continue
        if capture is None:
            break
        recorder.record(capture)
        for sid, source in recorder.conversations.items():
            if sid not in sent:
                sent.add(sid)
                replies.put(("session", sid, source))
        if recorder.failed != failed:  # one capture gives at most one failure
            failed = recorder.failed
            replies.put(("failure", recorder.failures[-1], None))
    recorder.close_store()
    replies.put(("done", None, None))


class RecorderProcess:
    """Stores captures into the database at ``path`` from a child process; the same
    ``submit``/``close``/``conversations``/``failures``/``pins_of`` as :class:`Recorder`.

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
        context = multiprocessing.get_context("spawn")  # no fork of a threaded process
        self._captures: Queue[Capture | None] = context.Queue()
        self._replies: Queue[tuple[str, Any, Any]] = context.Queue()
        self._child = context.Process(
            target=_record_forever,
            args=(
                self._captures,
                self._replies,
                str(path),
                self.settings,
                on_stored,
                os.getpid(),
            ),
            name="ctxscope-record",
            daemon=False,
        )
        self._child.start()
        self._closed = False
        self.conversations: dict[int, str] = {}
        """As :attr:`Recorder.conversations`: filled in when the recorder is closed."""
        self.failures: deque[str] = deque(maxlen=100)
        """As :attr:`Recorder.failures`: filled in when the recorder is closed."""

    def submit(self, capture: Capture) -> None:
        """Hand ``capture`` over; returns at once (a feeder thread sends it)."""
        self._captures.put(capture)

    def close(self) -> None:
        """Send the end mark, and wait for the child to store every capture before it."""
        if self._closed:
            return
        self._closed = True
        self._captures.put(None)
        while True:
            try:
                kind, first, second = self._replies.get(timeout=CLOSE_POLL)
            except queue.Empty:
                if self._child.is_alive():
                    continue  # still storing: a long queue on a busy machine
                self.failures.append("the recorder's process ended before storing everything")
                break
            if kind == "done":
                break
            if kind == "session":
                self.conversations.setdefault(int(first), str(second))
            elif kind == "failure":
                self.failures.append(str(first))
        self._child.join()
        self._captures.close()
        self._replies.close()

    def pins_of(self, client: str) -> list[str]:
        """As :meth:`Recorder.pins_of`: a read of its own, in this process."""
        return pins_in(self.path, client)
