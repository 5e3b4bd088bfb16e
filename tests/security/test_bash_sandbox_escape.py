"""The Bash sandbox against a command that tries to undo it, from inside, through the real tool.

Issue 29 found the old sandbox undoing itself: bash ran as root of its user namespace with
every capability, so ``umount -l /tmp`` and ``mount -o remount,bind,rw /`` wrote the host.
Each attack here runs as the agent's command and asserts the exact effect: the syscall's
errno (printed by a python one-liner through ctypes), the host file that must not exist, the
limit's own error. Every call is bounded by the tool's timeout.

Which sandbox runs is probed independently of ``tools.sandbox`` (in ``test_bash_sandbox``):
``bwrap`` on PATH and able to start with ``--disable-userns``, else ``unshare`` able to nest
a second user namespace, else none (then the attack tests are skipped, saying so, and the
limit and network tests assert what holds without a sandbox). On this project's build
machine that is ``unshare``; with bubblewrap on PATH every test runs against bwrap.
"""

from __future__ import annotations

import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.settings.config import Settings
from tests.security import test_bash_sandbox
from tools.base import ToolContext, ToolResult
from tools.registry import default_registry
from tools.sandbox import choose

ROOT = Path(__file__).resolve().parents[2]
PY = os.path.realpath(sys.executable)
"""The interpreter the in-sandbox probes run (standard library only): the real binary, not the
virtualenv's link to it, which may live in a checkout under /tmp (a fresh clone, as CI's),
where the sandbox's private /tmp hides it."""


EXPECTED = test_bash_sandbox.EXPECTED  # the same independent probe
needs_sandbox = pytest.mark.skipif(
    EXPECTED == "none", reason="no sandbox can run here: nothing to attack"
)


def _bash(workspace: Path, command: str, **settings: object) -> ToolResult:
    """``command`` through the Bash tool — only once the sandbox it will get is known to be
    the one probed: an attack run on the host by a fallback to ``none`` would really
    unmount, remount and write there."""
    if settings.get("bash_sandbox") != "none" and choose("auto") != EXPECTED:
        pytest.fail(f"tools.sandbox chose {choose('auto')!r}, not {EXPECTED!r}: not run")
    ctx = ToolContext(
        workspace=workspace,
        settings=Settings(bash_policy="allow", bash_timeout=30, **settings),  # type: ignore[arg-type]
    )
    result = default_registry().run("Bash", {"command": command}, ctx)
    assert result.data["sandbox"] == EXPECTED or settings.get("bash_sandbox") == "none"
    return result


def _syscalls(workspace: Path, calls: dict[str, str], script: str = "calls.py") -> str:
    """A command running a python script (written into the workspace) that makes each libc
    call and prints ``name result errno-name``."""
    lines = ["import ctypes, errno, os", "libc = ctypes.CDLL(None, use_errno=True)"]
    for name, call in calls.items():
        lines += [
            f"r = {call}",
            f"print({name!r}, r, errno.errorcode.get(ctypes.get_errno(), 0) if r < 0 else 0)",
        ]
    (workspace / script).write_text("\n".join(lines) + "\n")
    return f"{PY} {script}"


def _printed(stdout: str) -> dict[str, str]:
    return {line.split()[0]: line.split()[2] for line in stdout.splitlines() if line.strip()}


@needs_sandbox
def test_the_command_runs_with_no_capability_no_new_privs_and_seccomp(workspace: Path) -> None:
    result = _bash(workspace, "grep -E '^(Cap|NoNewPrivs|Seccomp:)' /proc/self/status")
    status = dict(line.split(":\t") for line in result.data["stdout"].splitlines())
    assert status == {
        "CapInh": "0000000000000000",
        "CapPrm": "0000000000000000",
        "CapEff": "0000000000000000",
        "CapBnd": "0000000000000000",
        "CapAmb": "0000000000000000",
        "NoNewPrivs": "1",
        "Seccomp": "2",  # SECCOMP_MODE_FILTER (proc(5))
    }


