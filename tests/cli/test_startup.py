"""What ``ctxscope context`` loads before it answers (bench/bench_startup.py measures the time).

A command pays at start-up for every module it imports; these tests keep the ones ``context``
does not use out of its process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from cli.recordings import EXPORT_FORMATS
from engine.recordings.export import FORMATS

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "corpus"


def _ask(db: Path, tmp_path: Path) -> None:
    """ctxscope's own session in ``db``: one offline `ask` reading a README."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# hello\n", encoding="utf-8")
    assert main(["ask", "read README.md", "--workspace", str(workspace), "--db", str(db)]) == 0


NOT_NEEDED = (
    "pydantic_settings",  # the settings read their sources themselves (engine.settings.sources)
    "dotenv",
    "anthropic",  # no request is sent
    "engine.recordings.export",  # only `export` writes a transcript
    "textual",  # the workbench is another command
    "engine.compaction.strategies.masking",  # the session's strategy is layered: one is loaded
    "engine.compaction.strategies.mock_user",
)


def test_export_choices_are_the_exporters_formats() -> None:
    assert EXPORT_FORMATS == FORMATS


def test_context_imports_none_of_what_it_does_not_use(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _ask(db, tmp_path)
    script = (
        "import io, json, sys, contextlib\n"
        "from cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    code = main(['context', '1', '--json', '--db', sys.argv[1]])\n"
        "print(json.dumps({'code': code, 'total': json.loads(out.getvalue())['total'],\n"
        "                  'modules': sorted(sys.modules)}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", script, str(db)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout)
    assert result["code"] == 0 and result["total"] > 0
    loaded = result["modules"]
    assert [m for m in loaded if any(m == n or m.startswith(n + ".") for n in NOT_NEEDED)] == []


def test_each_strategy_is_the_class_its_name_selects() -> None:
    from engine.compaction.strategies import STRATEGIES

    assert list(STRATEGIES) == [
        "layered",
        "reset-hint",
        "mock-user",
        "message-window",
        "head-middle-tail",
        "masking",
    ]
    assert [STRATEGIES[name].name for name in STRATEGIES] == list(STRATEGIES)


HEAVY = ("engine", "pydantic", "pydantic_core", "textual", "rich", "peewee", "tiktoken")
"""What answering ``--help`` or a bad argument must not import (issue 32: ``ctxscope --help``
took 9.4× ``python -c pass``)."""


SERVER_DRIVERS = ("psycopg", "psycopg2", "psycopg2cffi", "pymysql", "MySQLdb")
"""What peewee imports at its own import when installed (psycopg is, in this venv)."""

AGENT = ("engine.session.loop", "engine.session.core", "engine.context.builder", "tools.registry")
"""The agent and the request it builds: `sessions` and `show` print neither."""


def _modules_after(args: list[str], db: Path, tmp_path: Path) -> list[str]:
    """Every module loaded once ``ctxscope ARGS --db DB`` has run in a fresh interpreter."""
    script = (
        "import io, json, sys, contextlib\n"
        "from cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(json.loads(sys.argv[1]))\n"
        "assert code == 0, code\n"
        "print(json.dumps(sorted(m for m, v in sys.modules.items() if v is not None)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps([*args, "--db", str(db)])],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def _loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


def test_sqlite_commands_load_no_server_driver_and_listings_no_agent(tmp_path: Path) -> None:
    """Issue 44: peewee imports psycopg at its own import when it is installed (0.1–0.2 s), and
    playhouse.migrate imports it again through playhouse.cockroachdb; `cli.common` imported the
    agent loop for every command. On an SQLite database no command loads a server driver, and
    `sessions` and `show` load no agent. (The driver is installed here: the PostgreSQL tests
    use it, so the test would fail if anything imported it.)"""
    import importlib.util

    assert importlib.util.find_spec("psycopg") is not None
    db = tmp_path / "s.db"
    _ask(db, tmp_path)
    for args in (["sessions"], ["show", "1"], ["context", "1", "--json"]):
        modules = _modules_after(args, db, tmp_path)
        assert "peewee" in modules and "engine.store" in modules
        assert _loaded(modules, SERVER_DRIVERS) == [], args
        if args[0] != "context":
            assert _loaded(modules, AGENT) == [], args
        else:
            assert "engine.context.builder" in modules  # context builds the request


def _imported(
    args: list[str], tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run ``python -X importtime -m cli.workbench ARGS`` (the ``ctxscope`` console script's
    module) without an API key (with one it re-executes itself first: tests/security/
    test_key_handover.py); the process and every module it imported, from importtime's lines."""
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cli.workbench", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    # "import time: <self us> | <cumulative us> | <indented module name>"
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    modules = [line.split("|")[2].strip() for line in lines[1:]]  # [0] is the header
    return done, modules


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in HEAVY]


@pytest.mark.parametrize("args", [["--help"], ["show", "--help"], ["replay", "--help"]])
def test_help_imports_no_engine_pydantic_or_textual(tmp_path: Path, args: list[str]) -> None:
    done, modules = _imported(args, tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: ctxscope")
    assert "cli.main" in modules  # importtime lists what the run imported
    assert _heavy(modules) == []


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["context", "abc"], "argument ID: session id must be a whole number, got 'abc'"),
        (["recall", "1", "words", "--limit", "many"], "argument --limit: the value must be"),
        (["ask", "hi", "--wait", "soon"], "argument --wait: the value must be a number of sec"),
        (["no-such-command"], "argument COMMAND: invalid choice: 'no-such-command'"),
    ],
)
def test_an_argument_error_needs_only_the_checks(
    tmp_path: Path, args: list[str], error: str
) -> None:
    """A bad argument is refused in one line, exit 2, having imported at most
    :mod:`engine.validation` (its checks) and :mod:`engine.terminal_text` (the error line
    echoes the bad value, shown escaped); neither imports pydantic."""
    done, modules = _imported(args, tmp_path)
    refusal = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 2
    assert len(refusal) == 1 and error in refusal[0], refusal
    assert set(_heavy(modules)) <= {"engine", "engine.validation", "engine.terminal_text"}


