"""Benchmark of ``ctxscope watch PATH --jsonl`` (a script, not a timed test).

A real Claude Code session from the corpus (marot: 1,863 records over 74 minutes, with one
automatic compaction at line 1256) is written into a temporary file one record at a time,
while ``ctxscope watch FILE --jsonl`` runs as a subprocess on it with its default settings (a
look every ``watch_poll_interval``, 0.2 s). Timed, per record: from the moment its write was
flushed to the moment this script read the first JSON line whose running ``records`` total
covers it (so the watcher's look, parse, figures, store and print, and the pipe). Two paces:

- **recorded pace**: lines 1151-1300, around the compaction, with the records' own timestamps
  spacing the writes; a gap longer than ``--cap`` seconds (2 s; the person was reading or
  away, up to 9.5 minutes) is shortened to the cap. The first 1,150 lines are in the file
  when the watcher starts (it is watching a session already under way).
- **100× pace**: the whole file, each gap divided by 100 (then capped the same way); the first
  five lines (to the first user record) are there when the watcher starts.

Idle: after a 100× run has ended and its last line arrived, the watcher's CPU time (user +
system, from ``/proc/PID/stat``, Linux only) over ``--idle`` seconds (10) with no write, as a
percentage of one core.

Each figure is the median over ``--runs`` runs (3) of that run's median or 95th percentile.

``--growth`` (issue 44) measures instead what one appended record costs the watcher as the
file grows: marot made 1× and 8× as long (``bench_follow_parse.longer``: one conversation of
k copies, fresh ids), with a record written twice under its uuid just before the appended part
(``with_a_repeat``: a resumed or copied record, which once sent every look to the whole file),
all but the last 400 lines in the file when the watcher starts, those 400 then appended 20 a
second. Per record: the watcher's CPU (look, parse, figures, store, print; ``/proc``) from the
first append to the last line reported, and the write → JSON line latency.

    python bench/bench_watch.py                 # prints, and rewrites the figures in
                                                # docs/benchmarks.md (#watch)
    python bench/bench_watch.py --runs 1 --no-write
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus"
MAROT = CORPUS / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
DOCS = ROOT / "docs" / "benchmarks.md"
START = "<!-- watch-bench:start -->"
END = "<!-- watch-bench:end -->"
TARGET_LATENCY = 0.5
TARGET_IDLE = 1.0
WINDOW = (1150, 1300)
"""The recorded-pace run writes lines 1151-1300 (0-based slice), the compaction inside."""


def records() -> tuple[list[bytes], list[float]]:
    """marot's lines and, for each, the seconds since the previous record (a record without
    a timestamp, a file-history-snapshot or a queue operation, takes its neighbour's)."""
    lines = MAROT.read_bytes().split(b"\n")[:-1]
    stamps: list[float | None] = []
    for raw in lines:
        at = json.loads(raw).get("timestamp")
        stamps.append(datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() if at else None)
    first = next(s for s in stamps if s is not None)
    filled: list[float] = []
    for s in stamps:
        filled.append(s if s is not None else (filled[-1] if filled else first))
    gaps = [0.0] + [max(0.0, b - a) for a, b in zip(filled, filled[1:], strict=False)]
    return lines, gaps


@dataclass
class Run:
    latencies: list[float]
    """Seconds from each record's write to the line that reported it."""
    written: float
    """Seconds the writes took (the paced replay)."""
    idle_percent: float | None = None
    cpu: float = 0.0
    """The watcher's CPU seconds from the first write to the last line reported."""


