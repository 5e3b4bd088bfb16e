"""Issue 30: one database per installation, never the current directory's. Without ``--db``,
``import`` and ``watch`` run from any folder create nothing in it: an installed ctxscope keeps
its database in ``$XDG_DATA_HOME/ctxscope/`` (``~/.local/share`` when unset), a source
checkout in its own ``sessions/`` folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import engine.settings.config
from cli.main import main

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "data" / "recorded_session.jsonl"

RUNNER = """
import sys
from pathlib import Path
import engine.settings.config
engine.settings.config.SOURCE_ROOT = Path(sys.argv[1])  # where ctxscope's packages are
from cli.main import main
sys.exit(main(sys.argv[2:]))
"""
"""``ctxscope`` as installed at ``argv[1]`` (a folder that is no source checkout)."""


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's project folder, where the command runs; HOME in tmp too."""
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CTXSCOPE_DB", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return folder


def test_import_installed_uses_the_user_data_folder(
    elsewhere: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", str(RECORDED), "--json"]) == 0
    assert list(elsewhere.iterdir()) == []
    db = tmp_path / "xdg-data" / "ctxscope" / "ctxscope.db"  # XDG_DATA_HOME (tests/conftest)
    assert db.is_file()
    capsys.readouterr()
    # run from another folder, `sessions` finds it
    os.chdir(tmp_path)
    assert main(["sessions", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1


def test_without_xdg_data_home_it_is_under_home(
    elsewhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_DATA_HOME")
    assert main(["import", str(RECORDED)]) == 0
    assert list(elsewhere.iterdir()) == []
    assert (tmp_path / "home" / ".local" / "share" / "ctxscope" / "ctxscope.db").is_file()


def test_a_source_checkout_keeps_it_in_its_sessions_folder(
    elsewhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = tmp_path / "ctxscope-checkout"
    (checkout / "sessions").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\nname = 'ctxscope'\n")
    monkeypatch.setattr(engine.settings.config, "SOURCE_ROOT", checkout)
    assert main(["import", str(RECORDED)]) == 0
    assert list(elsewhere.iterdir()) == []
    assert (checkout / "sessions" / "ctxscope.db").is_file()
    # --db and CTXSCOPE_DB still name another
    assert main(["import", str(RECORDED), "--db", str(tmp_path / "given.db")]) == 0
    assert (tmp_path / "given.db").is_file()
    monkeypatch.setenv("CTXSCOPE_DB", str(tmp_path / "env.db"))
    assert main(["import", str(RECORDED)]) == 0
    assert (tmp_path / "env.db").is_file()


def test_watch_creates_nothing_in_the_folder_it_runs_from(elsewhere: Path, tmp_path: Path) -> None:
    recording = tmp_path / "claude" / "session.jsonl"
    recording.parent.mkdir()
    recording.write_text(
        (
            ROOT
            / "tests"
            / "data"
            / "corpus"
            / "yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl"
        ).read_text(encoding="utf-8")
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CTXSCOPE_")},
        "PYTHONPATH": str(ROOT),
        "CTXSCOPE_WATCH_POLL_INTERVAL": "0.05",
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER, str(tmp_path / "site-packages"), "watch",
         str(recording), "--jsonl"],
        cwd=elsewhere, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())  # the first update: the file is stored
        assert first["records"] > 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert list(elsewhere.iterdir()) == []
    assert (tmp_path / "xdg-data" / "ctxscope" / "ctxscope.db").is_file()
