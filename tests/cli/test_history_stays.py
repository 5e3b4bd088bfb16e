"""A history that stays (issue 41): a session whose file its agent deleted stays stored and is
marked; ``import`` warns while Claude Code's ``cleanupPeriodDays`` is at its default 30 days;
``import --hook`` imports the session Claude Code's ``SessionEnd`` hook input names.

The hook's input is the one documented at code.claude.com/docs/en/hooks (SessionEnd):
``{session_id, transcript_path, cwd, permission_mode, hook_event_name: "SessionEnd", reason}``
with ``reason`` one of ``clear``, ``logout``, ``prompt_input_exit``, ``other``."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.cli_run import run_main as run
from tests.engine.recordings.corpus import MOREDIP, YOAVF

SHARE_ID = "4b2030ed-5563-49ea-b703-6a002f2d3cc8"
POMODORO = "0b0c2b7c-pomodoro.jsonl"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two Claude Code sessions in one project: yoavf's (124 lines) and moredip's (12)."""
    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "-home-u-p"
    project.mkdir(parents=True)
    shutil.copy(YOAVF, project / POMODORO)
    shutil.copy(MOREDIP, project / f"{SHARE_ID}.jsonl")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("CTXSCOPE_DB", str(tmp_path / "db.sqlite"))
    monkeypatch.chdir(tmp_path)
    return home


def _import(capsys: pytest.CaptureFixture[str]) -> tuple[dict, str]:
    """The JSON, and its warnings as one text."""
    code, out, err = run(capsys, "import", "--json", "--jobs", "1")
    assert code == 0 and err == "", err
    data = json.loads(out)
    return data, "\n".join(data["warnings"])


def _session(capsys: pytest.CaptureFixture[str], sid: int) -> dict:
    code, out, _ = run(capsys, "show", str(sid), "--json")
    assert code == 0
    return json.loads(out)


def test_a_deleted_file_keeps_its_session_marked_and_a_returned_one_unmarks(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pomodoro file deleted (as Claude Code's clean-up does) and the folder imported
    again: its session is still there, whole (the same messages), marked ``source_gone_at``;
    the other session is not marked. The file put back: the mark comes off."""
    first, _ = _import(capsys)
    by_path = {Path(s["path"]).name: s["session_id"] for s in first["sessions"]}
    gone_id, kept_id = by_path[POMODORO], by_path[f"{SHARE_ID}.jsonl"]
    before = _session(capsys, gone_id)
    path = home / ".claude" / "projects" / "-home-u-p" / POMODORO
    path.unlink()
    second, _ = _import(capsys)
    assert second["files_gone"] == [{"path": str(path), "sessions": [gone_id]}]
    after = _session(capsys, gone_id)
    assert after["session"]["source_gone_at"] is not None
    assert len(after["history"]) == len(before["history"]) > 0
    assert after["rounds"] == before["rounds"]
    assert _session(capsys, kept_id)["session"]["source_gone_at"] is None
    code, text, _ = run(capsys, "import", "--jobs", "1")
    assert code == 0 and "files imported before are gone" not in text  # said once
    shutil.copy(YOAVF, path)
    third, _ = _import(capsys)
    assert third["sessions_back"] == [gone_id]
    assert _session(capsys, gone_id)["session"]["source_gone_at"] is None


def test_import_warns_while_cleanup_is_at_its_default(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No settings.json: the warning names the file and the hook; 365 days set: no warning;
    30 set explicitly: the warning again."""
    settings = home / ".claude" / "settings.json"
    _, err = _import(capsys)
    assert (
        "Claude Code deletes its session files after 30 days "
        f"(cleanupPeriodDays in {settings}, not set: its default)"
    ) in err
    assert "`ctxscope import --hook`" in err
    code, text, _ = run(capsys, "import", "--jobs", "1")
    assert code == 0 and "\nwarning: Claude Code deletes its session files after 30 days" in text
    settings.write_text(json.dumps({"cleanupPeriodDays": 365}), encoding="utf-8")
    _, err = _import(capsys)
    assert "cleanupPeriodDays" not in err
    settings.write_text(json.dumps({"cleanupPeriodDays": 30}), encoding="utf-8")
    _, err = _import(capsys)
    assert "(cleanupPeriodDays in" in err and "set to 30" in err


def _hook(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, payload: dict
) -> dict:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(payload)))
    code, out, err = run(capsys, "import", "--hook", "--json")
    assert code == 0, err
    return dict(json.loads(out))


def test_the_session_end_hook_imports_its_session_once_and_again_when_it_grew(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook's input names the pomodoro file: imported (``new``), 40 usage records (its
    distinct API message ids); the same input again: ``unchanged``; the file grown by a user
    line (the session resumed and ended again): ``grown``, into the same session; a later
    ``import`` without a path skips the file (unchanged) and stores no second session."""
    path = home / ".claude" / "projects" / "-home-u-p" / POMODORO
    payload = {
        "session_id": "0b0c2b7c",
        "transcript_path": str(path),
        "cwd": "/Users/yoavfarhi/dev/pomodoro/claude",
        "permission_mode": "default",
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    }
    first = _hook(capsys, monkeypatch, payload)
    assert first["file"] == "new" and first["reason"] == "prompt_input_exit"
    (only,) = first["sessions"]
    assert only["usage_records"] == 40
    sid = only["session_id"]
    assert _hook(capsys, monkeypatch, payload)["file"] == "unchanged"
    last = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    more = {**last, "type": "user", "uuid": "hook-test-1", "parentUuid": last.get("uuid"),
            "message": {"role": "user", "content": "one more thing"}}  # fmt: skip
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(more) + "\n")
    grown = _hook(capsys, monkeypatch, payload)
    assert grown["file"] == "grown" and [s["session_id"] for s in grown["sessions"]] == [sid]
    whole, _ = _import(capsys)
    assert whole["files"]["unchanged"] == 1 and whole["files"]["new"] == 1  # moredip's
    code, out, _ = run(capsys, "sessions", "--json")
    assert len([s for s in json.loads(out) if s["parent_session_id"] is None]) == 2


def test_a_hook_input_without_a_transcript_is_refused_in_words(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"hook_event_name": "SessionEnd"}'))
    code, _, err = run(capsys, "import", "--hook")
    assert code == 2  # a usage error
    assert "the hook's input has no transcript_path" in err
