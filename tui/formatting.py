"""Small text helpers shared by the panes: token figures, relative times, labels.

Nothing here touches Textual; each helper is a pure function so that snapshots stay stable
(times are rendered relative to an injected clock, never the wall clock directly).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from engine.compaction.ledger import fidelity_line
from engine.llm.base import OFFLINE_NAME
from engine.models import Compaction, Summary
from engine.terminal_text import cut

Clock = Callable[[], datetime]
"""Returns "now"; the app takes one so that tests can freeze what relative times say."""

_REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.S)


def key_label(key: str) -> str:
    """``f2`` → ``F2``, ``ctrl+n`` → ``Ctrl+N``, ``escape`` → ``Esc`` (the keys list, the
    command palette)."""
    if key == "escape":
        return "Esc"
    if key.startswith("alt+"):
        return "Alt+" + key.removeprefix("alt+").upper()
    if key.startswith("ctrl+"):
        return "Ctrl+" + key.removeprefix("ctrl+").upper()
    return key.upper()


def wall_clock() -> datetime:
    """The real current time (UTC); the default :data:`Clock`."""
    return datetime.now(UTC)


def tokens(n: int | None) -> str:
    """``12,345`` (or ``–`` when unknown)."""
    return "–" if n is None else f"{n:,}"


def short_tokens(n: int | None) -> str:
    """``950``, ``12.3k``, ``1.2M``: for tight places such as the gauge legend."""
    if n is None:
        return "–"
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def percent(part: int, whole: int) -> str:
    """``42%`` of ``whole`` (``0%`` when ``whole`` is zero)."""
    return f"{(100 * part / whole) if whole else 0:.0f}%"


def relative_time(when: datetime, now: datetime) -> str:
    """``just now``, ``5 min ago``, ``3 h ago``, ``2 d ago``, else the date."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    seconds = (now - when).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86_400:
        return f"{int(seconds // 3600)} h ago"
    if seconds < 30 * 86_400:
        return f"{int(seconds // 86_400)} d ago"
    return when.strftime("%Y-%m-%d")


def workspace_label(path: str | Path) -> str:
    """A workspace as people read it: ``~/code/app`` under the home folder, else the path."""
    text = str(path)
    try:
        home = str(Path.home())
    except RuntimeError:
        return text
    if text == home:
        return "~"
    if text.startswith(home + "/"):
        return "~" + text[len(home) :]
    return text


def provider_label(name: str, model: str) -> str:
    """``offline (rule-based, no LLM)`` spelled out, or ``anthropic · claude-…``."""
    if name == OFFLINE_NAME or name.startswith("offline"):
        return name.replace("offline", "OFFLINE", 1)
    return f"{name} · {model}" if model else name


def strip_reminders(text: str) -> str:
    """A user message as the user typed it: the @file ``<system-reminder>`` blocks removed."""
    return _REMINDER.sub("\n", text).strip()


def one_line(text: str, limit: int) -> str:
    """``text`` collapsed to one line, control characters shown escaped, cut to ``limit``
    characters with an ellipsis (after escaping: never inside an escape sequence)."""
    return cut(" ".join(text.split()), limit)


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 round``, ``2 rounds`` (``nouns`` when the plural is not ``noun + s``)."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {nouns or noun + 's'}"


def round_span(first: int | None, last: int | None, short: bool = False) -> str:
    """``round 14`` / ``rounds 14–15`` (``r14`` / ``r14–15`` when ``short``)."""
    if short:
        return f"r{first}" if first == last else f"r{first}–{last}"
    return f"round {first}" if first == last else f"rounds {first}–{last}"


def compaction_result(comp: Compaction, summary: Summary | None) -> str:
    """One line for the banner and the chat: tokens before → after, rounds archived."""
    recorded = "recorded " if comp.stats.get("recorded") else ""
    text = (
        f"✂ {recorded}{comp.trigger} compaction: {comp.tokens_before:,} → "
        f"{comp.tokens_after:,} tokens"
        f" ({percent(comp.tokens_after, comp.tokens_before)})"
        f" · {plural(comp.rounds_compacted, 'round')},"
        f" {plural(comp.messages_compacted, 'message')} archived"
    )
    if summary is not None:
        text += f" · new summary of {round_span(summary.first_round, summary.last_round)}"
        if summary.fallback:
            text += " (extractive fallback)"
    if comp.fidelity is not None:
        text += f" · keeps {fidelity_line(comp.fidelity)}"
    return text


LOCAL_COMMAND_MARKS = (
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<command-name>",
    "Caveat: The messages below were generated by the user while running local commands",
)
"""How Claude Code records a command the user ran themselves (``!cmd``, ``/cmd``)."""


def is_local_command(text: str) -> bool:
    """A user message of an imported Claude Code session that records a local command (not a
    question to the agent: its round has no answer, and was not interrupted)."""
    return text.lstrip().startswith(LOCAL_COMMAND_MARKS)
