"""Glob patterns as regular expressions, with the ``**`` and ``{a,b}`` of ripgrep and git.

One translator serves the Glob tool, Grep's ``glob`` filter and the ``.gitignore`` matcher:
``*`` and ``?`` never cross ``/``; ``**`` as a whole segment matches any number of
directories (including none); ``[...]`` is a character class (``[!...]`` negated); braces
``{a,b}`` are alternatives (not in ``.gitignore``, where git has none).
"""

from __future__ import annotations

import re
from functools import lru_cache


def glob_to_regex(pattern: str, *, braces: bool = True) -> str:
    """The regex source that matches a whole relative POSIX path against ``pattern``."""
    out: list[str] = []
    i, n = 0, len(pattern)
    depth = 0  # open braces
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                j = i + 2
                if at_start and j < n and pattern[j] == "/":
                    out.append("(?:.*/)?")
                    i = j + 1
                    continue
                if at_start and j == n:
                    out.append(".*")
                    i = j
                    continue
                out.append("[^/]*")
                i = j
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = _class_end(pattern, i)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        elif braces and c == "{":
            depth += 1
            out.append("(?:")
        elif braces and c == "}" and depth:
            depth -= 1
            out.append(")")
        elif braces and c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    out.extend(")" * depth)
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start``, or -1."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "!":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern):
        if pattern[i] == "]":
            return i
        i += 1
    return -1


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """A compiled full-match regex for ``pattern`` (braces on)."""
    return re.compile(glob_to_regex(pattern), re.DOTALL)


def literal_prefix(pattern: str) -> str:
    """The leading directories of ``pattern`` that hold no wildcard (``src/app`` of
    ``src/app/**/*.py``), so a walk can start there instead of at the root."""
    parts = pattern.split("/")
    fixed: list[str] = []
    for part in parts[:-1]:
        if any(ch in part for ch in "*?[{\\") or part in ("", ".", ".."):
            break
        fixed.append(part)
    return "/".join(fixed)