NOT_FOR_STORED_FIGURES = ("genai_prices", "psycopg", "textual", "tiktoken", "httpx", "anthropic")
"""What `sessions`, `show` and `context` (text and --json) need none of once a session's
figures are stored (issue 44): the price data (genai-prices and its updater's httpx), a server
driver, the workbench, the tokenizer (a recording's counts are stored at import), a client."""


def test_with_stored_figures_the_looking_commands_load_no_prices(tmp_path: Path) -> None:
    """The corpus' Claude Code session (one compaction, a degenerate-flag check) imported, and
    ctxscope's own session from `ask` listed once (the listing keeps its figures): then each
    command, text and --json, in a fresh interpreter, loads none of the above."""
    db = tmp_path / "s.db"
    marot = CORPUS / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    assert main(["import", str(marot), "--db", str(db)]) == 0
    _ask(db, tmp_path)
    assert main(["sessions", "--db", str(db)]) == 0  # makes and keeps the new session's
    for args in (
        ["sessions"],
        ["sessions", "--json"],
        ["show", "1"],
        ["show", "1", "--json"],
        ["show", "2"],
        ["context", "1"],
        ["context", "1", "--json"],
        ["context", "2", "--json"],
    ):
        modules = _modules_after(args, db, tmp_path)
        assert "engine.store" in modules, args
        assert _loaded(modules, NOT_FOR_STORED_FIGURES) == [], args


NOT_FOR_A_LOOK = (
    "engine.session.agent",  # the agent and its parts a round uses: context runs none
    "engine.session.loop",
    "engine.session.steering",
    "engine.session.fitting",
    "engine.session.writer",
    "engine.compaction.executor",  # nor compacts,
    "engine.compaction.extractive",  # nor summarises
    "engine.compaction.ledger",
    "engine.compaction.summary_call",
    "engine.compaction.tool_results",
    "engine.events",  # (it emits nothing)
    "concurrent.futures",
    "engine.context.code_law",  # no CODE_LAW.md in the workspace (none for a recording)
    "tools.files",
    "tools.sandbox_init",
    "tools.registry",  # the tools' definitions are stored (tools/definitions.json)
    "tools.ls",
    "tools.glob_tool",
    "tools.grep",
    "tools.read",
    "tools.edit",
    "tools.write",
    "tools.bash",
    "tools.recall",
)
"""What ``context`` loads none of (issue 44: it built the whole agent, 1.9× the budget's
baseline): it builds the request the next step would send and the strategy's plan, and runs
no round, no tool and no compaction."""


def test_context_builds_the_request_without_the_agent(tmp_path: Path) -> None:
    """ctxscope's own session (from `ask`, its figures kept by a listing, as in the test
    above: pricing it otherwise loads asyncio's thread pool through httpx) and a recorded one
    (the corpus' pomodoro Claude Code session, layered), text and --json: the request is
    built, and none of the above is loaded."""
    db = tmp_path / "s.db"
    pomodoro = CORPUS / "yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl"
    _ask(db, tmp_path)
    assert main(["import", str(pomodoro), "--db", str(db)]) == 0
    assert main(["sessions", "--db", str(db)]) == 0  # keeps the new session's figures
    for args in (["context", "1"], ["context", "1", "--json"], ["context", "2", "--json"]):
        modules = _modules_after(args, db, tmp_path)
        assert "engine.context.builder" in modules and "tools.definitions" in modules, args
        assert _loaded(modules, NOT_FOR_A_LOOK) == [], args
