"""The Bash sandbox under attack: the API key through ``/proc``, processes that escape the
call, writes outside the workspace, the network switch.

Which sandbox runs is probed here independently of ``tools.sandbox`` (``bwrap`` on PATH and
able to start with ``--disable-userns``, else ``unshare`` able to nest a second user
namespace, else none); on this project's build machine that is ``unshare``. Where none can
run, the tests assert what the design promises instead: ``sandbox: none`` in the result.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from engine.settings.config import Settings
from tests.security.conftest import SECRET
from tools.base import ToolContext, ToolResult
from tools.registry import default_registry
from tools.sandbox import choose

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-ant-api03-sandboxprobe-Zq81"


def _probe() -> str:
    def runs(argv: list[str]) -> bool:
        done = subprocess.run(argv, capture_output=True, check=False, timeout=10)
        return done.returncode == 0

    bwrap = shutil.which("bwrap")
    if bwrap and runs(
        [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--ro-bind", "/", "/",
         "true"]
    ):  # fmt: skip
        return "bwrap"
    unshare = shutil.which("unshare")
    if unshare and runs([unshare, "-Urpf", "--mount-proc", unshare, "-Um", "true"]):
        return "unshare"
    return "none"


EXPECTED = _probe()


def _bash(workspace: Path, command: str, **settings: object) -> ToolResult:
    ctx = ToolContext(
        workspace=workspace,
        settings=Settings(bash_policy="allow", **settings),  # type: ignore[arg-type]
    )
    return default_registry().run("Bash", {"command": command}, ctx)


def test_auto_picks_the_sandbox_this_machine_can_run(workspace: Path) -> None:
    assert choose("auto") == EXPECTED
    assert _bash(workspace, "true").data["sandbox"] == EXPECTED
    assert _bash(workspace, "true", bash_sandbox="none").data["sandbox"] == "none"


RUN_BASH_AS_CTXSCOPE = """
import json, os, sys
from pathlib import Path
from engine.settings.config import Settings
from tools.base import ToolContext
from tools.registry import default_registry
me = os.getpid()
key_line = "tr '\\\\0' '\\\\n' | grep ^ANTHROPIC_API_KEY="
command = (
    f"cat /proc/{me}/environ; cat /proc/[0-9]*/environ | {key_line}; echo; "
    f"cat /proc/{me}/environ /proc/[0-9]*/environ | {key_line} | rev; echo; "
    f"cat /proc/{me}/environ /proc/[0-9]*/environ | {key_line} | base64 -w0"
)
ctx = ToolContext(workspace=Path(sys.argv[1]), settings=Settings(bash_policy="allow"))
result = default_registry().run("Bash", {"command": command}, ctx)
print(json.dumps({"pid": me, "text": result.text, "data": result.data}))
"""


def test_the_key_cannot_be_read_through_proc_in_any_encoding(workspace: Path) -> None:
    """A ctxscope process started with the key in its environment (so it is in its
    ``/proc/<pid>/environ``) runs a command that reads that file by pid, then every environ
    it can see, and prints them raw, reversed and in base64 (redaction by exact value cannot
    catch the last two)."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_BASH_AS_CTXSCOPE, str(workspace)],
        env={**os.environ, "PYTHONPATH": str(ROOT), "ANTHROPIC_API_KEY": KEY},
        capture_output=True,
        check=True,
        text=True,
    )
    out = json.loads(done.stdout)
    seen = out["text"] + out["data"]["stdout"] + out["data"]["stderr"]
    line = f"ANTHROPIC_API_KEY={KEY}\n"
    encodings = [KEY, KEY[::-1], base64.b64encode(line.encode()).decode()]
    if EXPECTED == "none":
        assert out["data"]["sandbox"] == "none"  # the guard alone: said, not hidden
        return
    assert out["data"]["sandbox"] == EXPECTED
    assert [e for e in encodings if e in seen] == []
    assert f"/proc/{out['pid']}/environ: No such file or directory" in out["data"]["stderr"]


