"""Bash without credentials, secrets redacted from every result, and no command outliving its call
or ctxscope."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.tools.test_bash import alive, gone_soon

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-ant-api03-abcdefghijklmnop"
TOKEN = "ghp_0123456789abcdef"


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("MY_DB_SECRET_VALUE", "correct-horse-battery")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://me:proxy-pass-42@proxy.example")
    monkeypatch.setenv("CTXSCOPE_TEST_PLAIN", "visible-value")


@pytest.mark.usefixtures("secret_env")
def test_bash_runs_without_credentials_in_its_environment(call: Any) -> None:
    result = call("Bash", command="env")
    assert result.ok
    names = {line.split("=", 1)[0] for line in result.data["stdout"].splitlines()}
    assert "CTXSCOPE_TEST_PLAIN" in names
    for gone in ("ANTHROPIC_API_KEY", "GITHUB_TOKEN", "MY_DB_SECRET_VALUE", "ANTHROPIC_BASE_URL"):
        assert gone not in names


@pytest.mark.usefixtures("secret_env")
def test_secret_values_are_redacted_from_every_tool_result(call: Any, workspace: Path) -> None:
    (workspace / "leak.txt").write_text(f"key={KEY}\ntoken={TOKEN}\nproxy-pass-42\nplain\n")
    for result in (
        call("Read", file_path="leak.txt"),
        call("Bash", command="cat leak.txt"),
        call("Grep", pattern="key=", path="."),
    ):
        dumped = result.model_dump_json()
        assert KEY not in dumped and TOKEN not in dumped and "proxy-pass-42" not in dumped
    text = call("Read", file_path="leak.txt").text
    assert "key=[redacted ANTHROPIC_API_KEY]" in text
    assert "token=[redacted GITHUB_TOKEN]" in text
    assert "[redacted ANTHROPIC_BASE_URL]" in text


def test_a_setsid_child_does_not_outlive_the_timeout(call: Any) -> None:
    result = call("Bash", command="setsid sleep 300 & echo $!; sleep 30", timeout=0.5)
    assert result.error.code == "timeout"
    pid = int(result.data["stdout"].split()[0])
    assert gone_soon(pid)


def test_a_setsid_child_does_not_outlive_a_finished_call(call: Any) -> None:
    result = call("Bash", command="setsid sleep 300 > /dev/null 2>&1 & echo $!")
    assert result.ok
    assert gone_soon(int(result.data["stdout"].split()[0]))


RUN_BASH_THEN_HANG = """
import sys
from pathlib import Path
from engine.settings.config import Settings
from tools.base import ToolContext
from tools.registry import default_registry
settings = Settings(bash_policy="allow", bash_sandbox="none")  # host pids: the guard
ctx = ToolContext(workspace=Path(sys.argv[1]), settings=settings)
default_registry().run("Bash", {"command": "echo $$ > pid; exec sleep 300"}, ctx)
"""


def _wait_for_pid(path: Path) -> int:
    for _ in range(500):
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def test_the_command_dies_when_ctxscope_is_killed(workspace: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN_BASH_THEN_HANG, str(workspace)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    pid = _wait_for_pid(workspace / "pid")
    assert alive(pid)
    proc.kill()  # SIGKILL: no handler runs; only the parent-death signal can end the command
    proc.wait()
    assert gone_soon(pid)


RUN_COMPOUND_THEN_HANG = """
import sys
from pathlib import Path
from engine.settings.config import Settings
from tools.base import ToolContext
from tools.registry import default_registry
settings = Settings(bash_policy="allow", bash_sandbox="none")  # host pids: the guard
ctx = ToolContext(workspace=Path(sys.argv[1]), settings=settings)
default_registry().run("Bash", {"command": sys.argv[2]}, ctx)
"""


@pytest.mark.parametrize(
    "command",
    [
        # bash forks the foreground sleep and keeps waiting: the child is not bash
        "sleep 300 & echo $! > pids; (sleep 301; true) & echo $! >> pids; sleep 302",
        # a child that left the group, and one whose parent exited (reparented)
        "setsid sleep 303 & echo $! > pids; (sleep 304 & echo $! >> pids); sleep 305",
    ],
    ids=["children-in-the-group", "setsid-and-orphaned"],
)
def test_every_process_of_a_compound_command_dies_when_ctxscope_is_killed(
    workspace: Path, command: str
) -> None:
    # durations no other run uses, so a leftover of an earlier run is never counted here
    nonce = int.from_bytes(os.urandom(3), "big")
    command = re.sub(r"\b(30\d)\b", rf"\1.{nonce}", command)
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN_COMPOUND_THEN_HANG, str(workspace), command],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    pids_file = workspace / "pids"
    _wait_for_pid_lines(pids_file, 2)
    pids = [int(line) for line in pids_file.read_text().split()]
    # the foreground sleep has started too: all three run
    deadline = time.monotonic() + 30
    while len(_sleeps_running(command)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(_sleeps_running(command)) == 3
    assert all(alive(pid) for pid in pids)
    proc.kill()  # SIGKILL: nothing of ctxscope runs; the guard must end them all
    proc.wait()
    assert all(gone_soon(pid) for pid in pids)
    assert not _sleeps_left(command)


def _wait_for_pid_lines(path: Path, n: int) -> None:
    for _ in range(500):
        if path.exists() and len(path.read_text().split()) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never held {n} pids")


def _sleeps_running(command: str) -> list[str]:
    """Processes running one of ``command``'s ``sleep 30N`` (foreground ones included)."""
    wanted = {f"sleep {duration}" for duration in re.findall(r"sleep (30\d\.\d+)", command)}
    assert len(wanted) == 3, wanted
    running = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            text = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
            if text in wanted:
                running.append(text)
    return running


def _sleeps_left(command: str) -> list[str]:
    """:func:`_sleeps_running`, once none is left or after 5 s."""
    deadline = time.monotonic() + 5
    while True:
        left = _sleeps_running(command)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def test_sigterm_to_ask_ends_its_bash_command_and_the_round(
    workspace: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "ask", "run `echo $$ > pid; exec sleep 300`"]
        + ["--allow-bash", "--model", "offline", "--db", str(tmp_path / "t.db")]
        + ["--workspace", str(workspace), "--json"],
        env={**env, "PYTHONPATH": str(ROOT), "CTXSCOPE_BASH_SANDBOX": "none"},  # host pids
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    pid = _wait_for_pid(workspace / "pid")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    assert gone_soon(pid)
    assert b"Traceback" not in err
    assert '"status": "interrupted"' in out.decode().splitlines()[-1]