@needs_sandbox
def test_the_issues_remount_and_umount_attack_writes_nothing_on_the_host(workspace: Path) -> None:
    """The issue's two commands, verbatim but for the file names."""
    name = f"ctxscope-escape-{uuid.uuid4().hex[:8]}"
    host_tmp, host_home = Path("/tmp") / name, Path.home() / name
    command = (
        f"cd / ; umount -l /tmp ; mount -o remount,bind,rw / ; touch /tmp/{name} ; "
        f"mount -o remount,bind,rw / && touch ~/{name}; touch ~/{name}; echo done"
    )
    try:
        result = _bash(workspace, command)
    finally:
        leaked = [p for p in (host_tmp, host_home) if p.exists()]
        for path in leaked:
            path.unlink()
    assert leaked == []
    assert result.data["stdout"] == "done\n"
    # umount and mount refused; the touch of ~ hits the read-only file system.
    assert (
        f"touch: cannot touch '{Path.home()}/{name}': Read-only file system"
        in (result.data["stderr"])
    )
    lines = result.data["stderr"].splitlines()  # util-linux words the refusal per version
    assert sum(line.startswith("umount: /tmp: ") for line in lines) == 1
    assert sum(line.startswith("mount: /: ") for line in lines) == 2


@needs_sandbox
def test_mount_umount_namespace_and_trace_calls_are_refused(workspace: Path) -> None:
    """Each call straight to libc, so the errno is the kernel's answer; EPERM is the seccomp
    filter's (``setns(0, 0)`` would be EINVAL without it, ``clone3`` EFAULT or EINVAL)."""
    (workspace / "m").mkdir()
    m = workspace / "m"
    calls = {
        "remount_root_rw": 'libc.mount(None, b"/", None, 0x1000 | 0x20, None)',
        "umount_tmp": 'libc.umount2(b"/tmp", 2)',
        "mount_tmpfs": f'libc.mount(b"tmpfs", b"{m}", b"tmpfs", 0, None)',
        "mount_proc": f'libc.mount(b"proc", b"{m}", b"proc", 0, None)',
        "fsopen": 'libc.syscall(430, b"tmpfs", 0)',
        "open_tree": 'libc.syscall(428, -100, b"/", 1)',
        "mount_setattr": 'libc.syscall(442, -100, b"/", 0, None, 0)',
        "pivot_root": 'libc.syscall(155, b"/", b"/")',
        "unshare_user": "libc.unshare(0x10000000)",
        "unshare_mount": "libc.unshare(0x00020000)",
        "setns": "libc.setns(0, 0)",
        "clone_newuser": "libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)",
        "clone3": "libc.syscall(435, 0, 0)",
        "keyctl": "libc.syscall(250, 0, 0, 0, 0, 0)",
        "add_key": 'libc.syscall(248, b"user", b"k", b"v", 1, -4)',
        "bpf": "libc.syscall(321, 0, 0, 0)",
        "perf_event_open": "libc.syscall(298, 0, 0, -1, -1, 0)",
        "init_module": "libc.syscall(175, 0, 0, 0)",
        "open_by_handle_at": "libc.syscall(304, -100, 0, 0)",
    }
    result = _bash(workspace, _syscalls(workspace, calls))
    expected = dict.fromkeys(calls, "EPERM") | {"clone3": "ENOSYS"}
    assert _printed(result.data["stdout"]) == expected
    assert not os.path.ismount(m)


LOCK_PROBE = """
import ctypes, errno, sys
sys.path.insert(0, sys.argv[2])
import sandbox_init
libc = ctypes.CDLL(None, use_errno=True)
def show(name, r):
    print(name, r, errno.errorcode.get(ctypes.get_errno(), 0) if r < 0 else 0)
sandbox_init.make_mounts(sys.argv[1], 0)
if sys.argv[3] == "nested":
    sandbox_init.enter_nested_namespace()
print("CapEff", 0, open("/proc/self/status").read().split("CapEff:")[1].split()[0])
show("remount_root_rw", libc.mount(None, b"/", None, 0x20 | 0x1000, None))
show("umount_tmp", libc.umount2(b"/tmp", 2))
"""