class Watcher:
    """``ctxscope watch FILE --jsonl`` in a subprocess; its lines read by a thread, stamped
    with the time each was read."""

    def __init__(self, path: Path, db: Path) -> None:
        self.stderr = open(db.with_suffix(".stderr"), "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cli.workbench", "watch", str(path), "--jsonl", "--db", str(db)],
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            cwd=ROOT,
            env={k: v for k, v in os.environ.items() if not k.startswith("CTXSCOPE_")},
        )
        self.lines: queue.Queue[tuple[float, dict[str, object]] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.total = 0
        """Records reported so far (the ``records`` of every line read)."""
        self.reported: list[tuple[int, float]] = []
        """(running total, time read) for each line."""

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.perf_counter(), json.loads(line)))
        self.lines.put(None)

    def wait_for(self, total: int, timeout: float = 60) -> None:
        """Take lines until ``total`` records were reported."""
        deadline = time.monotonic() + timeout
        while self.total < total:
            try:
                item = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise SystemExit(f"watch reported {self.total} of {total} records") from None
            if item is None:
                raise SystemExit(f"watch ended early; see {self.stderr.name}")
            at, data = item
            self.total += int(str(data.get("records", 0)))  # a notice line has none
            self.reported.append((self.total, at))

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        finally:
            self.proc.kill()
            self.stderr.close()


def replay(
    first: int,
    last: int,
    speed: float,
    cap: float,
    idle: float,
    source: tuple[list[bytes], list[float]] | None = None,
) -> Run:
    """Write lines ``first:last`` (``[:first]`` already there) at ``speed`` × the recorded
    pace, gaps capped at ``cap`` seconds; time each record to the line that reports it.
    ``source``: other lines and gaps than marot's."""
    lines, gaps = source or records()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / MAROT.name
        path.write_bytes(b"".join(line + b"\n" for line in lines[:first]))
        watcher = Watcher(path, Path(tmp) / "watch.db")
        try:
            watcher.wait_for(first, timeout=60 if source is None else 900)
            cpu_before = watcher.cpu_seconds()
            written_at: list[float] = []
            began = time.perf_counter()
            with open(path, "ab") as out:
                for n in range(first, last):
                    time.sleep(min(gaps[n] / speed, cap))
                    out.write(lines[n] + b"\n")
                    out.flush()
                    written_at.append(time.perf_counter())
            written = time.perf_counter() - began
            watcher.wait_for(last, timeout=60 if source is None else 900)
            cpu = watcher.cpu_seconds() - cpu_before
            latencies = []
            reported = iter(watcher.reported)
            total, at = next(reported)
            for k, wrote in enumerate(written_at, start=first + 1):
                while total < k:
                    total, at = next(reported)
                latencies.append(at - wrote)
            run = Run(latencies, written, cpu=cpu)
            if idle:
                before = watcher.cpu_seconds()
                time.sleep(idle)
                run.idle_percent = 100 * (watcher.cpu_seconds() - before) / idle
            return run
        finally:
            watcher.stop()


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def ms(seconds: float) -> str:
    return f"{1000 * seconds:,.0f} ms"


GROWTH_START, GROWTH_END = "<!-- watch-growth:start -->", "<!-- watch-growth:end -->"
APPENDED, PACE = 400, 0.05


