"""Unified diffs and changed line ranges for Edit, MultiEdit and Write.

The common head and tail of the two versions are trimmed before ``difflib`` looks at the
rest: a one-line edit of a 20 000-line file stays one small hunk and costs milliseconds, even
in a file of repeated lines where ``difflib``'s junk heuristic alone would produce a huge diff.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

CONTEXT_LINES = 3
"""Unchanged lines shown around each change, as ``diff -u`` does."""

Opcode = tuple[str, int, int, int, int]


@dataclass(frozen=True)
class Change:
    """The result of comparing two versions of a file."""

    diff: str
    """The unified diff (empty when nothing changed)."""
    ranges: list[str]
    """Changed places in the new file: ``L10-12 (+3 -2)``, ``after L40 (-5)``."""
    added: int
    removed: int

    @property
    def diff_lines(self) -> int:
        return self.diff.count("\n")


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept, as ``difflib`` wants them."""
    return text.splitlines(keepends=True) if text else []


def opcodes(old: list[str], new: list[str]) -> list[Opcode]:
    """``SequenceMatcher`` opcodes of ``old`` → ``new``, computed on the differing middle."""
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    codes: list[Opcode] = []
    if head:
        codes.append(("equal", 0, head, 0, head))
    mid_old, mid_new = old[head : len(old) - tail], new[head : len(new) - tail]
    if mid_old or mid_new:
        matcher = difflib.SequenceMatcher(None, mid_old, mid_new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            codes.append((tag, i1 + head, i2 + head, j1 + head, j2 + head))
    if tail:
        codes.append(("equal", len(old) - tail, len(old), len(new) - tail, len(new)))
    return codes


def _groups(codes: list[Opcode], n: int) -> list[list[Opcode]]:
    """Hunks: changes with up to ``n`` lines of context (``get_grouped_opcodes`` logic)."""
    if not codes or all(tag == "equal" for tag, *_ in codes):
        return []
    codes = list(codes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = (tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2)
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = (tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n))
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * n:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _range(start: int, stop: int) -> str:
    length = stop - start
    beginning = start + 1
    if length == 1:
        return str(beginning)
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def _line(prefix: str, line: str) -> str:
    return prefix + (line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")


def compare(old_text: str, new_text: str, name: str) -> Change:
    """The unified diff and changed ranges of ``old_text`` → ``new_text`` for file ``name``."""
    old, new = split_lines(old_text), split_lines(new_text)
    codes = opcodes(old, new)
    out: list[str] = []
    for group in _groups(codes, CONTEXT_LINES):
        if not out:
            out.append(f"--- a/{name}\n+++ b/{name}\n")
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(_line(" ", line) for line in old[i1:i2])
                continue
            out.extend(_line("-", line) for line in old[i1:i2])
            out.extend(_line("+", line) for line in new[j1:j2])
    ranges: list[str] = []
    added = removed = 0
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal":
            continue
        plus, minus = j2 - j1, i2 - i1
        added += plus
        removed += minus
        counts = " ".join(part for part in (f"+{plus}" * bool(plus), f"-{minus}" * bool(minus)))
        counts = counts.strip()
        if plus:
            where = f"L{j1 + 1}" if plus == 1 else f"L{j1 + 1}-{j2}"
        else:
            where = f"after L{j1}" if j1 else "at start"
        ranges.append(f"{where} ({counts})")
    return Change(diff="".join(out), ranges=ranges, added=added, removed=removed)
