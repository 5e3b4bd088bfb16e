"""``ctxscope watch`` on a Codex rollout: the corpus' Codex CLI 0.47 file grown record by
record, Codex's auto-compact trigger, and the newest rollout under ``~/.codex/sessions``.

Expected figures worked out from the file with jq (tests/data/corpus_facts/README.md, §5;
``X=yoavf__ai-sessions__codex-pomodor-timer.jsonl``):

- 153 lines, one record each: ``jq -c . $X | wc -l``;
- 21 model calls (``jq -r 'select(.type=="turn_context")' $X | jq -s length`` = 21 turn
  contexts = 21 distinct ``total_token_usage``), 3 genuine user inputs (``event_msg /
  user_message`` ×3; the fourth user message is ``<environment_context>``), 18 tool calls and
  18 outputs (``select(.payload.type=="function_call" or .payload.type=="custom_tool_call")``):
  so 21 + 3 + 18 = 42 messages;
- the last ``token_count`` (line 151): ``last_token_usage`` input 18733 (cached 18432),
  output 1123, total 19856; ``model_context_window`` 272000. Nothing the model sees follows
  it but the response it counts (lines 152-153), so the context is 19,856 tokens;
- no ``compacted`` record; Codex's trigger without a configured
  ``model_auto_compact_token_limit``: 90 % of 272,000 = 244,800.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.recordings import codex
from engine.recordings.follow import Follower
from engine.recordings.watching import Target
from engine.recordings.writer import write
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.corpus import CORPUS, MAROT
from tests.engine.recordings.test_watch import ROOT, _lines, _read_until

ROLLOUT = CORPUS / "yoavf__ai-sessions__codex-pomodor-timer.jsonl"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own: no real ~/.codex or ~/.claude is ever read."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    return folder


def rollout_lines() -> list[bytes]:
    return ROLLOUT.read_bytes().split(b"\n")[:-1]


def db_stderr(db: Path) -> Path:
    """Where :func:`_watch` writes the command's standard error."""
    return db.with_suffix(".stderr")


def _ended(proc: subprocess.Popen[str], stderr: Path) -> int:
    """The exit code of a watch sent SIGTERM, within 20 s; past that its threads' stacks
    (faulthandler, on SIGABRT) and its standard error are the failure's message."""
    try:
        return proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        proc.wait(timeout=20)
        raise AssertionError(
            "watch did not end within 20 s of SIGTERM:\n" + stderr.read_text(errors="replace")
        ) from None


