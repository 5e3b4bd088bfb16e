"""The Bash sandbox: which one this machine can run, and the command line that enters it.

``bash_sandbox = "auto"`` picks, once per process:

- ``bwrap`` — bubblewrap, when installed and able to create its namespaces;
- ``unshare`` — util-linux ``unshare`` where the kernel lets an unprivileged user create user,
  PID and mount namespaces (checked by running ``unshare -Urpf --mount-proc true``); the
  namespace's first process is ``tools/sandbox_init.py``;
- ``none`` — neither works: Bash runs under the guard alone (``tools/bash_guard.py``, a child
  subreaper that still finds ``setsid`` children), and this is said in the result.

Either sandbox gives the command its own PID namespace and ``/proc`` (no other process, so no
other process's environment, is visible), its own mount table with everything read-only but
the workspace and a private ``/tmp``, and — with ``bash_network = false`` — an empty network
namespace. When bash (PID 1 of the namespace) exits or is killed, the kernel ends every process
left in it. Setting ``bash_sandbox = "none"`` turns the sandbox off.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

Sandbox = Literal["bwrap", "unshare", "none"]
Choice = Literal["auto", "bwrap", "unshare", "none"]

INIT = Path(__file__).with_name("sandbox_init.py")
PROBE_SECONDS = 5.0
"""How long the one-time probe of a sandbox may take before it counts as unavailable."""


def _works(command: list[str]) -> bool:
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=PROBE_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@functools.cache
def available(kind: Sandbox) -> bool:
    """Whether ``kind`` can run here (probed once per process)."""
    if kind == "none":
        return True
    if not sys.platform.startswith("linux"):
        return False
    if kind == "bwrap":
        bwrap = shutil.which("bwrap")
        return bwrap is not None and _works(
            [
                bwrap,
                "--unshare-user",
                "--unshare-pid",
                "--ro-bind",
                "/",
                "/",
                "--proc",
                "/proc",
                "true",
            ]  # fmt: skip
        )
    unshare = shutil.which("unshare")
    return unshare is not None and _works([unshare, "-Urpf", "--mount-proc", "true"])


def choose(choice: Choice) -> Sandbox:
    """The sandbox ``choice`` gives on this machine: ``auto`` takes the first that works;
    a named one that does not work falls back to ``none`` (the result says so)."""
    if choice == "auto":
        kinds: tuple[Sandbox, ...] = ("bwrap", "unshare")
        for kind in kinds:
            if available(kind):
                return kind
        return "none"
    return choice if available(choice) else "none"


def wrap(kind: Sandbox, workspace: Path, argv: list[str], *, network: bool) -> list[str]:
    """``argv`` (``bash -c COMMAND``) inside the sandbox ``kind``, run in ``workspace``."""
    if kind == "none":
        return argv
    ws = str(workspace)
    if kind == "bwrap":
        bwrap = shutil.which("bwrap") or "bwrap"
        net = [] if network else ["--unshare-net"]
        return [
            bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", *net,
            "--die-with-parent", "--new-session",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--bind", ws, ws, "--chdir", ws, "--", *argv,
        ]  # fmt: skip
    unshare = shutil.which("unshare") or "unshare"
    net = [] if network else ["--net"]
    return [
        unshare, "--user", "--map-root-user", "--pid", "--fork", "--mount", "--mount-proc",
        "--kill-child=SIGKILL", *net, "--",
        sys.executable, "-I", "-S", str(INIT), ws, *argv,
    ]  # fmt: skip
