"""The headless CLI: every subcommand, its --json shape, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from engine.context.builder import LAYERS
from tests.cli_run import run_main as run

RECORDED = Path(__file__).parent.parent / "data" / "recorded_session.jsonl"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "cli.db"


def test_import_compact_show_round_trip(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "import", str(RECORDED), "--db", str(db), "--json")
    assert code == 0
    imported = json.loads(out)
    sid = imported["session_id"]
    assert imported["missing_results"] == 2 and imported["rounds"] == 3

    # the session's numbers are its own: an environment variable would not change them; a
    # recording is read-only, so the change makes a fork, and the rest works on the fork
    code, out, _ = run(
        capsys, "strategy", str(sid), "--set", "keep_rounds=1", "--db", str(db), "--json"
    )
    assert code == 0
    sid = json.loads(out)["fork"]["session_id"]
    code, out, _ = run(
        capsys, "compact", str(sid), "--db", str(db), "--json", "--focus", "retry delay"
    )
    assert code == 0
    compacted = json.loads(out)
    assert compacted["compaction"]["outcome"] == "success"
    assert compacted["segment"]["first_round"] == 1 and compacted["segment"]["last_round"] == 2

    code, out, _ = run(capsys, "show", str(sid), "--db", str(db), "--json")
    assert code == 0
    shown = json.loads(out)
    summary = shown["summaries"][0]["content"]
    for heading in (
        "## 📌 Archived Session Summary",
        "### 🎯 Objectives & Status",
        "### 📂 File System State (Snapshot)",
    ):
        assert heading in summary
    assert "`src/client.py`: edited" in summary
    segment = shown["archived_segments"][0]
    assert len(segment["messages"]) == compacted["segment"]["messages"] == 13  # rounds 1-2
    comp = shown["compactions"][0]
    assert comp["tokens_before"] > comp["tokens_after"] > 0
    assert comp["ratio"] == pytest.approx(comp["tokens_after"] / comp["tokens_before"])
    assert {m["meta"]["round"] for m in shown["history"]} == {3}
    assert [r["archived"] for r in shown["rounds"]] == [True, True, False]


def test_sessions_lists_figures(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "import", str(RECORDED), "--db", str(db))
    code, out, _ = run(capsys, "sessions", "--db", str(db), "--json")
    assert code == 0
    (row,) = json.loads(out)
    assert row["rounds"] == 3 and row["messages"] == 16 and row["compactions"] == 0
    assert row["current_tokens"] > 0 and row["title"].startswith("import: Find where")
    code, out, _ = run(capsys, "sessions", "--db", str(db))
    assert "import: Find where" in out


def test_context_shows_layers_in_seed_order(
    db: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "code_law.md").write_text("Never use print for logging.\n")
    run(capsys, "import", str(RECORDED), "--db", str(db), "--workspace", str(tmp_path))
    code, out, _ = run(capsys, "context", "1", "--db", str(db), "--json", "--input", "next?")
    assert code == 0
    data = json.loads(out)
    assert [layer["name"] for layer in data["layers"]] == list(LAYERS)
    tokens = {layer["name"]: layer["tokens"] for layer in data["layers"]}
    assert tokens["L2 CODE_LAW"] > 0 and tokens["current input"] > 0
    assert tokens["L3 history"] > 0
    # a recorded session's L1 is its own agent's prompt and tools as recorded (the hidden
    # prefix), not ctxscope's system prompt, which shows only in the what-if request
    assert tokens["L1 system"] == data["as_original_agent"]["hidden_prefix_tokens"]
    assert tokens["L1 tools"] == 0
    system = data["request"]["system"]
    assert "Never use print" in system[1]["text"]
    assert data["request"]["messages"][-1]["role"] == "user"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["show", "99"], "no database at"),  # a command that only reads creates none
        (["compact", "7"], "no session 7"),
        (["import", "missing.jsonl"], "cannot read missing.jsonl"),
    ],
)
def test_errors_are_one_line_on_stderr(
    db: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv, "--db", str(db))
    assert code != 0 and out == ""
    assert err.startswith("ctxscope: ") and message in err and err.count("\n") == 1


def test_bad_setting_exits_with_usage_error(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXSCOPE_THRESHOLD_RATIO", "2")
    code, _, err = run(capsys, "sessions", "--db", str(db))
    assert code == 2 and "threshold_ratio" in err


def test_foreign_database_is_refused(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db.write_text("hello")
    code, _, err = run(capsys, "sessions", "--db", str(db))
    assert code == 1 and "not a ctxscope database" in err
    assert db.read_text() == "hello"


def test_malformed_import_reports_line_numbers(
    db: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "system", "content": "hi"}\nnope\n')  # no message it can read
    code, _, err = run(capsys, "import", str(bad), "--db", str(db))
    assert code == 1 and "line 1: role:system" in err and "line 2: not_json" in err
    assert not db.exists()  # refused before the database was opened: nothing stored


CONTEXT_IN_A_FRESH_PROCESS = """
import contextlib, io, json, sys
import engine.messages.tokens as tokens
from cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["context", "1", "--json", "--db", sys.argv[1]])
print(json.dumps({"code": code, "total": json.loads(out.getvalue())["total"],
                  "loaded": tokens._encoding is not None}))
"""


def test_context_after_an_ask_does_not_load_the_tokenizer(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import subprocess
    import sys

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("hello\n")
    assert main(["ask", "read README.md", "--workspace", str(workspace), "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["context", "1", "--json", "--db", str(db)]) == 0
    counted_here = json.loads(capsys.readouterr().out)["total"]
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, "-c", CONTEXT_IN_A_FRESH_PROCESS, str(db)],
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        check=True,
    )
    fresh = json.loads(run.stdout.splitlines()[-1])
    # every repeated text's count came from the database, and they add up to the same request
    assert fresh == {"code": 0, "total": counted_here, "loaded": False}
