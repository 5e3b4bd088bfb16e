"""Issue 29: a recording writes nothing to the user's terminal.

A Claude Code file whose title, messages, model, tool name, file name and tool result carry
ESC, OSC 0/8/52, CSI, C1 and DEL is imported through the real importer, then shown through
every command that prints it, each in its own process; what reaches stdout and stderr is read
as bytes and must hold no raw control character.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.security.hostile_recording import (
    OSC0_TITLE,
    OSC52_CLIPBOARD,
    raw_controls,
    write_hostile_recording,
)

ROOT = Path(__file__).resolve().parents[2]


def ctxscope(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HOME": str(tmp_path),
        "CTXSCOPE_MODEL": "offline",
    }
    env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp_path = tmp_path_factory.mktemp("hostile")
    recording = write_hostile_recording(tmp_path / "bad.jsonl")
    db = tmp_path / "h.db"
    done = ctxscope(tmp_path, "import", str(recording), "--db", str(db), "--json")
    assert done.returncode == 0, done.stderr
    return tmp_path, db


COMMANDS = [
    ["sessions"],
    ["sessions", "--json"],
    ["show", "1"],
    ["show", "1", "--observations"],
    ["show", "1", "--json", "--observations"],
    ["export", "1", "--format", "markdown"],
    ["export", "1"],
    ["context", "1"],
    ["context", "1", "--json"],
    ["strategy", "1"],
    ["compact", "1", "--dry-run"],
    ["recall", "1", "file body"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_no_command_prints_a_raw_control_character(
    imported: tuple[Path, Path], argv: list[str]
) -> None:
    tmp_path, db = imported
    done = ctxscope(tmp_path, *argv, "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert raw_controls(done.stdout) == [], done.stdout
    assert raw_controls(done.stderr) == [], done.stderr


def test_the_attacks_are_shown_escaped(imported: tuple[Path, Path]) -> None:
    """What the recording held is still there to read, as visible escapes."""
    tmp_path, db = imported
    shown = ctxscope(tmp_path, "show", "1", "--observations", "--db", str(db)).stdout.decode()
    assert "\\x1b]52;c;Y3VybCBldmlsLnNofHNo\\x07" in shown  # OSC52_CLIPBOARD, escaped
    assert "\\x9b2J" in shown  # C1 CSI
    assert "file body" in shown
    listed = ctxscope(tmp_path, "sessions", "--db", str(db)).stdout.decode()
    assert "\\x1b]0;PWNED-TITLE\\x07" in listed and len(listed.splitlines()) == 2


ERROR_LINES = [
    # a path that names the attack, echoed by "no database at …"
    ["sessions", "--db", f"/nonexistent/{OSC0_TITLE}/x.db"],
    # argparse's "invalid choice: …"
    ["export", "1", "--format", OSC52_CLIPBOARD],
    # a session id argparse refuses, echoed (``show`` also takes a file or an agent's id)
    ["context", f"1{OSC52_CLIPBOARD}"],
    # a settings file that does not exist
    ["sessions", "--config", f"/nonexistent/{OSC52_CLIPBOARD}.toml"],
]


@pytest.mark.parametrize("argv", ERROR_LINES, ids=lambda a: a[0])
def test_error_lines_echo_arguments_escaped(tmp_path: Path, argv: list[str]) -> None:
    done = ctxscope(tmp_path, *argv)
    assert done.returncode != 0
    assert raw_controls(done.stdout + done.stderr) == [], done.stderr
    assert done.stderr.count(b"\n") == 1, done.stderr
    assert b"\\x1b]" in done.stderr  # the value is named, escaped
