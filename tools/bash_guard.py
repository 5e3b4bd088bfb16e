"""The guard between ctxscope and one Bash call: every process of the call dies with ctxscope.

``python -I -S bash_guard.py BASH -c COMMAND`` (Linux). ``BashTool`` starts the guard in a new
session with ``PR_SET_PDEATHSIG = SIGTERM``; the guard makes itself a child subreaper
(``PR_SET_CHILD_SUBREAPER``), so every process the command starts stays below it even after
its own parent exits, runs bash, and exits as bash did (same code, or the same signal) —
but first it ends whatever the command left running, after ``LINGER`` seconds.

When ctxscope dies — even by SIGKILL, when no code of its own runs — the kernel sends the guard
SIGTERM. So does ``BashTool`` on a timeout or a cancel (to the whole group). Either way the
guard passes SIGTERM to its process group, gives the command ``GRACE`` seconds to exit, then
SIGKILLs every descendant — those that left the group with ``setsid`` too: as a subreaper it
inherits any process whose parent exited — and finally its own group, itself included.

Only the standard library: the guard starts on every Bash call and must start fast.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Iterable

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
GRACE = 0.5
LINGER = 0.5
"""After bash exits, how long what it left behind may run on (a background job finishing
its output) before the guard ends it: the call never outlives its command by more."""
"""Seconds between SIGTERM and SIGKILL: shorter than ``tools.bash.TERM_GRACE_SECONDS``, so
on a timeout the guard has ended everything before BashTool SIGKILLs the group."""


class _Ending(Exception):
    """SIGTERM arrived: ctxscope died, or stopped the call."""


def _on_term(signum: int, frame: object) -> None:
    raise _Ending


def children_by_parent() -> dict[int, list[int]]:
    """Every live process's children, from ``/proc`` (as the kernel sees it now)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                ppid = int(handle.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    return children


def below(roots: Iterable[int], children: dict[int, list[int]]) -> set[int]:
    """Every process under ``roots`` in ``children`` (the roots themselves left out)."""
    found: set[int] = set()
    todo = [pid for root in roots for pid in children.get(root, [])]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, []))
    return found


def descendants(root: int) -> set[int]:
    """Every live process below ``root``."""
    return below([root], children_by_parent())


def end_everything() -> None:
    """SIGTERM the group, wait ``GRACE``, SIGKILL every descendant, then the group (us too)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    me = os.getpid()
    try:
        os.killpg(me, signal.SIGTERM)
    except OSError:
        pass
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and descendants(me):
        _reap()
        time.sleep(0.02)
    for _ in range(20):  # they may still be forking
        alive = descendants(me)
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)
        _reap()
    os.killpg(me, signal.SIGKILL)


def _end_leftovers() -> None:
    """bash has exited: give what it left ``LINGER`` seconds, then SIGKILL all of it —
    ``setsid`` children and any without the call's tag too, since as a subreaper the guard
    inherited every orphan of the command."""
    me = os.getpid()
    deadline = time.monotonic() + LINGER
    while descendants(me) and time.monotonic() < deadline:
        _reap()
        time.sleep(0.02)
    for _ in range(20):
        alive = descendants(me)
        if not alive:
            return
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)
        _reap()


def _reap() -> None:
    """Collect exited children (as a subreaper, orphans of the command become ours)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _exit_as(status: int) -> None:
    """Exit the way bash did: with its code, or killed by its signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig != signal.SIGKILL:  # SIGKILL cannot be handled: its action is always the default
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status))


def main(argv: list[str]) -> None:
    parent = os.getppid()
    signal.signal(signal.SIGTERM, _on_term)
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    if os.getppid() != parent or parent == 1:
        return  # ctxscope died before the parent-death signal could be armed
    try:
        bash = os.fork()
        if bash == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # should the guard be killed
            try:
                os.execv(argv[0], argv)
            finally:
                os._exit(127)
        while True:
            pid, status = os.waitpid(-1, 0)  # reaps the command's orphans too
            if pid == bash:
                _end_leftovers()
                _exit_as(status)
    except _Ending:
        end_everything()


if __name__ == "__main__":
    main(sys.argv[1:])
