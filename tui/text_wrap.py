"""Cutting text into rows for the line-based views: fast enough for 10 000 messages.

ASCII lines (most of a coding session: code, JSON, English) are word-wrapped with plain string
slicing; other lines are cut by terminal cells with Rich's ``chop_cells`` so wide characters
(CJK, emoji) never overflow a row. Tabs become four spaces, and control characters are shown
escaped (``\\x1b``) by :func:`engine.terminal_text.printable`: every text these views draw may
come from a recording, and Textual sends what it draws to the terminal as it is.

Some sequences have no agreed width: an emoji variation selector (U+FE0F: ``🏗️`` is measured as
two cells by Rich and drawn as one by tmux and many terminals), zero-width-joiner sequences,
skin-tone modifiers, keycaps. One cell of disagreement shifts the rest of the row and breaks the
pane's border, so :func:`display_safe` drops those parts *for display only* (``🏗️`` is drawn
as ``🏗``, one cell everywhere); what is stored and sent is untouched.
"""

from __future__ import annotations

import re

from rich.cells import cell_len, chop_cells
from rich.text import Text

from engine.terminal_text import printable

_AMBIGUOUS = re.compile(
    "[\ufe0e\ufe0f\u20e3\U0001f3fb-\U0001f3ff]"  # variation selectors, keycap, skin tones
    "|\u200d[^\\s]?"  # a zero-width joiner and the character it joins
)


def display_safe(text: str, *, one_line: bool = False) -> str:
    """``text`` as the workbench draws it: control characters shown escaped (newlines and
    tabs too with ``one_line``), without the sequences terminals disagree on the width of
    (display only)."""
    text = printable(text, one_line=one_line)
    if text.isascii():
        return text
    return _AMBIGUOUS.sub("", text)


def _wrap_ascii(line: str, width: int, limit: int) -> list[str]:
    """Greedy word wrap of an ASCII line; words longer than ``width`` are cut.

    Stops after ``limit`` rows (the rest of the line is then one more, unwrapped, row).
    """
    out: list[str] = []
    start = 0
    end = len(line)
    while end - start > width and len(out) < limit:
        cut = line.rfind(" ", start, start + width + 1)
        if cut <= start:
            out.append(line[start : start + width])
            start += width
        else:
            out.append(line[start:cut])
            start = cut + 1
    out.append(line[start:])
    return out


def _wrap_cells(line: str, width: int, limit: int) -> list[str]:
    """Greedy word wrap by terminal cells (wide characters count two); stops near ``limit``."""
    out: list[str] = []
    current = ""
    used = 0
    for word in line.split(" "):
        if len(out) > limit:
            break
        size = cell_len(word)
        if size > width:
            if current:
                out.append(current)
            pieces = chop_cells(word, width)
            out.extend(pieces[:-1])
            current, used = pieces[-1], cell_len(pieces[-1])
            continue
        if not current:
            current, used = word, size
        elif used + 1 + size <= width:
            current += " " + word
            used += 1 + size
        else:
            out.append(current)
            current, used = word, size
    out.append(current)
    return out


def wrap_rows(text: str, width: int, max_rows: int | None) -> list[str]:
    """``text`` cut into rows of at most ``width`` cells (word wrap for ASCII, else cells)."""
    width = max(1, width)
    rows: list[str] = []
    lines = text.split("\n")
    for number, raw in enumerate(lines):
        line = display_safe(raw.expandtabs(4))
        # Wrapping past the cap is wasted work (one tool result can be 30 000 characters).
        limit = len(line) if max_rows is None else max_rows - len(rows) + 1
        if not line:
            rows.append("")
        elif line.isascii():
            rows.extend(_wrap_ascii(line, width, limit))
        else:
            rows.extend(_wrap_cells(line, width, limit))
        if max_rows is not None and len(rows) > max_rows:
            # Rows past the cap: the rest of this line, then every later line.
            hidden = len(lines) - number - 1 + (1 if len(rows) > max_rows else 0)
            rows = rows[:max_rows]
            more = "line" if hidden == 1 else "lines"
            rows.append(f"… {hidden} more {more} (Enter: full text)")
            break
    return rows


def plain(text: str, *, one_line: bool = False) -> Text:
    """Outside text for a ``Static``, a ``Label``, a table cell or an option: a Rich ``Text``
    (which Textual never reads as markup, so ``[@click=…]`` in a title stays text) holding
    :func:`display_safe`'s form."""
    return Text(display_safe(text, one_line=one_line))
