"""``ctxscope statusline``'s time, as ratios against ``python -c pass`` measured in the same run.

Claude Code runs the status line after every assistant message, so it must cost next to
nothing. Targets (issue 37): on a session whose figures are already known, at most 2× `python
-c pass`; on a 4 MB transcript not yet stored, the line back within 150 ms. The second prints
"reading the session…" at once and reads in the background (docs/cli.md#statusline); how long
that background read takes (`statusline --wait`) is measured too, as what the user waits
before the figures appear.

Runs are interleaved (baseline, command, baseline, command…) and each figure is a median.

    .venv/bin/python bench/bench_statusline.py [--runs 9] [--write-doc]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAROT = (
    ROOT
    / "tests"
    / "data"
    / "corpus"
    / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
)
BEGIN = "<!-- bench_statusline: begin -->"
END = "<!-- bench_statusline: end -->"


def four_mb(folder: Path) -> Path:
    """A 4 MB Claude Code transcript: the corpus' 2.76 MB session, then its first records again
    with the same content (a resumed session repeats its records) up to 4,000,000 bytes."""
    lines = MAROT.read_bytes().splitlines(keepends=True)
    out = folder / "four.jsonl"
    size = 0
    with out.open("wb") as f:
        for line in lines:
            f.write(line)
            size += len(line)
        for line in lines:
            if size >= 4_000_000:
                break
            f.write(line)
            size += len(line)
    return out


def timed(args: list[str], stdin: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, input=stdin, capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - start


def stop_refreshers(cache: Path) -> None:
    """End the background refreshers a run started (each lock file holds its pid)."""
    for lock in cache.rglob("*.lock"):
        try:
            os.kill(int(lock.read_text() or "0"), 15)
        except (ValueError, OSError):
            pass
        lock.unlink(missing_ok=True)


def next_record(transcript: Path) -> bytes:
    """A new assistant record after the transcript's last one, as Claude Code writes the next:
    the last assistant record again with a new uuid and message id, hung off the last record."""
    records = [json.loads(x) for x in transcript.read_bytes().splitlines() if x.strip()]
    last = next(r for r in reversed(records) if r.get("type") == "assistant")
    new = dict(last, uuid=str(uuid.uuid4()), parentUuid=records[-1].get("uuid"))
    new["message"] = dict(last["message"], id=f"msg_{uuid.uuid4().hex[:24]}")
    return (json.dumps(new) + "\n").encode()


def shown_after_append(
    transcript: Path, record: bytes, line: list[str], status: str, env: dict[str, str]
) -> float:
    """Seconds from a record appended to the status line showing it (no ``…`` any more)."""
    with transcript.open("ab") as f:
        f.write(record)
    start = time.perf_counter()
    while time.perf_counter() - start < 120:
        out = subprocess.run(line, input=status, capture_output=True, text=True, env=env).stdout
        if "…" not in out:
            break
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-statusline-"))
    try:
        transcript = four_mb(tmp)
        db = tmp / "bench.db"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp / "cache")}
        status = json.dumps({"session_id": "bench", "transcript_path": str(transcript)})
        line = [sys.executable, "-m", "cli.workbench", "statusline", "--db", str(db)]
        base = [sys.executable, "-c", "pass"]

        # the line back on a transcript not yet stored (the cache emptied before each run)
        cold, cold_base = [], []
        for _ in range(args.runs):
            stop_refreshers(tmp / "cache")
            shutil.rmtree(tmp / "cache", ignore_errors=True)
            cold_base.append(timed(base, "", env))
            cold.append(timed(line, status, env))
        stop_refreshers(tmp / "cache")
        # the background read itself: what the user waits before the figures show
        shutil.rmtree(tmp / "cache", ignore_errors=True)
        (tmp / "bench.db").unlink(missing_ok=True)
        first_read = timed([*line, "--wait"], status, env)
        # the line on a session already stored and unchanged
        warm, warm_base = [], []
        for _ in range(args.runs):
            warm_base.append(timed(base, "", env))
            warm.append(timed(line, status, env))
        # a message appended: the status line starts a refresher, which reads the transcript
        # and then keeps following it; a second message is read by that same process
        first_follow = shown_after_append(transcript, next_record(transcript), line, status, env)
        next_read = shown_after_append(transcript, next_record(transcript), line, status, env)
    finally:
        stop_refreshers(tmp / "cache")
        shutil.rmtree(tmp, ignore_errors=True)

    load = os.getloadavg()[0]
    b_warm, c_warm = statistics.median(warm_base), statistics.median(warm)
    b_cold, c_cold = statistics.median(cold_base), statistics.median(cold)
    rows = [
        "| case | statusline | `python -c pass` | ratio | target |",
        "|---|---|---|---|---|",
        f"| a stored session, unchanged | {c_warm * 1000:.0f} ms | {b_warm * 1000:.0f} ms "
        f"| {c_warm / b_warm:.2f}× | ≤ 2× |",
        f"| a 4 MB transcript not yet stored: the line back | {c_cold * 1000:.0f} ms "
        f"| {b_cold * 1000:.0f} ms | {c_cold / b_cold:.2f}× | ≤ 150 ms |",
        f"| … its background read (`--wait`): the figures shown | {first_read * 1000:.0f} ms "
        "| | | (what the user waits) |",
        f"| a message appended: until the line shows it (a refresher starts) "
        f"| {first_follow * 1000:.0f} ms | | | |",
        f"| the next message: until the line shows it (the same refresher, incremental) "
        f"| {next_read * 1000:.0f} ms | | | |",
    ]
    text = "\n".join(
        [
            f"Median of {args.runs} interleaved runs, load average {load:.2f} at the end, "
            f"{os.cpu_count()} cores (`bench/bench_statusline.py`).",
            "",
            *rows,
        ]
    )
    print(text)
    if args.write_doc:
        sys.path.insert(0, str(Path(__file__).parent))
        from doc_section import write_section

        write_section(ROOT / "docs" / "benchmarks.md", BEGIN, END, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