def _unshare_nests() -> bool:
    unshare = shutil.which("unshare")
    argv = [unshare or "unshare", "-Urpf", "--mount-proc", unshare or "unshare", "-Um", "true"]
    return unshare is not None and subprocess.run(argv, capture_output=True).returncode == 0


@pytest.mark.skipif(not _unshare_nests(), reason="unshare cannot nest user namespaces here")
@pytest.mark.parametrize("layer", ["flat", "nested"])
def test_the_nested_namespace_locks_the_mounts_even_with_every_capability(
    workspace: Path, layer: str
) -> None:
    """The built-in sandbox's second layer on its own: ``sandbox_init``'s mounts, then —
    still holding every capability, no seccomp — undo them. In the namespace that made them
    that works (``flat``); one user namespace down (``nested``, what the command gets) the
    kernel refuses: clearing a locked read-only flag is EPERM, unmounting a locked mount
    EINVAL (mount_namespaces(7), "restrictions on mount namespaces")."""
    tools = ROOT / "tools"
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount", "--mount-proc",
         PY, "-I", "-S", "-c", LOCK_PROBE, str(workspace), str(tools), layer],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    printed = {line.split()[0]: line.split()[2] for line in done.stdout.splitlines()}
    assert int(printed.pop("CapEff"), 16) != 0  # capabilities held in both runs
    if layer == "flat":
        assert printed == {"remount_root_rw": "0", "umount_tmp": "0"}
    else:
        assert printed == {"remount_root_rw": "EPERM", "umount_tmp": "EINVAL"}


@needs_sandbox
def test_unshare_and_ptrace_from_the_shell_fail(workspace: Path) -> None:
    trace = _syscalls(workspace, {"ptrace_attach": 'libc.ptrace(16, int(os.environ["P"]), 0, 0)'})
    command = (
        "unshare -r id -u; echo unshare-r=$?; unshare -m true; echo unshare-m=$?; "
        f"sleep 5 & P=$! {trace}; kill %1"
    )
    result = _bash(workspace, command)
    out = result.data["stdout"].splitlines()
    assert out[:2] == ["unshare-r=1", "unshare-m=1"]
    assert _printed(out[2]) == {"ptrace_attach": "EPERM"}
    assert result.data["stderr"].count("unshare: unshare failed: Operation not permitted") == 2


@needs_sandbox
def test_writes_outside_the_workspace_fail(workspace: Path, outside: Path) -> None:
    name = f".ctxscope-escape-{uuid.uuid4().hex[:8]}"
    home_file, next_door = Path.home() / name, outside / name
    command = f"touch ~/{name}; touch {next_door}; touch /etc/{name}; echo ok > inside"
    try:
        result = _bash(workspace, command)
    finally:
        leaked = [p for p in (home_file, next_door, Path("/etc") / name) if p.exists()]
        for path in leaked:
            path.unlink()
    assert leaked == []
    assert (workspace / "inside").read_text() == "ok\n"
    stderr = result.data["stderr"]
    assert f"touch: cannot touch '{home_file}': Read-only file system" in stderr
    assert f"touch: cannot touch '/etc/{name}': Read-only file system" in stderr
    # The folder next to the workspace lives under the host's /tmp: not even there.
    assert f"touch: cannot touch '{next_door}': No such file or directory" in stderr


def test_4_gib_of_memory_is_refused(workspace: Path) -> None:
    """``bash_max_memory_mb`` (2048 by default) holds with or without a sandbox."""
    command = f"{PY} -c 'bytearray(4 << 30)'; echo exit=$?"
    for sandbox in ("auto", "none"):
        result = _bash(workspace, command, bash_sandbox=sandbox)
        assert result.data["stdout"] == "exit=1\n"
        assert result.data["stderr"].rstrip().endswith("MemoryError")


