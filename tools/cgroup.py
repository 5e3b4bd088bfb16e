"""A control group per sandboxed Bash call: processes bounded for root too.

``RLIMIT_NPROC`` (``bash_max_processes``) is never applied to root — the kernel skips it for
uid 0 — so a fork loop run as root could take every PID of the host for the call's timeout.
A cgroup's ``pids.max`` holds for everyone. Where this process may make one, each sandboxed
call gets its own, joined before the sandbox starts (the command line :func:`joined` builds
writes ``0`` to its ``cgroup.procs``), with:

- **cgroup v2**, when this process' own cgroup delegates the ``pids`` controller to children
  (``cgroup.subtree_control``, as systemd does for a user's delegated scope): ``pids.max``,
  and ``memory.max`` (``bash_max_memory_mb``, for the whole call) when ``memory`` is
  delegated too;
- else **cgroup v1**'s ``pids`` hierarchy (``/sys/fs/cgroup/pids``) when it is writable (root
  on a v1 or hybrid host): ``pids.max`` only — v1's memory controller is left alone, since
  moving a process out of its memory group would take it out of whatever limit the machine
  puts on this one;
- else none: the call runs with the rlimits alone, and :func:`available` says so.

The group is removed when the call ends (:meth:`CallGroup.remove`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

V1_PIDS = Path("/sys/fs/cgroup/pids")
REMOVE_SECONDS = 2.0
"""How long removing a group waits for its last processes to be gone."""
JOIN_SCRIPT = 'echo 0 > "$0" || exit 126; exec "$@"'
"""Run (by bash) before the sandbox: join the group, then become the sandbox."""


def _v2_parent() -> tuple[Path, bool] | None:
    """This process' cgroup v2 folder when it delegates ``pids`` to children, and whether it
    delegates ``memory`` too."""
    try:
        own = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    path = next((line[3:] for line in own if line.startswith("0::")), None)
    root = next((line.split()[4] for line in mounts if " - cgroup2 " in line), None)
    if path is None or root is None:
        return None
    folder = Path(root + path)
    try:
        delegated = (folder / "cgroup.subtree_control").read_text().split()
    except OSError:
        return None
    if "pids" not in delegated or not os.access(folder, os.W_OK):
        return None
    return folder, "memory" in delegated


@functools.cache
def available() -> str:
    """``v2``, ``v1-pids`` or ``""``: the kind of group a call gets here (probed once)."""
    if _v2_parent() is not None:
        return "v2"
    if (V1_PIDS / "cgroup.procs").is_file() and os.access(V1_PIDS, os.W_OK):
        return "v1-pids"
    return ""


@dataclass
class CallGroup:
    """One call's cgroup."""

    folder: Path

    @property
    def procs(self) -> Path:
        return self.folder / "cgroup.procs"

    @classmethod
    def make(cls, processes: int, memory: int) -> CallGroup | None:
        """A new group bounded to ``processes`` tasks (and ``memory`` bytes where v2 can),
        or None where no group can be made (0 processes: no bound asked)."""
        kind = available()
        if not kind or processes <= 0:
            return None
        name = f"ctxscope-{os.getpid()}-{secrets.token_hex(4)}"
        if kind == "v2":
            found = _v2_parent()
            if found is None:
                return None
            parent, with_memory = found
        else:
            parent, with_memory = V1_PIDS, False
        folder = parent / name
        try:
            folder.mkdir()
            (folder / "pids.max").write_text(f"{processes}\n")
            if with_memory and memory > 0:
                (folder / "memory.max").write_text(f"{memory}\n")
        except OSError:
            with contextlib.suppress(OSError):
                folder.rmdir()
            return None
        return cls(folder)

    def joined(self, argv: list[str], bash: str) -> list[str]:
        """``argv`` started by a bash that first moves itself into this group."""
        return [bash, "-c", JOIN_SCRIPT, str(self.procs), *argv]

    def remove(self) -> None:
        """End what is left in the group (the call has ended its processes already: this is
        the backstop) and remove it once empty."""
        deadline = time.monotonic() + REMOVE_SECONDS
        while True:
            with contextlib.suppress(OSError, ValueError):
                for pid in self.procs.read_text().split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), signal.SIGKILL)
            try:
                self.folder.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() >= deadline:
                    return  # left for the next start to find; harmless and empty soon
                time.sleep(0.02)
