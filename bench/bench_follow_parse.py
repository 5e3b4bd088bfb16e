"""Benchmark of what one ``watch`` look costs as a Claude Code session grows (a script).

A session k times as long as the corpus's marot (k = 1, 4, 8): k copies of its 1,863 lines,
each copy's uuids, message ids and tool-call ids made its own and its root hung under the
previous copy's last record, so the whole is one conversation of k × 186 tool calls. The
last 400 lines are appended 10 at a time to a :class:`~engine.recordings.follow.Follower`
(no store: the look's reading, parsing and figures) that has read the rest; CPU time
(``time.process_time``) per appended record, median over the looks. Two parsers: the
whole-file one at every look (the reference, what ``watch`` did before) and the tail parser
(:mod:`engine.recordings.claude_code_follow`). Target (issue 28): per appended record at 4×
and 8× within 1.2× of 1×. A third column (issue 44) follows the same file with one record
written twice under its uuid (the second copy retimed, as a resumed or copied record is) just
before the appended part: the whole-file parser leaves the copy out, and the tail parser used
to fall back to the whole file at every look until the next round.

    python bench/bench_follow_parse.py            # prints, and rewrites the figures in
                                                  # docs/benchmarks.md (#following-a-long-session)
    python bench/bench_follow_parse.py --no-write
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from doc_section import write_section  # noqa: E402

from engine.recordings import follow  # noqa: E402
from engine.recordings.claude_code_follow import TailParser  # noqa: E402
from engine.settings.config import Settings  # noqa: E402

MAROT = ROOT / "tests/data/corpus/marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
DOC = ROOT / "docs/benchmarks.md"
BEGIN, END = "<!-- follow-parse:begin -->", "<!-- follow-parse:end -->"
UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
IDS = re.compile(r'"((?:toolu|msg|req)_[A-Za-z0-9]+)"')
TAIL, STEP = 400, 10


def longer(k: int) -> list[str]:
    """marot k times over as one conversation."""
    lines = MAROT.read_text(encoding="utf-8").splitlines()
    out: list[str] = []
    last = ""
    for copy in range(k):
        mark, suffix = f"{copy:02x}", f"c{copy}"
        part = [UUID.sub(lambda m, a=mark: a + m.group()[2:], line) for line in lines]  # type: ignore[misc]
        part = [IDS.sub(lambda m, b=suffix: f'"{m.group(1)}{b}"', line) for line in part]  # type: ignore[misc]
        if last:
            part[1] = part[1].replace('"parentUuid":null', f'"parentUuid":"{last}"', 1)
        last = UUID.findall(part[-1].split('"uuid":"', 1)[1])[0]
        out += part
    return out


def with_a_repeat(lines: list[str]) -> list[str]:
    """``lines`` with the last record before the appended part written again under its uuid,
    retimed (so the reader does not take it for a repeated line)."""
    at = next(n for n in range(len(lines) - TAIL - 1, 0, -1) if '"uuid"' in lines[n])
    record = json.loads(lines[at])
    record["timestamp"] = record["timestamp"][:-5] + "999Z"
    return [*lines[: at + 1], json.dumps(record), *lines[at + 1 :]]


def per_record(lines: list[str], tail_parser: bool) -> float:
    """Median CPU seconds per appended record over the last looks."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.jsonl"
        path.write_text("\n".join(lines[:-TAIL]) + "\n", encoding="utf-8")
        follower = follow.Follower(path, Settings())
        if not tail_parser:
            follower._tail_parser = _Whole(path.name)  # the reference at every look
        assert follower.look() is not None
        costs = []
        with open(path, "a", encoding="utf-8") as out:
            for at in range(len(lines) - TAIL, len(lines), STEP):
                out.write("\n".join(lines[at : at + STEP]) + "\n")
                out.flush()
                began = time.process_time()
                follower.look()
                costs.append((time.process_time() - began) / STEP)
        assert follower.parsed is not None
        calls = sum(len(i.calls) for i in follower.parsed.items)
        assert calls == 186 * (len(lines) // 1863), calls
    return statistics.median(costs)


class _Whole(TailParser):
    """The whole-file parser at every look."""

    def parse(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.anchor = None
        parsed = super().parse(*args, **kwargs)
        self.anchor = None
        return parsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = []
    for k in (1, 4, 8):
        lines = longer(k)
        rows.append(
            (
                k,
                len(lines),
                per_record(lines, False),
                per_record(lines, True),
                per_record(with_a_repeat(lines), True),
            )
        )
    base_whole, base_tail, base_repeat = rows[0][2], rows[0][3], rows[0][4]
    out = [
        "| length | lines | whole file at every look | × 1× | tail parser | × 1× "
        "| tail parser, a uuid repeated | × 1× |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k, n, whole, tail, repeat in rows:
        out.append(
            f"| {k}× | {n:,} | {whole * 1000:.1f} ms | {whole / base_whole:.2f}× | "
            f"{tail * 1000:.2f} ms | {tail / base_tail:.2f}× | "
            f"{repeat * 1000:.2f} ms | {repeat / base_repeat:.2f}× |"
        )
    worst = max(max(tail / base_tail, rep / base_repeat) for _, _, _, tail, rep in rows[1:])
    out.append(
        f"\nCPU per appended record (median over {TAIL // STEP} looks of {STEP} records at the "
        f"end), Python {platform.python_version()}, {platform.machine()}, a shared 2-core "
        f"machine. Target (at 4× and 8× within 1.2× of 1×): "
        f"{'met' if worst <= 1.2 else 'MISSED'} ({worst:.2f}×)."
    )
    text = "\n".join(out)
    print(text)
    if not args.no_write:
        write_section(DOC, BEGIN, END, text)


if __name__ == "__main__":
    main()
