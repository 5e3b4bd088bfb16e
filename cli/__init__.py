"""The ``ctxscope`` command line: headless subcommands, and the workbench when none is given.

Outside the engine: it parses arguments, asks the engine and prints. The workbench (``tui``)
starts from :mod:`cli.workbench` and imports nothing of this package.

Ctrl+C while ctxscope starts: this package is the first of ctxscope that the console script
(and ``python -m cli.main``) imports, so its handler is in place before the heavy imports
(pydantic, peewee, the engine): Ctrl+C there ends the process in one line, exit 130, instead of
a ``KeyboardInterrupt`` traceback from inside an import (issue 39: seen 7 times in 8 at 0.3 s).
:func:`cli.main.main` puts Python's own handler back once it runs, where ``KeyboardInterrupt``
is caught and said in one line. (A Ctrl+C before this package is imported, while Python itself
starts, is Python's.)
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

INTERRUPTED_STARTING = b"ctxscope: interrupted while starting; nothing stored\n"


def _interrupted_while_starting(signum: int, frame: FrameType | None) -> None:
    os.write(2, INTERRUPTED_STARTING)
    os._exit(130)  # nothing started yet: no cleanup to run, no import to unwind


def _started_as_a_command() -> bool:
    """The console script (``…/bin/ctxscope``) or ``python -m cli.…`` (``sys.argv[0]`` is
    ``-m`` while the module is found), not a program importing the package (the tests)."""
    first = sys.argv[0] if sys.argv else ""
    return first == "-m" or os.path.basename(first).startswith("ctxscope")


def ready_for_interrupts() -> None:
    """From now on Ctrl+C raises ``KeyboardInterrupt`` (its one line is said by the caller)."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)


if _started_as_a_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_while_starting)