def growth(runs: int) -> str:
    """The watcher's CPU and latency per appended record at 1× and 8× marot, a uuid
    repeated just before the appended part; a table."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_follow_parse import longer, with_a_repeat

    rows, base = [], None
    load_before = os.getloadavg()[0]
    for k in (1, 8):
        lines = [line.encode() for line in with_a_repeat(longer(k))]
        gaps = [PACE] * len(lines)
        first = len(lines) - APPENDED
        done = [replay(first, len(lines), 1.0, 1.0, 0.0, (lines, gaps)) for _ in range(runs)]
        cpu = statistics.median(r.cpu / APPENDED for r in done)
        latency = statistics.median(statistics.median(r.latencies) for r in done)
        base = base or (cpu, latency)
        print(f"  {k}×: {cpu * 1000:.2f} ms CPU a record, latency {ms(latency)}", flush=True)
        rows.append(
            f"| {k}× | {len(lines):,} | {cpu * 1000:.2f} ms | {cpu / base[0]:.2f}× | "
            f"{ms(latency)} | {latency / base[1]:.2f}× |"
        )
    return "\n".join(
        [
            "| length | lines | watcher CPU per appended record | × 1× | write → JSON line, "
            "median | × 1× |",
            "|---|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"`python bench/bench_watch.py --growth --runs {runs}`: the last {APPENDED} lines "
            f"appended {1 / PACE:g} a second, a uuid repeated just before them; medians over "
            f"{runs} run(s); CPython {platform.python_version()}, {platform.machine()}, "
            f"{os.cpu_count()} CPU(s), load average {load_before:.1f} at the start, "
            f"{os.getloadavg()[0]:.1f} at the end.",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cap", type=float, default=2.0, help="longest gap kept, in seconds")
    parser.add_argument("--idle", type=float, default=10.0, help="idle window, in seconds")
    parser.add_argument("--no-write", action="store_true", help="do not touch the docs")
    parser.add_argument("--growth", action="store_true", help="CPU per record at 1× and 8×")
    args = parser.parse_args()
    if args.growth:
        table = growth(args.runs)
        print(table)
        if not args.no_write:
            text = DOCS.read_text(encoding="utf-8")
            head, rest = text.split(GROWTH_START, 1)
            _, tail = rest.split(GROWTH_END, 1)
            DOCS.write_text(f"{head}{GROWTH_START}\n{table}\n{GROWTH_END}{tail}", encoding="utf-8")
        return

    rows: list[str] = []
    met = True
    paces = [
        (
            f"recorded pace, lines {WINDOW[0] + 1:,}-{WINDOW[1]:,} (gaps capped at {args.cap:g} s)",
            *WINDOW,
            1.0,
            0.0,
        ),
        ("100× pace, the whole file (1,863 records)", 5, 1863, 100.0, args.idle),
    ]
    idle: list[float] = []
    for label, first, last, speed, idle_window in paces:
        runs = []
        for i in range(args.runs):
            run = replay(first, last, speed, args.cap, idle_window)
            runs.append(run)
            print(
                f"  {label}, run {i + 1}: {len(run.latencies)} records written in "
                f"{run.written:.1f} s; write → line median {ms(statistics.median(run.latencies))}"
                f", p95 {ms(p95(run.latencies))}, worst {ms(max(run.latencies))}"
                + (
                    f"; idle CPU {run.idle_percent:.2f} % of a core"
                    if run.idle_percent is not None
                    else ""
                ),
                flush=True,
            )
            if run.idle_percent is not None:
                idle.append(run.idle_percent)
        median = statistics.median(statistics.median(r.latencies) for r in runs)
        high = statistics.median(p95(r.latencies) for r in runs)
        met = met and median <= TARGET_LATENCY
        rows.append(
            f"| {label} | {len(runs[0].latencies):,} | {ms(median)} | {ms(high)} | "
            f"≤ {ms(TARGET_LATENCY)} (median) |"
        )
    idle_median = statistics.median(idle)
    met = met and idle_median <= TARGET_IDLE
    rows.append(
        f"| idle: CPU over {args.idle:g} s with no write, after a 100× run "
        f"(1,863 records followed) | — | {idle_median:.2f} % of a core | — | ≤ {TARGET_IDLE:g} % |"
    )
    table = "\n".join(
        [
            f"`python bench/bench_watch.py --runs {args.runs}` on CPython "
            f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPU(s); "
            f"medians over {args.runs} run(s) of each run's median / 95th percentile; load "
            f"average at the end {os.getloadavg()[0]:.2f}.",
            "",
            "| replay | records | write → JSON line, median | p95 | target |",
            "|---|---:|---:|---:|---:|",
            *rows,
            "",
            f"All targets met: {'yes' if met else 'no'}.",
        ]
    )
    print()
    print(table)
    if not args.no_write:
        text = DOCS.read_text(encoding="utf-8")
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        DOCS.write_text(f"{head}{START}\n{table}\n{END}{tail}", encoding="utf-8")
        print(f"\nwrote the figures into {DOCS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
