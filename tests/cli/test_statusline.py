"""``ctxscope statusline`` as Claude Code runs it: the status JSON on stdin (the shape its
documentation gives: ``hook_event_name`` "Status", ``session_id``, ``transcript_path``,
``cwd``, ``model`` {id, display_name}, ``workspace``, ``version``, ``cost``,
``context_window``), one line out, never an escape sequence from the recording, never a wait
on a changed transcript."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAROT = ROOT / "tests/data/corpus/marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
# The corpus session's last call (python over the jsonl: the last assistant record with
# usage): input 3 + cache read 77,272 + cache write 59 + output 85 = 77,419 of Claude Code's
# 200,000 window on claude-opus-4-6, which compacts at 167,000: 89,581 to go; its 152 calls
# cost $11.85 at list price (tests/cli/test_recorded_figures.py works it out).
LINE = "claude-opus-4-6 · ctx 77,419/200,000 38.7% · 89,581 to auto-compact · $11.85"


def status(transcript: Path, **extra: object) -> str:
    return json.dumps(
        {
            "hook_event_name": "Status",
            "session_id": "258c7280-ae70-4798-800f-63464d01a85d",
            "transcript_path": str(transcript),
            "cwd": str(transcript.parent),
            "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
            "workspace": {"current_dir": str(transcript.parent), "project_dir": "/p"},
            "version": "2.1.39",
            "cost": {"total_cost_usd": 11.85, "total_duration_ms": 1},
            "context_window": {"context_window_size": 200000},
            **extra,
        }
    )


def run(tmp: Path, stdin: str, *args: str, linger: str = "0") -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "CTXSCOPE_STATUSLINE_LINGER": linger,
    }
    env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "cli.workbench", "statusline", "--db", str(tmp / "s.db"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    copy = tmp_path / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    copy.write_bytes(MAROT.read_bytes())
    return copy


def test_wait_prints_the_sessions_figures(tmp_path: Path, transcript: Path) -> None:
    done = run(tmp_path, status(transcript), "--wait")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == LINE + "\n"


def test_a_known_transcript_is_printed_from_the_cache(tmp_path: Path, transcript: Path) -> None:
    run(tmp_path, status(transcript), "--wait")
    (tmp_path / "s.db").rename(tmp_path / "gone.db")  # the cached line needs no database
    done = run(tmp_path, status(transcript))
    assert done.stdout == LINE + "\n"


def test_a_changed_transcript_is_never_waited_for(tmp_path: Path, transcript: Path) -> None:
    """Changed since the cached line: the cached line, marked, at once; a refresher reads the
    change in the background and the next run prints the new figures."""
    run(tmp_path, status(transcript), "--wait")
    records = [json.loads(x) for x in transcript.read_bytes().splitlines()]
    last = next(r for r in reversed(records) if r.get("type") == "assistant")
    usage = {"input_tokens": 10, "cache_read_input_tokens": 80_000, "output_tokens": 90}
    usage |= {"cache_creation_input_tokens": 0}
    new = dict(last, uuid="u-next", parentUuid=records[-1]["uuid"])
    new["message"] = dict(last["message"], id="msg_next", usage=usage)
    with transcript.open("a") as f:
        f.write(json.dumps(new) + "\n")
    done = run(tmp_path, status(transcript))
    assert done.stdout == LINE + " …\n"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:  # wait for the state: the refresher's new line
        out = run(tmp_path, status(transcript)).stdout
        if "…" not in out:
            break
    # 10 + 80,000 + 0 + 90 = 80,100: 86,900 left before 167,000
    assert "ctx 80,100/200,000 " in out and " · 86,900 to auto-compact · " in out


def test_first_run_says_it_is_reading(tmp_path: Path, transcript: Path) -> None:
    done = run(tmp_path, status(transcript))
    assert done.returncode == 0 and done.stdout == "ctxscope: reading the session…\n"


def test_no_transcript_is_one_line(tmp_path: Path) -> None:
    for stdin in ("", "not json", json.dumps({"session_id": "x"}), "[]"):
        done = run(tmp_path, stdin)
        assert done.returncode == 0
        assert done.stdout == "ctxscope: no transcript_path in the status JSON\n"


def test_a_recordings_model_name_cannot_write_escapes(tmp_path: Path) -> None:
    """A model id with ESC, CSI, BEL and a C1 byte (what a hostile transcript could name) is
    printed with each control character escaped: no raw byte below 0x20 or in 0x7f-0x9f."""
    f = tmp_path / "s.jsonl"
    lines = MAROT.read_bytes().splitlines()[:40]
    hostile = "claude\x1b]52;c;ZXZpbA==\x07\x9b2J"
    out = []
    for raw in lines:
        record = json.loads(raw)
        if record.get("type") == "assistant":
            record["message"]["model"] = hostile
        out.append(json.dumps(record))
    f.write_text("\n".join(out) + "\n")
    done = run(tmp_path, status(f), "--wait")
    assert done.returncode == 0
    text = done.stdout.rstrip("\n")
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text), text
    assert "\\x1b]52;c;ZXZpbA==\\x07\\x9b2J" in text


def test_the_cache_is_named_by_a_digest(tmp_path: Path) -> None:
    """Nothing in the status JSON chooses where a file is written."""
    evil = tmp_path / "x" / ".." / ".." / "escape.jsonl"
    run(tmp_path, status(evil))
    written = [p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert all(len(Path(n).stem.lstrip(".").split(".")[0]) == 32 for n in written), written
    assert not (tmp_path.parent / "escape.jsonl").exists()
