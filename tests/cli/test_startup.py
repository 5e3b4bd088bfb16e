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

from cli.main import EXPORT_FORMATS, main
from engine.recordings.export import FORMATS

ROOT = Path(__file__).resolve().parents[2]

NOT_NEEDED = (
    "pydantic_settings",  # the settings read their sources themselves (engine.settings_sources)
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
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# hello\n", encoding="utf-8")
    assert main(["ask", "read README.md", "--workspace", str(workspace), "--db", str(db)]) == 0
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
