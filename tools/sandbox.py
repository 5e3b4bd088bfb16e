"""The Bash sandbox: which one this machine can run, and the command line that enters it.

``bash_sandbox = "auto"`` picks, once per process:

- ``bwrap`` — bubblewrap (0.8 or later), when installed and able to create its namespaces;
- ``unshare`` — util-linux ``unshare`` with ``tools/sandbox_init.py`` as the namespace's first
  process, where the kernel lets an unprivileged user create (nested) user, PID and mount
  namespaces (checked once by running the init on an empty folder);
- ``none`` — neither works: Bash runs under the guard alone (``tools/bash_guard.py``, a child
  subreaper that still finds ``setsid`` children), and this is said in the result.

Either sandbox gives the command its own PID namespace and ``/proc`` (no other process, so no
other process's environment, is visible), its own mount table with everything read-only but
the workspace and a private ``/tmp`` of bounded size, and — unless ``bash_network`` — an empty
network namespace. The mounts are locked: the command runs with no capability, with
``no_new_privs``, in a user namespace below the one that made the mounts, behind a seccomp
filter refusing mount, namespace, ptrace, keyring, module, kexec, bpf and perf calls and,
unless ``bash_unix_sockets``, new Unix sockets (``tools.sandbox_init.seccomp_program``).
Both run the command under the per-call :class:`Limits`. When bash (PID 1 of the namespace)
exits or is killed, the kernel ends every process left in it. Setting
``bash_sandbox = "none"`` turns the sandbox off (the limits but the process count still
apply).
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tools.sandbox_init import (
    CREDENTIAL_FILES,
    CREDENTIAL_FOLDERS,
    existing_control_files,
    seccomp_program,
)

if TYPE_CHECKING:
    from tools.base import ToolSettings

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
                "--unshare-all",
                "--unshare-user",
                "--disable-userns",
                "--cap-drop",
                "ALL",
                "--ro-bind",
                "/",
                "/",
                "--proc",
                "/proc",
                "--size",
                "65536",
                "--tmpfs",
                "/tmp",
                "true",
            ]  # fmt: skip
        )
    bash = shutil.which("bash")
    if shutil.which("unshare") is None or bash is None:
        return False
    # The init itself, on an empty folder: it also needs a nested user namespace and seccomp.
    with tempfile.TemporaryDirectory() as folder:
        argv = wrap("unshare", Path(folder), [bash, "-c", "true"], network=False, limits=Limits())
        return _works(argv)


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


@dataclass(frozen=True)
class Limits:
    """What one Bash call may use (0: no limit). Set on the command with bash's ``ulimit``
    (soft and hard together, so the command cannot raise them) and, for ``/tmp``, as the
    tmpfs' ``size=``."""

    processes: int = 256
    """``RLIMIT_NPROC``. Counted per user *in the sandbox's user namespace*, so only inside a
    sandbox; and the kernel never applies it to root (uid 0 on the host)."""
    memory: int = 2 << 30
    """``RLIMIT_DATA`` in bytes: a process' heap and private writable mappings."""
    address_space: int = 0
    """``RLIMIT_AS`` in bytes: all of a process' mappings, reserved or not (the JVM reserves
    several GiB at start, so this is off by default)."""
    file_size: int = 1 << 30
    """``RLIMIT_FSIZE`` in bytes: the largest file a process may write."""
    cpu_seconds: int = 600
    """``RLIMIT_CPU``: CPU seconds per process."""
    tmp: int = 256 << 20
    """The private ``/tmp``'s size in bytes."""

    @classmethod
    def from_settings(cls, settings: ToolSettings) -> Limits:
        mib = 1 << 20
        return cls(
            processes=settings.bash_max_processes,
            memory=settings.bash_max_memory_mb * mib,
            address_space=settings.bash_max_address_space_mb * mib,
            file_size=settings.bash_max_file_mb * mib,
            cpu_seconds=settings.bash_max_cpu_seconds,
            tmp=settings.bash_tmp_mb * mib,
        )

    def ulimit(self, *, processes: bool) -> str:
        """The ``ulimit`` arguments, each kept at or below the hard limit already in force."""
        parts = []
        kib = 1024
        pairs = [
            ("-u", resource.RLIMIT_NPROC, self.processes if processes else 0, 1),
            ("-d", resource.RLIMIT_DATA, self.memory, kib),
            ("-v", resource.RLIMIT_AS, self.address_space, kib),
            ("-f", resource.RLIMIT_FSIZE, self.file_size, kib),
            ("-t", resource.RLIMIT_CPU, self.cpu_seconds, 1),
        ]
        for flag, which, value, unit in pairs:
            if value <= 0:
                continue
            hard = resource.getrlimit(which)[1]
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            parts.append(f"{flag} {max(1, value // unit)}")
        return " ".join(parts)