def test_a_file_stops_at_the_file_size_limit(workspace: Path) -> None:
    result = _bash(workspace, "head -c 3M /dev/zero > big; echo exit=$?", bash_max_file_mb=2)
    assert result.data["stdout"] == "exit=1\n"
    assert "File too large" in result.data["stderr"]
    assert (workspace / "big").stat().st_size == 2 * 1024 * 1024  # the limit, in bytes


def test_cpu_time_is_limited(workspace: Path) -> None:
    command = f"{PY} -c 'while True: pass'; echo exit=$?"
    result = _bash(workspace, command, bash_max_cpu_seconds=1)
    assert result.data["stdout"] == "exit=137\n"  # 128 + SIGKILL: the hard limit reached
    assert result.data["timed_out"] is False


@needs_sandbox
def test_the_private_tmp_is_bounded(workspace: Path) -> None:
    command = "head -c 2M /dev/zero > /tmp/big; echo exit=$?; stat -c %s /tmp/big"
    result = _bash(workspace, command, bash_tmp_mb=1)
    assert result.data["stdout"] == "exit=1\n1048576\n"  # 1 MiB: the tmpfs is full
    assert "No space left on device" in result.data["stderr"]


@needs_sandbox
def test_dev_is_read_only_and_dev_shm_bounded(workspace: Path) -> None:
    """Both sandboxes' ``/dev`` is a tmpfs of their own made read-only, with a ``/dev/shm``
    bounded like ``/tmp`` (bubblewrap's ``--dev``; the built-in init makes the same)."""
    command = "touch /dev/x; head -c 2M /dev/zero > /dev/shm/big; echo > /dev/null && echo null"
    result = _bash(workspace, command, bash_tmp_mb=1)
    assert result.data["stdout"] == "null\n"  # device nodes still work
    stderr = result.data["stderr"]
    # Read-only for root; a user meets the host /dev's permissions first (built-in sandbox).
    refusals = ("Read-only file system", "Permission denied")
    assert any(f"touch: cannot touch '/dev/x': {why}" in stderr for why in refusals)
    assert not Path("/dev/x").exists()
    assert "No space left on device" in stderr


UNIX_CLIENT = """
import socket, sys
a, b = socket.socketpair()
a.sendall(b"pair")
print("socketpair", b.recv(4).decode())
try:
    client = socket.socket(socket.AF_UNIX)
    client.connect(sys.argv[1])
    print("connected", client.recv(5).decode())
except PermissionError as exc:
    print("refused", exc.errno)
"""


@needs_sandbox
@pytest.mark.parametrize("allowed", [False, True])
def test_a_host_unix_socket_cannot_be_reached_by_default(workspace: Path, allowed: bool) -> None:
    """A service listening on a Unix socket outside the sandbox (the D-Bus session bus, Docker
    and SSH agents are such): the socket file sits on a read-only mount, which does not stop
    ``connect``; the seccomp filter's ``socket(AF_UNIX)`` rule does. ``socketpair`` works."""
    folder = Path(tempfile.mkdtemp(dir="/var/tmp"))  # outside /tmp: visible in the sandbox
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "host.sock"))
    os.chmod(folder, 0o755)
    server.listen(1)
    server.settimeout(10)

    def serve() -> None:
        try:
            connection, _ = server.accept()
            connection.sendall(b"hello")
            connection.close()
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    (workspace / "client.py").write_text(UNIX_CLIENT)
    try:
        result = _bash(
            workspace, f"{PY} client.py {folder / 'host.sock'}", bash_unix_sockets=allowed
        )
    finally:
        server.close()
        shutil.rmtree(folder)
    verdict = "connected hello" if allowed else "refused 1"  # 1: EPERM
    assert result.data["stdout"] == f"socketpair pair\n{verdict}\n"


def test_the_limits_a_command_gets_by_default(workspace: Path) -> None:
    """The documented defaults, in ``ulimit``'s units (KiB for -d and -f); the process limit
    only inside a sandbox: outside it would count every process of the user."""
    command = "ulimit -u; ulimit -d; ulimit -f; ulimit -t; ulimit -v"
    host_nproc = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    host_u = "unlimited" if host_nproc == resource.RLIM_INFINITY else str(host_nproc)
    outside = _bash(workspace, command, bash_sandbox="none").data["stdout"].split()
    assert outside[0] == host_u
    assert outside[1:4] == [str(2048 * 1024), str(1024 * 1024), "600"]
    if EXPECTED != "none":
        inside = _bash(workspace, command).data["stdout"].split()
        assert inside[0] == "256" and inside[1:] == outside[1:]


