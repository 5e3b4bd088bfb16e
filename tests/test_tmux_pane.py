"""The suite's tmux tests pass when the suite runs from inside a tmux pane, as many developers
run ``make test`` (issue 39: ``test_typing_tmux`` and ``test_terminal_tmux`` failed there).

A tmux server of this test's own (its own socket, never the user's) runs ``make test`` on those
two files in a pane, as CI runs the suite (``.ci/run``: the Makefile's pytest-xdist workers), so
they run with ``TMUX`` and ``TMUX_PANE`` set as from a pane; the result is read from files the
pane writes. Slow for a reason of its own: a second pytest starts two
workbenches (about 20 s on an idle machine).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.tmux_env import plain_shell_env

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None or shutil.which("make") is None,
    reason="tmux or make is not installed",
)

ROOT = Path(__file__).resolve().parents[1]
TMUX_TESTS = ("tests/tui/test_typing_tmux.py", "tests/security/test_terminal_tmux.py")
WITHIN = 600.0
"""Seconds the two files may take on a loaded machine."""


def test_the_tmux_tests_pass_from_a_tmux_pane(tmp_path: Path) -> None:
    socket = f"ctxscope-pane-{os.getpid()}-{time.monotonic_ns()}"
    out, rc, env_seen = tmp_path / "out.txt", tmp_path / "rc", tmp_path / "env"
    # CI's own way (.ci/run: `make test`, pytest-xdist workers with worksteal), on the two
    # files: the workers inherit the pane's environment as `make test` gives it to them
    files = " ".join(["-p", "no:cacheprovider", *TMUX_TESTS])
    inner = f"make test JOBS=2 PYTEST_ARGS={shlex.quote(files)}"
    command = (
        f"cd {shlex.quote(str(ROOT))} && env > {env_seen} && {inner} > {out} 2>&1; echo $? > {rc}"
    )
    # the pane's run is one of its own: no variable of this run's pytest, xdist or make
    made = ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")
    env = {
        k: v for k, v in plain_shell_env().items() if not k.startswith("PYTEST_") and k not in made
    }
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "pane", "-x", "200", "-y", "50", command],
        env=env,
        check=True,
        timeout=30,
    )
    try:
        deadline = time.monotonic() + WITHIN
        while not rc.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        seen = dict(line.split("=", 1) for line in env_seen.read_text().splitlines() if "=" in line)
        assert seen["TMUX"].split(",")[0].endswith(socket) and seen["TMUX_PANE"] == "%0"
        report = out.read_text(errors="replace")
        assert rc.read_text().strip() == "0", report[-3000:]
        assert "bringing up nodes" in report or "created: 2/2 workers" in report, report
        assert report.splitlines()[-1].startswith("3 passed")
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, capture_output=True, timeout=30)
