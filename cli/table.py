"""A text table sized to what it holds and, on a terminal, to the terminal's width.

Each column is as wide as its widest cell (its heading included). Piped or redirected, every
column and every character is printed, as a script reading it expects. On a terminal narrower
than the table, the columns a caller marks as optional are left out, in the order it gives,
until the last column (a free text, such as a title) has room for ``min_last`` cells; then that
text is cut to the room left, ending in ``…``. Widths are terminal cells (a wide character
takes two), as the terminal draws them.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass

GAP = "  "


@dataclass(frozen=True)
class Column:
    heading: str
    cells: Sequence[str]
    right: bool = False
    """Aligned to the right (numbers)."""
    drop: int = 0
    """0: always shown; otherwise left out on a narrow terminal, lowest first."""


def terminal_width() -> int | None:
    """The width to fit to: the terminal's when standard output is one, else None (no limit).
    ``COLUMNS`` is honoured, as :func:`shutil.get_terminal_size` does."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def table(columns: Sequence[Column], width: int | None, min_last: int = 20) -> str:
    """The lines of ``columns`` (each the same number of cells), fitted to ``width``."""
    from rich.cells import cell_len, set_cell_size

    shown = list(columns)
    widths = {c.heading: max(map(cell_len, [c.heading, *c.cells])) for c in shown}

    def fixed() -> int:  # every column but the last, with the gaps
        return sum(widths[c.heading] + len(GAP) for c in shown[:-1])

    if width is not None:
        for column in sorted((c for c in columns if c.drop), key=lambda c: c.drop):
            if fixed() + min(min_last, widths[shown[-1].heading]) <= width:
                break
            shown.remove(column)
    room = None if width is None else max(width - fixed(), 1)

    def line(cells: Sequence[str]) -> str:
        parts = [
            " " * (widths[c.heading] - cell_len(cell)) + cell
            if c.right
            else cell + " " * (widths[c.heading] - cell_len(cell))
            for c, cell in zip(shown[:-1], cells[:-1], strict=True)
        ]
        last = cells[-1]
        if room is not None and cell_len(last) > room:
            last = set_cell_size(last, room - 1) + "…"
        return GAP.join([*parts, last])

    rows = zip(*(c.cells for c in shown), strict=True)
    return "\n".join([line([c.heading for c in shown]), *(line(r) for r in rows)])