FORKER = """
import os, time
running = sum(name.isdigit() for name in os.listdir("/proc"))
started = 0
try:
    while started < 500:
        if os.fork() == 0:
            time.sleep(20)
            os._exit(0)
        started += 1
except BlockingIOError as exc:
    print("refused", started, running, exc.errno)
else:
    print("all", started)
"""

DRIVER = """
import subprocess, sys
from pathlib import Path
from tools.sandbox import Limits, choose, seccomp_pipe, wrap
workspace, processes, command = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
kind = choose("auto")
if kind != sys.argv[4]:
    sys.exit(f"the sandbox would be {kind!r}, not {sys.argv[4]!r}: not run")
fd = seccomp_pipe() if kind == "bwrap" else None
argv = wrap(kind, workspace, ["/bin/bash", "-c", command], network=False,
            limits=Limits(processes=processes), seccomp_fd=fd)
done = subprocess.run(argv, cwd=workspace, capture_output=True, text=True, timeout=60,
                      pass_fds=() if fd is None else (fd,))
print(kind, done.stdout, end="")
"""


@pytest.fixture
def open_workspace() -> Iterator[Path]:
    """A workspace another user can reach (pytest's ``tmp_path`` sits below a 0700 folder)."""
    folder = Path(tempfile.mkdtemp(prefix="ctxscope-nproc-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def _as_unprivileged(workspace: Path) -> tuple[list[str], str]:
    """The command prefix and python that run as an unprivileged user: this user, or
    ``nobody`` (65534) through ``setpriv`` when the tests run as root (the kernel never
    applies ``RLIMIT_NPROC`` to root), with the system's python (the venv may sit in
    ``/root``, closed to others); the sandbox modules need only the standard library."""
    if os.geteuid() != 0:
        return [], PY
    python = "/usr/bin/python3"
    if shutil.which("setpriv") is None or not os.access(python, os.X_OK):
        pytest.fail("running as root: needs setpriv and /usr/bin/python3 to test as nobody")
    os.chown(workspace, 65534, 65534)
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"], python


@needs_sandbox
def test_500_processes_are_refused_for_an_unprivileged_user(open_workspace: Path) -> None:
    """The sandbox's command line (``tools.sandbox.wrap``, as BashTool builds it) as a user
    who is not root, limit 64: forks stop with EAGAIN (errno 11) exactly when the processes
    already in the sandbox plus the new ones reach the limit."""
    workspace = open_workspace
    (workspace / "forker.py").write_text(FORKER)
    prefix, python = _as_unprivileged(workspace)
    done = subprocess.run(
        [*prefix, "env", f"PYTHONPATH={ROOT}", f"PATH={os.environ['PATH']}", python, "-c",
         DRIVER, str(workspace), "64", f"{python} forker.py", EXPECTED],
        capture_output=True, text=True, timeout=120, check=True, cwd=workspace,
    )  # fmt: skip
    kind, verdict, started, running, errno = done.stdout.split()
    assert kind == EXPECTED
    assert (verdict, errno) == ("refused", "11")
    assert int(started) + int(running) == 64


def test_network_is_off_by_default(workspace: Path) -> None:
    """A server listening on the host's loopback cannot be reached: the sandbox's network
    namespace is empty (``unshare``: loopback down; bwrap: a loopback of its own)."""
    assert Settings().bash_network is False
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    try:
        result = _bash(workspace, f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")
    finally:
        server.close()
    if EXPECTED == "none":  # without a sandbox the network is always there (documented)
        assert result.data["stdout"] == "connected\n"
        return
    assert result.data["stdout"] == ""
    assert result.data["exit_code"] == 1
