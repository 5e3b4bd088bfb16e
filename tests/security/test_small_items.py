"""The issue's smaller items (issue 42), each run as the attack was: a PostgreSQL password in
the URL's query, a file name that is not UTF-8, and three commands that ended in a
traceback (``report --since 99999999d``, ``export -o /proc/version``, PostgreSQL ``recall``
with a 2,048-character word)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from engine.store.postgres import masked, one_line
from tests.postgres_server import PostgresServer
from tools.secrets import EnvironmentPolicy

ROOT = Path(__file__).resolve().parents[2]
CODEX = ROOT / "tests/data/corpus/yoavf__ai-sessions__codex-pomodor-timer.jsonl"
RECORDED = ROOT / "tests/data/recorded_session.jsonl"
PASSWORD = "hunter2-in-the-query"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            f"postgresql://u@127.0.0.1:1/db?password={PASSWORD}",
            "postgresql://u@127.0.0.1:1/db?password=***",
        ),
        (
            f"postgres://u@h/db?sslmode=disable&password={PASSWORD}&application_name=x",
            "postgres://u@h/db?sslmode=disable&password=***&application_name=x",
        ),
        (f"postgresql://u:{PASSWORD}@h/db", "postgresql://u:***@h/db"),
        (f"postgresql://u@h/db?PASSWORD={PASSWORD}", "postgresql://u@h/db?PASSWORD=***"),
    ],
)
def test_a_password_in_the_query_is_masked(url: str, shown: str) -> None:
    """libpq's URIs take ``?password=`` as well as ``user:password@``: both are ``***``
    wherever the database is named (error lines, the proxy's start line), and a variable
    holding such a URL is withheld from Bash."""
    assert masked(url) == shown
    assert PASSWORD not in one_line(RuntimeError(f"failed for {url} ({PASSWORD})"), url)
    assert EnvironmentPolicy().withheld("DATABASE_URL", url)


def test_an_unreachable_server_is_named_without_the_query_password(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"postgresql://u@127.0.0.1:1/db?connect_timeout=2&password={PASSWORD}"
    assert main(["sessions", "--db", url]) != 0
    err = capsys.readouterr().err
    assert "password=***" in err and PASSWORD not in err
    monkeypatch.setenv("CTXSCOPE_DB", url)
    assert main(["sessions"]) != 0
    err = capsys.readouterr().err
    assert "password=***" in err and PASSWORD not in err


def _ctxscope(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
    """A command in its own process, in the C locale (where Python writes a file name's
    undecodable bytes back as they were)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LC_ALL": "C", "HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )


def test_a_file_name_that_is_not_utf8_is_printed_escaped(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    name = os.fsencode(folder) + b"/a\x9b31mb.jsonl"  # 0x9b: CSI on a terminal that obeys C1
    with open(name, "wb") as out:
        out.write(CODEX.read_bytes())
    db = str(tmp_path / "n.db")
    for argv in (["import", str(folder), "--db", db], ["import", os.fsdecode(name), "--db", db]):
        done = _ctxscope(tmp_path, *argv)
        assert done.returncode == 0, done.stderr
        assert b"\x9b" not in done.stdout + done.stderr
        assert b"a\\x9b31mb.jsonl" in done.stdout


def test_no_traceback_from_the_issues_commands(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    assert _ctxscope(tmp_path, "import", str(RECORDED), "--db", db).returncode == 0
    since = _ctxscope(tmp_path, "report", "--since", "99999999d", "--db", db)
    assert since.returncode == 2
    assert since.stderr.startswith(b"ctxscope: --since 99999999d: that many days ago is before")
    export = _ctxscope(tmp_path, "export", "1", "-o", "/proc/version", "--db", db)
    assert export.returncode == 1
    assert export.stderr.startswith(b"ctxscope: cannot write /proc/version: ")
    for done in (since, export):
        assert b"Traceback" not in done.stderr and done.stderr.count(b"\n") == 1


def test_postgresql_recall_with_a_2048_character_word(
    postgres_server: PostgresServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PostgreSQL's text search refuses a word over 2,047 bytes; recall answers in one line
    (no hit) instead of a traceback, and a normal word still finds its hits."""
    url = postgres_server.create_database("longword")
    try:
        assert main(["import", str(RECORDED), "--db", url]) == 0
        assert main(["compact", "1", "--db", url]) == 0
        capsys.readouterr()
        code = main(["recall", "2", "x" * 2048, "--db", url])
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err
        assert code == 0, captured.err
        assert captured.out.startswith("no archived message of session 2 matches")
    finally:
        postgres_server.drop_database(url)
