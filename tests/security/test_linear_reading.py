"""Linear, bounded reading (issue 42): junk lines, a file in no known format, records past the
cap, and the aider history that took 75 s for 121 KB.

Time is never compared with a fixed number of seconds: each hostile input is timed against a
benign one of the same size parsed in the same test, and memory is traced (``tracemalloc``)
against the size of what is read.
"""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from engine.recordings import aider, files
from engine.recordings.base import MAX_LINES_KEPT
from engine.recordings.files import read_session
from engine.recordings.importing import UnknownFormat, parse_sessions

ROOT = Path(__file__).resolve().parents[2]
MAROT = ROOT / "tests/data/corpus/marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
MAROT_LINES = 1863
"""``wc -l`` of the marot session (every line ends with a newline)."""
JUNK = b"this is a junk line, not json at all, fairly ordinary\n"  # 54 bytes


def test_junk_lines_are_counted_without_keeping_them(tmp_path: Path) -> None:
    """marot followed by 400,000 junk lines (21.6 MB): every one counted as not JSON, the
    first 100 numbered; the text the readers get holds none of them; the memory traced while
    parsing is below the junk's own size (the old reader held the whole file twice, then a
    list of its lines): what it adds to marot's own peak is under a quarter of it."""
    n = 400_000
    path = tmp_path / "junk.jsonl"
    path.write_bytes(MAROT.read_bytes() + JUNK * n)
    read = read_session(path)
    assert b"junk" not in read.text.encode()
    assert read.text.count("\n") == MAROT_LINES + n
    base = _traced_peak(MAROT)
    peak = _traced_peak(path)
    (parsed,) = parse_sessions(path)
    assert parsed.not_read.count_of_line("not JSON") == n
    assert parsed.not_read.lines["not JSON"][:3] == [MAROT_LINES + 1, MAROT_LINES + 2, 1866]
    assert len(parsed.not_read.lines["not JSON"]) == MAX_LINES_KEPT
    (sentence,) = parsed.not_read_sentences()
    assert sentence.startswith(f"{n} lines not read: not JSON (lines 1864, 1865")
    assert sentence.endswith(f"and {n - 5} more)")
    assert peak - base < len(JUNK) * n / 4, (peak, base)


def _traced_peak(path: Path) -> int:
    tracemalloc.start()
    try:
        parse_sessions(path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_file_in_no_known_format_is_refused_from_its_head(tmp_path: Path) -> None:
    """1,000,000 junk lines: only the first 200 are read (the text is that head), and the
    file is refused as in no known format."""
    path = tmp_path / "junk.jsonl"
    path.write_bytes(JUNK * 1_000_000)
    read = read_session(path)
    assert read.text.count("\n") == files.HEAD_LINES
    with pytest.raises(UnknownFormat, match="not a recognised session format"):
        parse_sessions(path)


def test_records_past_the_cap_are_counted_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a 1 MB cap, marot (2.6 MB) keeps its records up to the first that would pass
    1 MB; every later non-blank line is counted as past the cap. The expected split is
    worked out here from the file's own line lengths."""
    monkeypatch.setattr(files, "MAX_KEPT_BYTES", 1 << 20)
    lines = MAROT.read_bytes().splitlines(keepends=True)
    kept = 0
    first_out = None
    for number, line in enumerate(lines, start=1):
        if kept + len(line) > 1 << 20:
            first_out = number
            break
        kept += len(line)
    assert first_out is not None
    past = sum(1 for line in lines[first_out - 1 :] if line.strip())
    read = read_session(MAROT)
    assert read.left_out.count_of_line(files.PAST_CAP) == past
    assert read.left_out.lines[files.PAST_CAP][0] == first_out
    assert len(read.text.encode()) == kept + (len(lines) - first_out + 1)


def _hostile_aider(size: int) -> str:
    """An aider history whose lines are what made the three regexes quadratic: a heading
    with a long run of blanks before its last word, a Tokens line of one long run of digits,
    and one with a long run of blanks — each ``size`` characters."""
    return (
        "# aider chat started at 2024-05-01 10:00:00\n\n"
        "#### fix it  \n\nDone.\n\n"
        "> Tokens: " + "1" * size + "\n"
        "> Tokens: x" + " " * size + "y\n\n"
        "# aider chat started at " + " " * size + "x\n\n"
        "#### again  \n\nOk.\n"
    )


def _benign_aider(size: int) -> str:
    """The same shape and size, the long lines ordinary text."""
    words = ("lorem " * (size // 6 + 1))[:size]
    return (
        "# aider chat started at 2024-05-01 10:00:00\n\n"
        "#### fix it  \n\nDone.\n\n"
        f"> {words}\n"
        f"> Tokens: 12 sent, 3 received. {words}\n\n"
        "# aider chat started at 2024-05-01 11:00:00\n\n"
        f"#### again  \n\n{words}\n"
    )


def _seconds(text: str) -> float:
    """The best of 5 parses, in this process's CPU seconds: a loaded machine's waits for a
    core are not the parser's time."""
    best = float("inf")
    for _ in range(5):
        began = time.process_time()
        aider.parse_all(text, "h.md")
        best = min(best, time.process_time() - began)
    return best


def test_a_hostile_aider_history_parses_in_linear_time() -> None:
    """121 KB (three 40,000-character lines): the old regexes took 75 s on the issue's
    machine (9.6 s for the heading alone at 20,000 here, 54 s for the digits); now within 20
    times the benign history of the same size, timed in this run (best of 5, 50 ms of slack
    for a loaded machine). Doubling the size stays under 4x (quadratic is 4x, and the old
    regexes took minutes)."""
    hostile, benign = _hostile_aider(40_000), _benign_aider(40_000)
    assert 120_000 <= len(hostile) <= 122_000 and abs(len(benign) - len(hostile)) < 200
    baseline = _seconds(benign)
    took = _seconds(hostile)
    assert took < 20 * baseline + 0.05, (took, baseline)
    doubled = _seconds(_hostile_aider(80_000))
    assert doubled < 4 * took + 0.05, (doubled, took)
    (first,) = aider.parse_all(hostile, "h.md")  # the heading with no time: left out
    assert any("line 10: a session that cannot be read" in w for w in first.warnings)
    assert first.title == "fix it"
