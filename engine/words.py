"""How a count reads, on every surface: ``1 round``, ``2 rounds``, ``1,204 usage records``."""

from __future__ import annotations


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 round``, ``2 rounds`` (``nouns`` when the plural is not ``noun + s``)."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {nouns or noun + 's'}"
