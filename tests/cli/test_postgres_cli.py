"""The commands on ``--db postgresql://…`` give what they give on the SQLite file: one session's
life — import, compact (into a fork of the recording), strategy, show, context, recall,
uncompact, sessions, report, export — run on
both, their ``--json`` compared (times and the database's own name left out)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from tests.postgres_server import PostgresServer

RECORDED = Path(__file__).parent.parent / "data" / "recorded_session.jsonl"
VARYING = {"duration_ms", "path", "db", "database"}
"""Keys whose values differ by run or by database, not by what is stored."""


def _scrubbed(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _scrubbed(v)
            for k, v in value.items()
            if k not in VARYING and not k.endswith(("_at", "_time"))
        }
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    return value


def _life(db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[Any]:
    """Every command's output, in order. The imported session is a recording: changing its
    numbers makes a fork (engine/store/forking.py), which the later commands work on."""
    outputs: list[Any] = []

    def run(*argv: str, as_json: bool = True) -> Any:
        code = main([*argv, "--db", db, *(["--json"] if as_json else [])])
        out, err = capsys.readouterr()
        assert code == 0, err
        data = json.loads(out) if as_json else out
        outputs.append(_scrubbed(data) if as_json else out)
        return data

    run("import", str(RECORDED), "--workspace", str(tmp_path))
    compacted = run("compact", "1", "--focus", "retry delay")
    # the recording's 3 rounds (3 user prompts in the file) are within the 10 kept by default:
    # nothing to compact, so no fork either (issue 39)
    assert compacted["compaction"] is None and "fork" not in compacted
    switched = run("strategy", "1", "--set", "keep_rounds=1")  # a change: the fork
    fork = str(switched["fork"]["session_id"])
    assert switched["fork"]["of"] == 1 and fork != "1"
    run("compact", fork, "--focus", "retry delay")
    run("show", fork, "--observations")
    run("show", "1")  # the recording as it was
    run("context", fork)
    run("recall", fork, "retry", as_json=False)
    run("uncompact", fork)
    run("sessions")
    run("report")  # the whole database's figures, grouped in the database
    out = tmp_path / f"export-{len(db)}.jsonl"
    run("export", fork, "-o", str(out), as_json=False)
    outputs.append(out.read_text())
    return outputs


def test_a_sessions_life_is_the_same_on_postgresql(
    postgres_server: PostgresServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    url = postgres_server.create_database("cli")
    on_sqlite = _life(str(tmp_path / "cli.db"), tmp_path, capsys)
    on_postgres = _life(url, tmp_path, capsys)
    assert "[retry]" in on_sqlite[7]  # Recall found something: the same, in the same order
    assert on_sqlite[2]["fork"]["source"] == "fork of #1 at round 3"
    assert on_sqlite[3]["compaction"]["outcome"] == "success"  # the fork, compacted
    assert on_postgres == on_sqlite
    postgres_server.drop_database(url)


def test_ctxscope_db_names_the_database_and_its_password_is_not_shown(
    postgres_server: PostgresServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    url = postgres_server.create_database("env")
    monkeypatch.setenv("CTXSCOPE_DB", url)
    assert main(["import", str(RECORDED), "--workspace", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["sessions", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1
    assert not (tmp_path / "sessions").exists()  # nothing went to a file here (the cwd)

    wrong = url.replace("ctxscope@", "ctxscope:hunter2@").rsplit("/", 1)[0] + "/missing"
    monkeypatch.setenv("CTXSCOPE_DB", wrong)
    assert main(["sessions"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hunter2" not in err and "ctxscope:***@" in err
    postgres_server.drop_database(url)