LIMITS_SCRIPT = 'ulimit {} || exit 126; exec "$@"'
"""Run by bash before the command: set the limits, then become the command."""


def limited(bash: str, argv: list[str], limits: Limits, *, processes: bool) -> list[str]:
    """``argv`` started by a bash that first sets ``limits``."""
    arguments = limits.ulimit(processes=processes)
    if not arguments:
        return argv
    return [bash, "-c", LIMITS_SCRIPT.format(arguments), "ctxscope-limits", *argv]


def seccomp_pipe(*, unix_sockets: bool = False) -> int:
    """A pipe's read end holding the seccomp filter, for ``bwrap --seccomp FD`` (inheritable;
    the caller passes it on and closes it)."""
    read, write = os.pipe()
    try:
        # a few hundred bytes: within the pipe's buffer, so the write cannot block
        os.write(write, seccomp_program(unix_sockets=unix_sockets))
    finally:
        os.close(write)
    return read


def credential_mounts(home: str) -> list[str]:
    """bubblewrap's arguments hiding the credential files and folders under ``home`` that
    exist (``tools.sandbox_init.hide_credentials`` does the same in the built-in sandbox)."""
    if not home or not os.path.isabs(home) or not os.path.isdir(home):
        return []
    out: list[str] = []
    for name in CREDENTIAL_FILES:
        path = os.path.join(home, name)
        if os.path.isfile(path) and not os.path.islink(path):
            out += ["--ro-bind", "/dev/null", path]
    for name in CREDENTIAL_FOLDERS:
        path = os.path.join(home, name)
        if os.path.isdir(path) and not os.path.islink(path):
            out += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    return out


def wrap(
    kind: Sandbox,
    workspace: Path,
    argv: list[str],
    *,
    network: bool,
    limits: Limits,
    unix_sockets: bool = False,
    seccomp_fd: int | None = None,
) -> list[str]:
    """``argv`` (``bash -c COMMAND``) inside the sandbox ``kind``, run in ``workspace``, with
    ``limits``; for ``bwrap``, ``seccomp_fd`` (from :func:`seccomp_pipe`, made with the same
    ``unix_sockets``) is the filter — None only where there is none for the architecture."""
    ws = str(workspace)
    command = limited(argv[0], argv, limits, processes=kind != "none")
    if kind == "none":
        return command
    if kind == "bwrap":
        bwrap = shutil.which("bwrap") or "bwrap"
        net = ["--share-net"] if network else []
        seccomp = [] if seccomp_fd is None else ["--seccomp", str(seccomp_fd)]
        size = ["--size", str(limits.tmp)] if limits.tmp > 0 else []
        control = [a for p in existing_control_files(ws) for a in ("--ro-bind", p, p)]
        hidden = credential_mounts(os.environ.get("HOME", ""))
        # bwrap's /dev is a tmpfs as large as the machine allows: made read-only, with a
        # /dev/shm bounded like /tmp (the device nodes still work).
        return [
            bwrap, "--unshare-all", *net, "--unshare-user", "--disable-userns",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--dev", "/dev", *size, "--tmpfs", "/dev/shm",
            "--remount-ro", "/dev", "--proc", "/proc", *hidden, *size, "--tmpfs", "/tmp",
            "--bind", ws, ws, *control, "--chdir", ws, *seccomp, "--", *command,
        ]  # fmt: skip
    unshare = shutil.which("unshare") or "unshare"
    net = [] if network else ["--net"]
    return [
        unshare, "--user", "--map-root-user", "--pid", "--fork", "--mount", "--mount-proc",
        "--kill-child=SIGKILL", *net, "--",
        sys.executable, "-I", "-S", str(INIT), ws, str(limits.tmp), str(int(unix_sockets)),
        "--", *command,
    ]  # fmt: skip
