"""Bash: output, exit codes, the timeout that kills the whole process group, the output cap,
cancellation, and background processes."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from engine.settings.config import Settings
from tools.base import ToolContext
from tools.registry import default_registry


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def gone_soon(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_stdout_and_stderr_are_separate(call: Any) -> None:
    result = call("Bash", command="echo out; echo err >&2; printf 'two\\nlines'")
    assert result.ok
    data = result.data
    assert data["stdout"] == "out\ntwo\nlines"
    assert data["stderr"] == "err\n"
    assert data["exit_code"] == 0 and data["timed_out"] is False
    assert (data["stdout_lines"], data["stderr_lines"]) == (3, 1)
    assert (data["stdout_chars"], data["stderr_chars"]) == (13, 4)
    assert data["stdout_truncated"] is False
    assert result.text.startswith("out\ntwo\nlines\n[stderr]\nerr\n[exit code 0, ")


def test_nonzero_exit_is_an_error_with_the_output(call: Any) -> None:
    result = call("Bash", command="echo partial; echo 'boom: bad thing' >&2; exit 3")
    assert result.status == "error"
    assert result.error is not None and result.error.code == "nonzero_exit"
    assert result.error.message == "The command exited with code 3."
    assert result.data["exit_code"] == 3
    assert result.data["stdout"] == "partial\n"
    assert "boom: bad thing" in result.text


def test_stdin_is_empty_and_env_has_no_pager(call: Any) -> None:
    result = call("Bash", command='cat; echo "[$GIT_PAGER]"')
    assert result.ok and result.data["stdout"] == "[cat]\n"


def test_timeout_kills_the_process_group(call: Any) -> None:
    started = time.monotonic()
    result = call("Bash", command="sleep 30 & echo $!; sleep 30", timeout=1)
    elapsed = time.monotonic() - started
    assert elapsed < 10
    assert result.error is not None and result.error.code == "timeout"
    assert "timed out after 1 s" in result.error.message
    assert result.data["timed_out"] is True and result.data["timeout"] == 1
    child = int(result.data["stdout"].strip())
    assert gone_soon(child), f"background child {child} survived the timeout"


def test_background_children_are_stopped_after_a_normal_exit(call: Any) -> None:
    started = time.monotonic()
    result = call("Bash", command="sleep 30 & echo $!")
    assert time.monotonic() - started < 5
    assert result.ok
    assert gone_soon(int(result.data["stdout"].strip()))


def test_detached_output_does_not_hold_the_call(call: Any) -> None:
    started = time.monotonic()
    result = call("Bash", command="(sleep 30 > /dev/null 2>&1 &) ; echo started")
    assert time.monotonic() - started < 5
    assert result.data["stdout"] == "started\n"


def test_output_over_the_cap_keeps_head_and_tail(workspace: Path) -> None:
    ctx = ToolContext(
        workspace=workspace,
        settings=Settings(bash_policy="allow", bash_output_cap=1000, bash_sandbox="none"),
    )
    command = "for i in $(seq 1 5000); do echo line$i; done; echo ERR >&2"
    result = default_registry().run("Bash", {"command": command}, ctx)
    data = result.data
    total = sum(len(f"line{i}\n") for i in range(1, 5001))
    assert data["stdout_chars"] == total and data["stdout_lines"] == 5000
    assert data["stdout_truncated"] is True and data["stderr_truncated"] is False
    stdout = data["stdout"]
    assert stdout.startswith("line1\nline2\n")
    assert stdout.endswith("line4999\nline5000\n")
    assert f"[... {total - 1000} chars dropped ...]" in stdout
    assert len(stdout) < 1000 + 60
    assert data["stderr"] == "ERR\n"


def test_huge_output_is_read_without_blocking(call: Any, ctx: ToolContext) -> None:
    result = call("Bash", command="head -c 5000000 /dev/zero | tr '\\0' 'a'; echo; echo done >&2")
    assert result.ok
    assert result.data["stdout_chars"] == 5_000_001
    assert len(result.data["stdout"]) < ctx.settings.bash_output_cap + 100
    assert result.data["stderr"] == "done\n"


def test_timeout_is_capped_by_settings(workspace: Path) -> None:
    settings = Settings(
        bash_policy="allow", bash_timeout=0.5, bash_max_timeout=0.8, bash_sandbox="none"
    )
    ctx = ToolContext(workspace=workspace, settings=settings)
    registry = default_registry()
    default = registry.run("Bash", {"command": "echo fast"}, ctx)
    assert default.data["timeout"] == 0.5
    capped = registry.run("Bash", {"command": "sleep 5", "timeout": 100}, ctx)
    assert capped.data["timeout"] == 0.8 and capped.data["timed_out"] is True


def test_cancel_interrupts_a_running_command(call: Any, ctx: ToolContext) -> None:
    timer = threading.Timer(0.3, ctx.cancel.set)
    timer.start()
    started = time.monotonic()
    result = call("Bash", command="sleep 20 & echo $!; sleep 20")
    timer.join()
    assert time.monotonic() - started < 8
    assert result.error is not None and result.error.code == "interrupted"
    assert result.data["interrupted"] is True
    assert gone_soon(int(result.data["stdout"].strip()))


def test_killed_by_signal(call: Any) -> None:
    result = call("Bash", command="kill -9 $$")
    assert result.error is not None and result.error.code == "nonzero_exit"
    assert result.error.message == "The command was killed by SIGKILL."
    assert result.data["exit_code"] == -9


def test_non_utf8_output(call: Any) -> None:
    result = call("Bash", command="printf 'caf\\351\\n'")
    assert result.data["stdout"] == "caf\ufffd\n"


def test_invalid_timeout(call: Any) -> None:
    result = call("Bash", command="true", timeout=0)
    assert result.error is not None and result.error.code == "invalid_input"
    assert os.path.exists("/proc/self")  # the alive() helper relies on procfs
