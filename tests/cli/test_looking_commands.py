"""What the commands that only look skip (issue 44, ``cli.main.LOOKING``): pydantic's plugin
lookup, through its documented ``PYDANTIC_DISABLE_PLUGINS``, and the garbage collector's passes
at exit (``gc.freeze()`` as the last ``atexit`` handler); a command that runs the user's
commands (``ask``) or writes (``import``) keeps both, and a value the user set is kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import atexit, gc, os, sys
# registered first, so it runs last (atexit is last in, first out): after cli.main's handler
plugins = "PYDANTIC_DISABLE_PLUGINS"
atexit.register(lambda: print("frozen", gc.get_freeze_count() > 0, os.environ.get(plugins)))
from cli.main import main
main(sys.argv[1:])
"""


def fresh_python(
    tmp_path: Path, script: str, *argv: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``script`` run with ``argv`` in a fresh interpreter, without a plugin setting of ours,
    its home and database in ``tmp_path``."""
    environment = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    environment.update(
        PYTHONPATH=str(ROOT), HOME=str(tmp_path), CTXSCOPE_DB=str(tmp_path / "t.db"), **(env or {})
    )
    return subprocess.run(
        [sys.executable, "-c", script, *argv],
        env=environment,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def probe(tmp_path: Path, *argv: str, env: dict[str, str] | None = None) -> str:
    """The probe's last line after running ``ctxscope ARGV`` in a fresh interpreter."""
    return fresh_python(tmp_path, PROBE, *argv, env=env).stdout.strip().splitlines()[-1]


@pytest.fixture
def database(tmp_path: Path) -> Path:
    """A database holding the corpus' pomodoro Claude Code session (session 1)."""
    corpus = ROOT / "tests/data/corpus/yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl"
    assert probe(tmp_path, "import", str(corpus)) == "frozen False None"  # import writes
    return tmp_path


@pytest.mark.parametrize("argv", [["sessions"], ["show", "1"], ["context", "1", "--json"]])
def test_a_looking_command_skips_plugins_and_the_last_collections(
    database: Path, argv: list[str]
) -> None:
    assert probe(database, *argv) == "frozen True __all__"


def test_the_users_own_plugin_setting_is_kept(database: Path) -> None:
    line = probe(database, "context", "1", env={"PYDANTIC_DISABLE_PLUGINS": "logfire"})
    assert line == "frozen True logfire"


def test_a_command_that_writes_or_runs_tools_keeps_both(database: Path) -> None:
    (database / "ws").mkdir()
    line = probe(database, "ask", "hello", "--model", "offline", "--workspace", "ws")
    assert line == "frozen False None"


IN_PROCESS = """
import gc, sys
from cli.main import main
for _ in range(2):
    code = main(["show", "1", "--db", sys.argv[1]])
    print(code, gc.isenabled(), gc.get_freeze_count())
"""


def test_in_a_tests_process_the_collector_is_left_as_it_was(database: Path) -> None:
    """main() run in-process (as the tests do) leaves the collector on and nothing frozen,
    so a long test session collects its garbage as before. Run in a process of its own: in
    the suite's worker a thread a previous test left (a workbench's build, which pauses the
    collector while it assembles a request) could have it off at the moment of looking —
    seen once under load."""
    done = fresh_python(database, IN_PROCESS, str(database / "t.db"))
    lines = [line for line in done.stdout.splitlines() if line.startswith("0 ")]
    assert lines == ["0 True 0", "0 True 0"], (done.stdout[-2000:], done.stderr[-2000:])
    assert "session 1: import: Build a simple Pomodoro timer" in done.stdout
