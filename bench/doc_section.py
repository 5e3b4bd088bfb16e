"""Rewriting a benchmark's figures in its section of a doc, between two marker comments."""

from __future__ import annotations

from pathlib import Path


def write_section(doc_path: Path, begin: str, end: str, text: str) -> None:
    """Replace what stands between ``begin`` and ``end`` in ``doc_path`` with ``text``."""
    doc = doc_path.read_text(encoding="utf-8")
    start, stop = doc.index(begin) + len(begin), doc.index(end)
    doc_path.write_text(doc[:start] + "\n" + text + "\n" + doc[stop:], encoding="utf-8")
