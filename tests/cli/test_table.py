"""``sessions`` at 80 columns: one line a session, the title cut, not a table that wraps each
row over two or three lines (its columns alone took 98 cells before the title)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from cli.main import main
from cli.table import Column, table
from tests.engine.recordings.corpus import MAROT

ROOT = Path(__file__).resolve().parents[2]

COLUMNS = [
    Column("ID", ["7", "12"], right=True),
    Column("NAME", ["alpha", "b"]),
    Column("SIZE", ["1,024", "9"], right=True, drop=2),
    Column("NOTE", ["x", "yy"], drop=1),
    Column("TITLE", ["a long title of thirty cells..", "短い題"]),
]


def test_widths_are_the_widest_cell_and_numbers_go_right() -> None:
    # ID 2, NAME 5 ("alpha"), SIZE 5 ("1,024"), NOTE 4 (its heading): gaps of two
    assert table(COLUMNS, None).splitlines() == [
        "ID  NAME    SIZE  NOTE  TITLE",
        " 7  alpha  1,024  x     a long title of thirty cells..",
        "12  b          9  yy    短い題",
    ]


def test_a_narrow_terminal_drops_the_optional_columns_in_order_then_cuts_the_title() -> None:
    # every column: 4 + 7 + 7 + 6 = 24 cells before the title; 24 + 20 > 40: NOTE (drop 1)
    # goes, 18 + 20 <= 40: SIZE stays; the title gets 40 - 18 = 22 cells, 21 and "…"
    assert table(COLUMNS, 40).splitlines() == [
        "ID  NAME    SIZE  TITLE",
        " 7  alpha  1,024  a long title of thirt…",
        "12  b          9  短い題",
    ]
    # at 30, SIZE goes too (18 + 20 > 30): 11 cells before the title, 19 for it
    assert table(COLUMNS, 30).splitlines() == [
        "ID  NAME   TITLE",
        " 7  alpha  a long title of th…",
        "12  b      短い題",
    ]


def test_a_wide_character_is_two_cells_and_is_never_cut_in_half() -> None:
    # 11 cells before the title at 16: 5 for it, 4 and "…"; 短い題 is 6 cells: "短い" + "…"
    lines = table(COLUMNS, 16).splitlines()
    assert lines[2] == "12  b      短い…"


def test_sessions_at_80_columns_one_line_a_session(tmp_path: Path) -> None:
    """marot in a pseudo-terminal of 80 columns (``COLUMNS``, which the terminal size honours).
    What is checked here is the layout; of the figures, context 77,419 (the last main call's
    input + cache read + cache write + output, a one-liner over the file) and $11.85
    (tests/cli/test_history_figures.py's hand calculation, 11.853924) were worked out apart,
    the 8 rounds are the stored ones (``show`` and the workbench count them the same).
    ID 2 + STARTED 16 + AGENT 11 + ROUNDS 6 + CONTEXT 7 + COST 6, each with its gap of 2:
    60 cells, and the title the 20 left: LAST, WINDOW and COMP are left out (82 + 20,
    75 + 20 and 66 + 20 are over 80)."""
    db = tmp_path / "db.sqlite"
    assert main(["import", str(MAROT), "--db", str(db), "--workspace", str(tmp_path)]) == 0
    primary, secondary = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "sessions", "--db", str(db)],
        stdout=secondary,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=True,
    )
    os.close(secondary)
    out = b""
    while True:
        try:
            more = os.read(primary, 4096)
        except OSError:  # the other end closed
            break
        if not more:
            break
        out += more
    os.close(primary)
    assert done.stderr == b""
    assert out.decode().splitlines() == [
        "ID  STARTED           AGENT        ROUNDS  CONTEXT    COST  TITLE",
        " 1  2026-02-11 20:36  Claude Code       8   77,419  $11.85  import: Implement s…",
    ]
