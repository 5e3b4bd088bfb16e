"""Issue 29: ``--db`` and ``--window`` values that are not what they look like.

``--db postgresql://user:pw@host/db`` created a SQLite file in a folder named after the URL,
password included; a database in a folder the process cannot write said only SQLite's "unable
to open database file"; ``--window`` took any number. (Since issue 34 a ``postgresql://`` URL
names a PostgreSQL database; other schemes are refused.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import build_parser
from engine.validation import MAX_WINDOW
from tests.cli_run import run

ROOT = Path(__file__).resolve().parents[2]
URL = "mysql://user:s3cr3t-pw@db.example/ctx"
UNREACHABLE = "postgresql://user:s3cr3t-pw@127.0.0.1:1/ctx"
"""A PostgreSQL URL nothing answers at (port 1 on this machine: refused at once)."""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("CTXSCOPE_DB", raising=False)
    monkeypatch.setenv("CTXSCOPE_MODEL", "offline")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ws").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    "argv",
    [["sessions", "--db", URL], ["ask", "hi", "--db", URL, "--workspace", "ws"],
     ["--db", URL, "sessions"]],
    ids=["sessions", "ask", "before the command"],
)  # fmt: skip
def test_a_database_url_of_another_scheme_is_refused_in_one_line_without_its_password(
    here: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "mysql:// databases are not supported" in err
    assert "s3cr3t-pw" not in err and "user" not in err
    assert sorted(p.name for p in here.iterdir()) == ["ws"]  # no folder named after the URL


def test_ctxscope_db_holding_a_url_is_refused_too(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXSCOPE_DB", URL)
    code, out, err = run(capsys, "ask", "hi", "--workspace", "ws")
    assert code == 2 and err.count("\n") == 1
    assert "CTXSCOPE_DB: mysql:// databases are not supported" in err
    assert "s3cr3t-pw" not in err
    assert sorted(p.name for p in here.iterdir()) == ["ws"]


@pytest.mark.parametrize("given", ["option", "environment"])
def test_a_postgresql_server_that_does_not_answer_is_one_line_without_the_password(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """postgresql:// is supported (storage.md): it is tried, not refused, and not a file."""
    if given == "option":
        code, out, err = run(capsys, "ask", "hi", "--db", UNREACHABLE, "--workspace", "ws")
    else:
        monkeypatch.setenv("CTXSCOPE_DB", UNREACHABLE)
        code, out, err = run(capsys, "ask", "hi", "--workspace", "ws")
    assert code != 0 and out == ""
    assert err.count("\n") == 1 and "cannot connect to postgresql://user:***@127.0.0.1:1/ctx" in err
    assert "s3cr3t-pw" not in err
    assert sorted(p.name for p in here.iterdir()) == ["ws"]


def test_a_sqlite_url_names_a_file(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SQLAlchemy's form: three slashes then a relative path, four for an absolute one."""
    code, _, err = run(capsys, "ask", "hi", "--db", "sqlite:///rel.db", "--workspace", "ws")
    assert code == 0, err
    absolute = here / "abs.db"
    code, _, err = run(capsys, "ask", "hi", "--db", f"sqlite:///{absolute}", "--workspace", "ws")
    assert code == 0, err
    assert (here / "rel.db").is_file() and absolute.is_file()


UNSHARE = shutil.which("unshare")


def test_a_database_in_a_read_only_folder_says_so(tmp_path: Path) -> None:
    """A read-only bind mount in a user namespace (the kernel refuses writes, root or not):
    creating the database there says why, not SQLite's "unable to open database file"."""
    folder = tmp_path / "ro"
    folder.mkdir()
    probe = subprocess.run(
        [UNSHARE or "unshare", "-rm", "sh", "-c", f"mount --bind -o ro {folder} {folder}"],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip("no user namespaces here to make a read-only mount (unshare -rm)")
    script = (
        f"mount --bind -o ro {folder} {folder} && "
        f"{sys.executable} -m cli.main ask hi --db {folder}/x.db --workspace {tmp_path}"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXSCOPE_MODEL": "offline"}
    env.pop("ANTHROPIC_API_KEY", None)
    done = subprocess.run(
        [UNSHARE or "unshare", "-rm", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"ctxscope: cannot create the database {folder}/x.db: {folder} is on a read-only file "
        "system (--db or CTXSCOPE_DB names another file)\n"
    )


def test_the_window_is_bounded(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert MAX_WINDOW == 10_000_000
    parsed = build_parser().parse_args(["replay", "1", "--window", str(MAX_WINDOW)])
    assert parsed.window == MAX_WINDOW
    for argv in (["replay", "1"], ["strategy", "1"]):
        code, out, err = run(capsys, *argv, "--window", str(MAX_WINDOW + 1))
        assert code == 2 and out == "" and err.count("\n") == 1
        assert "the window must be between 1 and 10000000, got 10000001" in err