def _watch(args: list[str], db: Path, home: Path) -> subprocess.Popen[str]:
    err = open(db_stderr(db), "w")  # noqa: SIM115 - closed with the process
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "CLAUDE_CONFIG_DIR")}
    env.update(PYTHONPATH=str(ROOT), HOME=str(home), CTXSCOPE_WATCH_POLL_INTERVAL="0.05")
    env.update(PYTHONFAULTHANDLER="1")  # a watch that hangs shows where (:func:`_ended`)
    return subprocess.Popen(
        [sys.executable, "-m", "cli.workbench", "watch", *args, "--jsonl", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
        env=env,
        cwd=ROOT,
    )


def test_codex_rollout_grown_record_by_record(tmp_path: Path, home: Path) -> None:
    lines = rollout_lines()
    assert len(lines) == 153
    f = tmp_path / "rollout-2025-10-21T20-02-50-019a085e.jsonl"
    # The first 20 records (the first input is line 3) and the head of the 21st.
    f.write_bytes(b"".join(x + b"\n" for x in lines[:20]) + lines[20][:15])
    db = tmp_path / "w.db"
    proc = _watch([str(f)], db, home)
    out_lines = _lines(proc)
    try:
        out = _read_until(out_lines, 20)
        with open(f, "ab") as w:
            w.write(lines[20][15:] + b"\n")
            for line in lines[21:]:  # one record per write
                w.write(line + b"\n")
                w.flush()
                time.sleep(0.01)
        out += _read_until(out_lines, 153 - sum(o["records"] for o in out))
        # Stored as it is read, not only at the end: once the file is still, the watcher
        # (still running) has the whole conversation in the database.
        sid = out[-1]["session"]
        deadline = time.monotonic() + 10
        while True:
            reader = Store.open(db, read_only=True)
            stored = len(reader.all_messages(sid))
            reader.close()
            if stored >= 42 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert stored >= 42 and proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert _ended(proc, db_stderr(tmp_path / "w.db")) == 0
    finally:
        proc.kill()
    # Every record once (the updates' records add up to the lines written), in order (the
    # running counts never go back).
    assert sum(o["records"] for o in out) == 153
    for key in ("messages", "tool_calls"):
        assert [o[key] for o in out] == sorted(o[key] for o in out)
    last = out[-1]
    assert {o["session"] for o in out} == {last["session"]}
    assert (last["messages"], last["tool_calls"], last["compactions"]) == (42, 18, 0)
    assert last["context_window"] == 272000 and last["compact_at"] == 244800
    assert last["context_tokens"] == 19856
    assert last["until_compact"] == 244800 - 19856
    assert last["last_usage"] == {
        "input": 301,
        "cache_read": 18432,
        "cache_write": 0,
        "output": 1123,
    }
    assert last["percent"] == round(100 * 19856 / 272000, 1)
    # Stored as importing the finished file whole stores it.
    store, ref = Store.open(db), Store.open(tmp_path / "r.db")
    report = write(ref, codex.parse(ROLLOUT.read_text(encoding="utf-8"), f.name), "/x", Settings())
    got = [(m.role, m.content, m.meta.round) for m in store.all_messages(last["session"])]
    want = [(m.role, m.content, m.meta.round) for m in ref.all_messages(report.session.id)]
    assert got == want and len(want) >= 42
    assert f.read_bytes() == ROLLOUT.read_bytes()  # only read, never written


def test_codex_trigger_from_its_config_or_90_percent_of_the_window(
    tmp_path: Path, home: Path
) -> None:
    f = tmp_path / "rollout.jsonl"
    f.write_bytes(ROLLOUT.read_bytes())
    settings = Settings()
    update = Follower(f, settings).poll()  # no ~/.codex/config.toml: 272,000 × 0.9
    assert update is not None and update.figures.compact_at == 244800
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(
        'model = "gpt-5-codex"\nmodel_auto_compact_token_limit = 200000\n'
    )
    update = Follower(f, settings).poll()
    assert update is not None and update.figures.compact_at == 200000
    assert update.figures.until_compact == 200000 - 19856
    # Claude Code keeps its own trigger: the window less the reserve (200,000 - 33,000).
    cc = tmp_path / "cc.jsonl"
    cc.write_bytes(b"".join(x + b"\n" for x in MAROT.read_bytes().split(b"\n")[:50]))
    update = Follower(cc, settings).poll()
    assert update is not None and update.figures.compact_at == 167000


def _rollout(folder: Path, name: str, mtime: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(ROLLOUT.read_bytes())
    os.utime(path, (mtime, mtime))
    return path


def test_watch_without_a_path_follows_the_newest_codex_rollout(tmp_path: Path, home: Path) -> None:
    now = time.time()
    _rollout(home / ".codex/sessions/2025/10/20", "rollout-2025-10-20-a.jsonl", now - 300)
    newest = _rollout(home / ".codex/sessions/2025/10/21", "rollout-2025-10-21-b.jsonl", now - 10)
    claude = home / ".claude/projects/-home-me-app/old.jsonl"
    claude.parent.mkdir(parents=True)
    claude.write_bytes(MAROT.read_bytes()[:20000].rsplit(b"\n", 1)[0] + b"\n")
    os.utime(claude, (now - 100, now - 100))
    assert Target(None, Settings()).current() == newest
    # A Claude Code session written since is newer: it is the one followed.
    os.utime(claude, (now, now))
    assert Target(None, Settings()).current() == claude
    # watch_codex_dir names another sessions folder; CODEX_HOME moves Codex's folder.
    other = _rollout(tmp_path / "elsewhere/2025/11/01", "rollout-x.jsonl", now + 10)
    assert Target(None, Settings(watch_codex_dir=tmp_path / "elsewhere")).current() == other
    # A sessions folder given as PATH: its newest rollout, days deep.
    assert Target(home / ".codex/sessions", Settings()).current() == newest
    # End to end, the command with HOME in tmp_path: the newest is the Claude file again.
    os.utime(claude, (now - 100, now - 100))
    proc = _watch([], tmp_path / "w.db", home)
    try:
        first = _read_until(_lines(proc), 1)[0]
        proc.send_signal(signal.SIGTERM)
        assert _ended(proc, db_stderr(tmp_path / "w.db")) == 0
    finally:
        proc.kill()
    assert first["path"] == str(newest) and first["records"] == 153
    assert first["context_window"] == 272000
