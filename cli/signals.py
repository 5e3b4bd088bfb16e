"""SIGINT and SIGTERM turned into an action that may take locks (``watch``, ``ask``).

A Python signal handler runs on the main thread between two bytecodes, maybe while that
thread holds a lock the action needs: ``threading.Event.set`` from a handler that
interrupted ``Event.wait`` (which holds the event's lock for a moment on its way in and
out) waits for itself, and the process never ends (a ``watch --jsonl`` that did not end on
SIGTERM, seen once in twenty runs of its test). So the handler only writes a byte to a
pipe; a thread of its own reads the pipe and runs the action, taking its locks as any other
thread would.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

STOPPING = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def on_signals(
    action: Callable[[], None], signums: tuple[signal.Signals, ...] = STOPPING
) -> Iterator[None]:
    """While inside, each of ``signums`` runs ``action`` on the relay thread; the handlers
    there before are put back after. Off the main thread (where Python allows no handler)
    nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read, write = os.pipe()
    os.set_blocking(write, False)  # the handler must never wait

    def handler(signum: int, frame: object) -> None:
        try:
            os.write(write, b"\0")
        except OSError:  # a pipe full of earlier signals: the action runs for them already
            pass

    def relay() -> None:
        while os.read(read, 1):  # b"" once the writing end is closed
            action()

    relaying = threading.Thread(target=relay, name="signals", daemon=True)
    relaying.start()
    previous = {sig: signal.signal(sig, handler) for sig in signums}
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)
        os.close(write)
        relaying.join()
        os.close(read)
