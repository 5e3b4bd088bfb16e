"""The figures of ``ctxscope report``: tokens and dollars by kind, priced per model, day and
long-context tier; and ``--since``."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from engine.figures.spend import TOKEN_KINDS, Prices, priced, prices
from engine.figures.spend import Spend as Figures

__all__ = ["TOKEN_KINDS", "Figures", "Prices", "SinceError", "parse_since", "priced", "prices"]


class SinceError(ValueError):
    """``--since`` is not a date, a time or a number of days."""


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``2026-02-01``, ``20260201``, an ISO time, or ``7d`` (days before now), as UTC."""
    text = text.strip()
    days = re.fullmatch(r"(\d+)d", text)
    if days:
        try:
            return (now or datetime.now(UTC)) - timedelta(days=int(days.group(1)))
        except OverflowError:  # before year 1 (timedelta itself stops at 999,999,999 days)
            raise SinceError(
                f"--since {text}: that many days ago is before the calendar begins; give "
                "fewer days or a date"
            ) from None
    if re.fullmatch(r"\d{8}", text):
        text = f"{text[:4]}-{text[4:6]}-{text[6:]}"
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SinceError(
            f"--since must be a date (2026-02-01 or 20260201), a time or days (7d), got {text!r}"
        ) from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
