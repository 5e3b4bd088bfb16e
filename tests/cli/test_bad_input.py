"""Bad input meets one readable line: naive times, damaged JSON, odd usage, broken pipes."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from engine.store import Store
from tests.cli_run import run_main as run

ROOT = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).parent.parent / "data" / "recorded_session.jsonl"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("CTXSCOPE_MODEL", "offline")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "cli.db"


def test_an_import_with_naive_times_still_compacts_asks_and_shows_context(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = RECORDED.read_text().splitlines()
    naive = []
    for n, line in enumerate(lines):
        obj = json.loads(line)
        obj["timestamp"] = f"2026-11-01T09:{n:02d}:00"  # no offset
        naive.append(json.dumps(obj))
    recorded = tmp_path / "naive.jsonl"
    recorded.write_text("\n".join(naive) + "\n")

    # the session keeps the numbers it was imported with (keep_rounds 1)
    monkeypatch.setenv("CTXSCOPE_KEEP_ROUNDS", "1")
    code, out, err = run(capsys, "import", str(recorded), "--db", str(db), "--json")
    assert code == 0, err
    sid = str(json.loads(out)["session_id"])
    code, out, err = run(capsys, "compact", sid, "--db", str(db), "--json")
    assert code == 0, err
    assert json.loads(out)["compaction"]["outcome"] == "success"
    sid = str(json.loads(out)["fork"]["session_id"])  # a recording changes only in a fork
    # Each of these raised TypeError (naive vs aware comparison) once a compaction existed.
    # (an imported session runs tools only in a folder the user gives: --workspace)
    ask = ["ask", "ls", "--session", sid, "--workspace", str(tmp_path)]
    for argv in (["context", sid], ask, ["compact", sid]):
        code, _, err = run(capsys, *argv, "--db", str(db))
        assert "Traceback" not in err and "TypeError" not in err
        assert code == 0, err
    code, out, _ = run(capsys, "show", sid, "--db", str(db), "--json")
    summary = json.loads(out)["summaries"][0]
    assert summary["start_time"] == "2026-11-01T09:00:00Z"


def test_a_file_nested_too_deeply_is_refused_in_one_line(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = tmp_path / "bad.jsonl"
    recorded.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    code, out, err = run(capsys, "import", str(recorded), "--db", str(db))
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "not a recognised session format" in err
    assert "Traceback" not in err and "RecursionError" not in err


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"role": "assistant", "content": "x", "usage": {"input_tokens": "1,800"}}',
            "usage.input_tokens must be a whole number ≥ 0, got '1,800'; the usage left out",
        ),
        (
            '{"role": "assistant", "content": "x", "usage": "1800"}',
            "usage must be an object like",
        ),
        (
            '{"role": "user", "content": "x", "timestamp": "yesterday"}',
            "bad timestamp 'yesterday'; the previous line's time used",
        ),
    ],
)
def test_a_bad_value_is_one_warning_naming_line_and_field(
    db: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    line: str,
    message: str,
) -> None:
    """The line is read without the value (readers are tolerant); the report says which
    line and field, in one line."""
    recorded = tmp_path / "bad.jsonl"
    recorded.write_text('{"role": "user", "content": "hello"}\n' + line + "\n")
    code, out, err = run(capsys, "import", str(recorded), "--db", str(db))
    assert code == 0, err
    (warning,) = [ln for ln in (out + err).splitlines() if "warning:" in ln]
    assert f"line 2: {message}" in warning
    assert "Traceback" not in err


def test_a_damaged_stored_value_names_its_table_and_column(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "import", str(RECORDED), "--db", str(db))[0] == 0
    con = sqlite3.connect(db)
    con.execute("UPDATE message_row SET tool_calls = '{broken' WHERE id = 2")
    con.commit()
    con.close()
    code, out, err = run(capsys, "show", "1", "--db", str(db))
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "damaged value in message_row.tool_calls" in err and "'{broken'" in err


def test_compact_with_nothing_to_compact_says_skipped_not_failed(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "ask", "ls", "--db", str(db))[0] == 0
    code, out, err = run(capsys, "compact", "1", "--db", str(db))
    assert code == 0, err
    assert out.startswith("nothing compacted") and "failed" not in out


def test_piping_into_head_prints_no_traceback_and_closes_the_round(db: Path) -> None:
    """``ctxscope ask … --json | head -1``: the reader leaves after one line."""
    (db.parent / "README.md").write_text("x\n" * 50)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "cli.main", "ask", "read README.md", "--db", str(db), "--json"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=db.parent
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # like head -1 exiting
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipeError" not in err
    store = Store.open(db, read_only=True)
    statuses = [r.status.value for r in store.rounds(1)]
    store.close()
    assert statuses and "open" not in statuses
