"""SIGTERM and SIGINT relayed off the main thread (cli/signals.py).

A handler that set a ``threading.Event`` itself could interrupt the main thread inside that
event's ``wait`` — which holds the event's lock on its way in and out — and wait for itself:
``watch --jsonl`` once did not end on SIGTERM. Three hundred signals sent while the main thread
does nothing but ``wait`` on the event make that moment certain to come (the handler that set
the event itself hung in 3 runs of 3, each killed after 30 s).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from cli.signals import on_signals

ROOT = Path(__file__).resolve().parents[2]

STORM = textwrap.dedent(
    """
    import os, signal, threading, time
    from cli.signals import on_signals

    stop = threading.Event()
    before = signal.getsignal(signal.SIGTERM)

    def storm():
        for _ in range(300):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.0002)

    with on_signals(stop.set):
        sender = threading.Thread(target=storm)
        sender.start()
        while sender.is_alive():
            stop.wait(0)  # in and out of the event's lock, as fast as it goes
        sender.join()
    print("stopped" if stop.is_set() else "not stopped")
    print("restored" if signal.getsignal(signal.SIGTERM) is before else "not restored")
    """
)


def test_a_storm_of_sigterms_while_the_main_thread_waits_on_the_event() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", STORM], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["stopped", "restored"]
    assert "Traceback" not in done.stderr


def test_the_action_runs_once_per_signal_on_another_thread() -> None:
    ran: list[str] = []
    three = threading.Semaphore(0)

    def action() -> None:
        ran.append(threading.current_thread().name)
        three.release()

    with on_signals(action, (signal.SIGUSR1,)):
        for _ in range(3):
            os.kill(os.getpid(), signal.SIGUSR1)
        for _ in range(3):
            assert three.acquire(timeout=30)
    assert ran == ["signals"] * 3


def test_off_the_main_thread_nothing_is_installed() -> None:
    before = signal.getsignal(signal.SIGUSR2)
    seen: list[object] = []

    def inside() -> None:
        with on_signals(lambda: None, (signal.SIGUSR2,)):
            seen.append(signal.getsignal(signal.SIGUSR2))

    worker = threading.Thread(target=inside)
    worker.start()
    worker.join()
    assert seen == [before]
