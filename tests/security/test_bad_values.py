"""Every bad value of issue 21 meets one line on stderr and exit code 2, before any work.

The limits come from SQLite's documentation (an INTEGER is a signed 64-bit number, so the
largest row id is 2**63 - 1 = 9223372036854775807) and from the issue's list of values.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from engine.store import Store
from tests.cli_run import run

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "data" / "recorded_session.jsonl"
TOO_BIG = str(2**63)  # 9223372036854775808: one past SQLite's largest integer


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A database holding session 1 (the recorded session), offline, run from ``tmp_path``."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("CTXSCOPE_MODEL", "offline")
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "cli.db"
    assert main(["import", str(RECORDED), "--db", str(path), "--workspace", str(tmp_path)]) == 0
    return path


def assert_one_line(code: int, out: str, err: str, *fragments: str) -> None:
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err and "usage:" not in err
    for fragment in fragments:
        assert fragment in err, err


ID_COMMANDS = [
    ["show", TOO_BIG],
    ["context", TOO_BIG],
    ["compact", TOO_BIG],
    ["uncompact", TOO_BIG],
    ["pin", TOO_BIG, "r1"],
    ["export", TOO_BIG],
    ["strategy", TOO_BIG],
    ["replay", TOO_BIG],
    ["recall", TOO_BIG, "retry"],
    ["ask", "hi", "--session", TOO_BIG],
    ["--resume", TOO_BIG],
    ["uncompact", "1", "--compaction", TOO_BIG],
]
"""The nine commands whose id raised OverflowError, plus ``ask --session``, ``--resume``
and ``uncompact --compaction``."""


@pytest.mark.parametrize("argv", ID_COMMANDS, ids=lambda a: " ".join(a[:1] + a[2:3]))
def test_an_id_beyond_sqlite_range_is_one_line(
    db: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run(capsys, *argv, "--db", str(db))
    assert_one_line(code, out, err, "between 1 and 9223372036854775807", "--help`")


@pytest.mark.parametrize("value", ["0", "-3", "x1"])
def test_ids_that_are_not_positive_whole_numbers_are_refused(
    db: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code, out, err = run(capsys, "context", value, "--db", str(db))
    assert_one_line(code, out, err, "ctxscope context: argument ID: session id must be")
    if value != "x1":  # show takes a file or an agent's session id too, never a bad number
        code, out, err = run(capsys, "show", value, "--db", str(db))
        assert_one_line(code, out, err, "ctxscope show: argument ID: session id must be")


@pytest.mark.parametrize(
    "argv",
    [["export", "1", "-o", "missing/x.jsonl"], ["replay", "1", "--csv", "missing/x.csv"]],
    ids=["export -o", "replay --csv"],
)
def test_output_into_a_missing_folder_is_refused_before_work(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run(capsys, *argv, "--db", str(db))
    assert_one_line(code, out, err, "folder missing does not exist")
    assert not (tmp_path / "missing").exists()


def test_output_onto_a_folder_is_refused(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "out").mkdir()
    code, out, err = run(capsys, "export", "1", "-o", "out", "--db", str(db))
    assert_one_line(code, out, err, "out is a folder; give a file name")


@pytest.mark.parametrize("value", ["-5", "nan", "inf", "soon"])
def test_wait_must_be_finite_and_not_negative(
    db: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code, out, err = run(capsys, "compact", "1", f"--wait={value}", "--db", str(db))
    assert_one_line(code, out, err, "argument --wait:")


@pytest.mark.parametrize("value", ["0", "21"])
def test_recall_limit_out_of_range(
    db: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code, out, err = run(capsys, "recall", "1", "retry", "--limit", value, "--db", str(db))
    assert_one_line(code, out, err, "--limit")


@pytest.mark.parametrize(
    ("toml", "name"),
    [
        ("max_steps = true\n", "max_steps"),
        ("threshold_ratio = false\n", "threshold_ratio"),
        ("bash_timeout = true\n", "bash_timeout"),
        ("[strategies.reset_hint]\ncontext_limit = true\n", "strategies.reset_hint.context_limit"),
    ],
)
def test_a_boolean_where_a_number_belongs_is_refused(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], toml: str, name: str
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(toml)
    code, out, err = run(capsys, "sessions", "--db", str(db), "--config", str(config))
    assert_one_line(code, out, err, f"setting {name} ", "not the boolean")


def test_a_boolean_setting_still_takes_a_boolean(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.toml"
    config.write_text("bash_network = false\nmax_steps = 7\n")
    code, _, err = run(capsys, "sessions", "--db", str(db), "--config", str(config))
    assert code == 0, err


def test_argparse_errors_are_one_line_with_the_usage_hint(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "show")
    assert_one_line(code, out, err, "ctxscope show: the following arguments are required: ID")
    assert err.endswith("(see `ctxscope show --help`)\n")
    code, out, err = run(capsys, "nosuch")
    assert_one_line(code, out, err, "invalid choice: 'nosuch'", "(see `ctxscope --help`)")


def test_a_workspace_change_needs_move_workspace(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    argv = ["ask", "ls", "--session", "1", "--workspace", str(other), "--db", str(db)]
    code, out, err = run(capsys, *argv)
    assert_one_line(code, out, err, f"session 1 works in {tmp_path}", "--move-workspace")
    store = Store.open(db)
    assert store.get_session(1).workspace == str(tmp_path)
    assert store.rounds(1)[-1].index == 3  # no round was run
    assert len(store.list_sessions()) == 1  # and no fork was made for nothing
    store.close()
    code, _, err = run(capsys, *argv, "--move-workspace")
    assert code == 0, err
    store = Store.open(db)
    # session 1 is a recording: the round ran in a fork of it, moved; the recording stays
    assert store.get_session(2).workspace == str(other)
    assert store.get_session(2).source == "fork of #1 at round 3"
    assert store.get_session(1).workspace == str(tmp_path)
    store.close()


def test_a_missing_workspace_is_refused(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["ask", "ls", "--session", "1", "--workspace", "/nonexistent", "--db", str(db)]
    code, out, err = run(capsys, *argv)
    assert_one_line(code, out, err, "argument --workspace: /nonexistent does not exist")


def test_import_refuses_a_workspace_that_does_not_exist(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recording's own folder may be on another machine (it is kept, and its tools refuse);
    a folder the user names with --workspace must exist: a typo is refused before anything is
    stored."""
    argv = ["import", str(RECORDED), "--workspace", "/nonexistent", "--db", str(db)]
    code, out, err = run(capsys, *argv)
    assert_one_line(code, out, err, "argument --workspace: /nonexistent does not exist")
    store = Store.open(db)
    assert [i.session.id for i in store.list_sessions()] == [1]  # only the fixture's import
    store.close()


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions"],
        ["show", "1"],
        ["context", "1"],
        ["export", "1"],
        ["strategy", "1"],
        ["recall", "1", "x"],
        ["replay", "1"],
    ],  # fmt: skip
    ids=lambda a: a[0],
)
def test_read_commands_on_a_missing_database_create_none(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "sub" / "none.db"
    code, out, err = run(capsys, *argv, "--db", str(missing))
    assert_one_line(code, out, err, f"no database at {missing}")
    assert not (tmp_path / "sub").exists()


# ---------------------------------------------------------------- a database it cannot write
def checkpoint(path: Path) -> None:
    """Move the WAL's pages into the file and empty the WAL, as a clean exit leaves it."""
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
    con.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_unwritable_database_opens_read_only(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file 444 in a 555 folder. Root ignores those bits, so ``os.access`` is made to
    answer as it would for another user; what this shows is the read-only path itself (an
    SQLite ``mode=ro`` connection, which refuses writes even to root), not the permissions."""
    checkpoint(db)
    before = digest(db)
    db.chmod(0o444)
    db.parent.chmod(0o555)
    real_access = os.access

    def access(path: object, mode: int, **kwargs: object) -> bool:
        if mode & os.W_OK and Path(str(path)).resolve() in (db, db.parent):
            return False
        return real_access(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    try:
        for argv in (["sessions"], ["show", "1"], ["context", "1"], ["export", "1"]):
            code, out, err = run(capsys, *argv, "--db", str(db))
            assert code == 0, err
            assert out
            assert err == (
                f"ctxscope: {db} is read-only (the file is not writable); opened for reading\n"
            )
        code, out, err = run(capsys, "compact", "1", "--db", str(db))
        assert_one_line(code, out, err, "is read-only", "this command writes")
        assert digest(db) == before
        wal = db.with_name(db.name + "-wal")  # SQLite removes it when the last connection closes
        assert not wal.exists() or wal.stat().st_size == 0  # nothing logged either
    finally:
        db.parent.chmod(0o755)
        db.chmod(0o644)


def test_store_open_on_an_unwritable_file_refuses_writes_even_as_root(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint(db)
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: not mode & os.W_OK)
    store = Store.open(db)
    assert store.read_only and store.read_only_reason == "the file is not writable"
    assert store.get_session(1).id == 1
    with pytest.raises(Exception, match="read-only"):
        store.update_session(1, title="changed")
    # Beneath the guard: SQLite's own refusal on the mode=ro connection.
    with pytest.raises(Exception, match="readonly|read-only|query_only"):
        store.db.execute_sql("CREATE TABLE intruder (a)")
    store.close()


UNSHARE = shutil.which("unshare")


def _can_mount_read_only(tmp_path: Path) -> bool:
    if UNSHARE is None:
        return False
    probe = subprocess.run(
        [UNSHARE, "-rm", "sh", "-c", f"mount --bind -o ro {tmp_path} {tmp_path}"],
        capture_output=True,
    )
    return probe.returncode == 0


def test_a_database_on_a_real_read_only_mount(db: Path, tmp_path: Path) -> None:
    """A read-only bind mount in a user namespace: the kernel refuses writes, root or not."""
    if not _can_mount_read_only(tmp_path):
        pytest.skip("no user namespaces here to make a read-only mount (unshare -rm)")
    checkpoint(db)
    before = digest(db)
    python = sys.executable
    script = (
        f"mount --bind -o ro {tmp_path} {tmp_path} && cd {tmp_path} && "
        f"{python} -m cli.workbench sessions --db {db} && "
        f"{python} -m cli.workbench show 1 --db {db} >/dev/null && "
        f"{python} -m cli.workbench compact 1 --db {db}; echo compact=$?"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXSCOPE_MODEL": "offline"}
    done = subprocess.run(
        [UNSHARE, "-rm", "sh", "-c", script], capture_output=True, text=True, env=env
    )
    assert "import: Find where the retry delay is configured" in done.stdout, done.stderr
    assert done.stdout.rstrip().endswith("compact=2")
    lines = done.stderr.splitlines()
    assert lines[0] == (
        f"ctxscope: {db} is read-only (it is on a read-only file system); opened for reading"
    )
    assert lines[-1] == (
        f"ctxscope: {db} is read-only (it is on a read-only file system); this command writes"
    )
    assert "Traceback" not in done.stderr
    assert digest(db) == before
