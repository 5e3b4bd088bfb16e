"""``ctxscope report``: the report card across every stored session (:mod:`.card`), its figures
and prices (:mod:`.figures`)."""

from engine.report.card import (
    GROUPINGS,
    LOST_MOST,
    CompactionLine,
    Grouping,
    Report,
    SessionLine,
    build_report,
)
from engine.report.figures import TOKEN_KINDS, Figures, SinceError, parse_since

__all__ = [
    "GROUPINGS",
    "LOST_MOST",
    "TOKEN_KINDS",
    "CompactionLine",
    "Figures",
    "Grouping",
    "Report",
    "SessionLine",
    "SinceError",
    "build_report",
    "parse_since",
]
