"""The API key is out of ctxscope's own environment: the console script re-executes itself
without ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_AUTH_TOKEN`` and hands them over through an
inherited pipe, so ``/proc/<ctxscope pid>/environ`` (readable by any command the agent runs
as the same user) holds no key — and the provider still authenticates with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropicServer, text_reply
from tools import secrets

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-ant-handover-0123456789abcdef"
TOKEN = "auth-token-fedcba9876543210"


def test_a_running_ctxscope_holds_no_key_in_its_environment(tmp_path: Path) -> None:
    with FakeAnthropicServer() as server:
        # The answer waits, so the process is surely past its re-exec while it is read.
        server.script([text_reply("handed over", delay=1.5)])
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(ROOT),
            "HOME": str(tmp_path / "home"),  # not the workspace: a home folder is none
            "ANTHROPIC_API_KEY": KEY,
            "ANTHROPIC_AUTH_TOKEN": TOKEN,
            "ANTHROPIC_BASE_URL": server.url,
            "CTXSCOPE_MODEL": "claude-fake",
        }
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cli.workbench",
                "ask",
                "hi",
                "--json",
                "--db",
                str(tmp_path / "k.db"),
                "--workspace",
                str(tmp_path),
            ],  # fmt: skip
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while not server.requests and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.02)
        environ = Path(f"/proc/{child.pid}/environ").read_bytes()
        fds = os.listdir(f"/proc/{child.pid}/fd")
        links = {}
        for n in fds:
            try:
                links[n] = os.readlink(f"/proc/{child.pid}/fd/{n}")
            except OSError:
                links[n] = ""
        out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    names = {entry.split(b"=", 1)[0] for entry in environ.split(b"\0") if entry}
    assert b"ANTHROPIC_API_KEY" not in names and b"ANTHROPIC_AUTH_TOKEN" not in names
    assert KEY.encode() not in environ and TOKEN.encode() not in environ
    # The environment names the pipe (a number, no secret); by the time the request was sent
    # it had been read and closed (the number may since hold a socket, never that pipe).
    handover = dict(e.split(b"=", 1) for e in environ.split(b"\0") if b"=" in e)
    fd = handover[b"CTXSCOPE_CREDENTIALS_FD"].decode()
    assert fd not in fds or not links[fd].startswith("pipe:")
    # The key still reached the server (this SDK version sends it as a bearer token).
    headers = server.requests[0].headers
    sent = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    assert sent == KEY
    result = json.loads(out.splitlines()[-1])
    assert result["answer"] == "handed over" and result["provider"] == "anthropic"


def test_the_credentials_pipe_is_read_once_and_closed() -> None:
    """In-process: the variable is gone after reading, the descriptor closed, the values
    served by :func:`tools.secrets.credential` and redacted from tool output."""
    mp = pytest.MonkeyPatch()
    try:
        read_end, write_end = os.pipe()
        os.write(write_end, f"ANTHROPIC_API_KEY={KEY}\n".encode())
        os.close(write_end)
        mp.setenv(secrets.HANDOVER_FD_VARIABLE, str(read_end))
        mp.delenv("ANTHROPIC_API_KEY", raising=False)
        mp.setattr(secrets, "_handed_over", {})
        assert secrets.receive_handed_over() == {"ANTHROPIC_API_KEY": KEY}
        assert secrets.HANDOVER_FD_VARIABLE not in os.environ
        try:
            os.fstat(read_end)
            closed = False
        except OSError:
            closed = True
        assert closed
        assert secrets.credential("ANTHROPIC_API_KEY") == KEY
        redactor = secrets.Redactor.from_environment(["ANTHROPIC_API_KEY"])
        assert redactor.text(f"key={KEY}") == "key=[redacted ANTHROPIC_API_KEY]"
    finally:
        mp.undo()
