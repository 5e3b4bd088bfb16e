"""``ctxscope watch FILE`` on a file not written yet waits for it (issue 39: it said "no such
file or folder" and ended; an agent writes its session file after its first turn)."""

from __future__ import annotations

import json
import queue
import signal
from pathlib import Path

from tests.engine.recordings.test_watch import _lines, _watch, marot_lines


def _next(lines: queue.Queue[str], timeout: float = 60) -> dict:
    line = lines.get(timeout=timeout)
    assert line, "the watcher ended early"
    return dict(json.loads(line))


def test_watch_waits_for_a_file_not_written_yet(tmp_path: Path) -> None:
    f = tmp_path / "later.jsonl"
    proc = _watch(f, tmp_path / "w.db")
    try:
        lines = _lines(proc)
        waiting = _next(lines)
        assert waiting["event"] == "notice" and waiting["session"] is None
        assert waiting["message"] == f"{f} is not written yet: waiting for it"
        assert proc.poll() is None  # still running, waiting
        f.write_bytes(b"\n".join(marot_lines()[:100]) + b"\n")
        update = _next(lines)
        while update["event"] == "notice":
            update = _next(lines)
        assert update["session"] is not None and update["records"] > 0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert proc.returncode == 0


def test_a_missing_folder_is_still_refused(tmp_path: Path) -> None:
    proc = _watch(tmp_path / "no-such-folder" / "s.jsonl", tmp_path / "w.db")
    assert proc.wait(timeout=60) == 1
    said = (tmp_path / "w.stderr").read_text()
    assert "cannot watch" in said and "no such file or folder" in said