def _spawn_escaper(workspace: Path, i: int, **settings: object) -> tuple[Path, int]:
    """One call that leaves a ``setsid`` child without the call's tag, stamping a file with
    the time every 50 ms; the call returns once the child has stamped once. Return the stamp
    file and the time the call had ended (``time.time_ns()``, the clock ``date +%s%N`` reads)."""
    stamp = workspace / f"alive-{i}"
    command = (
        "setsid env -u CTXSCOPE_BASH_CALL sh -c "
        f"'while :; do date +%s%N > {stamp.name}; sleep 0.05; done' "
        f"> /dev/null 2>&1 < /dev/null & until [ -s {stamp.name} ]; do sleep 0.01; done; "
        "echo started"
    )
    result = _bash(workspace, command, **settings)
    ended = time.time_ns()
    assert result.data["stdout"] == "started\n"
    return stamp, ended


@pytest.mark.parametrize("sandbox", ["auto", "none"])
def test_a_setsid_child_without_the_tag_is_gone_when_its_call_ends(
    workspace: Path, sandbox: str
) -> None:
    """15 calls, 5 at a time (each waits out the guard's linger, tools.bash_guard.LINGER):
    no child stamped a time after its call had ended — a child left running would stamp
    every 50 ms — and none runs any more. A child killed while writing leaves its stamp
    empty."""
    with ThreadPoolExecutor(max_workers=5) as pool:
        calls = [pool.submit(_spawn_escaper, workspace, i, bash_sandbox=sandbox) for i in range(15)]
        spawned = [call.result() for call in calls]
    assert all(stamp.exists() for stamp, _ in spawned)  # each child ran
    assert [s.name for s, ended in spawned if int(s.read_text() or 0) > ended] == []
    assert _stamping(workspace) == []


def _stamping(workspace: Path) -> list[str]:
    """Command lines of processes still running a stamp loop of this test's workspace (their
    working directory), as ``/proc`` shows them."""
    left = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if b"> alive-" in cmdline and cwd == str(workspace):
            left.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return left


def test_only_the_workspace_is_writable_and_the_outside_is_not_visible(
    workspace: Path, outside: Path
) -> None:
    probe = ROOT / "tests" / "security" / ".sandbox-write-probe"
    command = (
        "echo kept > made-inside && echo inside-ok; "
        f"touch {probe} && echo outside-WRITTEN; "
        f"cat {outside / 'f.txt'}"
    )
    try:
        result = _bash(workspace, command)
    finally:
        written = probe.exists()
        probe.unlink(missing_ok=True)
    assert (workspace / "made-inside").read_text() == "kept\n"
    if EXPECTED == "none":
        assert result.data["sandbox"] == "none"
        return
    assert not written
    assert "inside-ok" in result.data["stdout"] and "WRITTEN" not in result.data["stdout"]
    # The checkout is read-only inside the sandbox, or not there at all when it lives under
    # /tmp (a clone in CI, say): the sandbox gives the command a /tmp of its own.
    hidden = ROOT.resolve().is_relative_to(Path("/tmp"))
    refusal = "No such file or directory" if hidden else "Read-only file system"
    assert f"{probe}': {refusal}" in result.data["stderr"]
    assert SECRET not in result.text  # the outside (another /tmp folder) is not even there


@pytest.mark.parametrize("network", [True, False])
def test_the_network_setting(workspace: Path, network: bool) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    try:
        command = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
        result = _bash(workspace, command, bash_network=network)
    finally:
        server.close()
    if EXPECTED == "none" or network:
        assert result.data["stdout"] == "connected\n"
    else:
        assert result.data["stdout"] == ""
        assert result.error is not None and result.error.code == "nonzero_exit"


@pytest.mark.parametrize("setting", ["auto", "none"])
def test_ask_reports_the_sandbox(workspace: Path, tmp_path: Path, setting: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "ask", "hello", "--model", "offline"]
        + ["--db", str(tmp_path / "a.db"), "--workspace", str(workspace), "--json"],
        env={**env, "PYTHONPATH": str(ROOT), "CTXSCOPE_BASH_SANDBOX": setting},
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["type"] == "result"
    assert result["sandbox"] == (EXPECTED if setting == "auto" else "none")
