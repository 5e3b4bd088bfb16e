"""InputPreprocessor: turns ``@path`` mentions into a system-reminder (seed A7, C3, E4).

A mention only *reminds*: the file's content is never injected, the model must Read it. The
reminder is appended to the user message text itself, not sent as a separate message.

Rules (the seed's, plus the choices the seed leaves open, each pinned by a test):

- pattern ``@([a-zA-Z0-9/._-]+(?:\\.[a-zA-Z0-9]+)?)`` (project-relative paths, no spaces);
- a match whose preceding character is an ASCII letter or digit is not a reference, so
  ``me@example.com`` is ignored. Only ASCII counts as "letter" here, like the pattern itself:
  ``请看@README.md`` (a CJK character right before ``@``) is still a reference;
- trailing dots are sentence punctuation, never part of a path: an extension needs characters
  after its dot, so ``@README.md.`` and ``@notes...`` give ``README.md`` and ``notes``, while
  inner dots stay (``@src/v1.2/file.tar.gz``, ``@.github/x.yml``). Other punctuation
  (``,;:)!?``) is outside the pattern and ends the match by itself;
- a mention must contain a letter or digit (``@-``, ``@...``, ``@/`` are not references);
- order of first appearance, de-duplicated, at most ``settings.atfile_max``; the rest are
  counted as "(and N more…)".

Reminder forms: one mention gives exactly the seed template. Several mentions give one block
with one "The user mentioned @x." line each, the "(and N more…)" line if any were dropped, and
"You MUST read these files with the Read tool, in this order, before answering." (seed C3: the
model reads them one by one, in order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine.settings.config import Settings

MENTION_PATTERN = re.compile(r"@([a-zA-Z0-9/._-]+(?:\.[a-zA-Z0-9]+)?)")
"""The seed's MVP pattern (A7/C3/E4)."""

_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")

REMINDER_OPEN = "<system-reminder>"
REMINDER_CLOSE = "</system-reminder>"
ONE_FILE_INSTRUCTION = "You MUST read this file with the Read tool before answering."
MANY_FILES_INSTRUCTION = (
    "You MUST read these files with the Read tool, in this order, before answering."
)


@dataclass(frozen=True)
class Preprocessed:
    """A user input after @file preprocessing."""

    text: str
    """The user message to send and store: the input with the reminder appended (if any)."""
    original: str
    """The input as typed."""
    mentions: list[str] = field(default_factory=list)
    """The kept mentions (at most ``atfile_max``), in order of appearance, without ``@``."""
    extra: int = 0
    """How many further distinct mentions were dropped."""
    reminder: str = ""
    """The appended ``<system-reminder>`` block alone; empty without mentions."""


def find_mentions(text: str) -> list[str]:
    """Every distinct @file mention of ``text``, in order of first appearance."""
    found: list[str] = []
    seen: set[str] = set()
    for match in MENTION_PATTERN.finditer(text):
        start = match.start()
        if start > 0 and text[start - 1] in _ASCII_ALNUM:
            continue  # an e-mail address or a handle inside a word, not a file
        path = match.group(1).rstrip(".")
        if not any(c in _ASCII_ALNUM for c in path):
            continue
        if path not in seen:
            seen.add(path)
            found.append(path)
    return found


def render_reminder(mentions: list[str], extra: int = 0) -> str:
    """The ``<system-reminder>`` block for ``mentions``; empty when there are none."""
    if not mentions:
        return ""
    lines = [REMINDER_OPEN]
    lines.extend(f"The user mentioned @{path}." for path in mentions)
    if extra:
        lines.append(f"(and {extra} more…)")
    lines.append(ONE_FILE_INSTRUCTION if len(mentions) == 1 else MANY_FILES_INSTRUCTION)
    lines.append(REMINDER_CLOSE)
    return "\n".join(lines)


class InputPreprocessor:
    """Appends the @file system-reminder to a user input (seed D2.3)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def process(self, text: str) -> Preprocessed:
        """Parse the mentions of ``text`` and append their reminder to it.

        Without mentions the text is returned unchanged. The reminder is separated from the
        input by a blank line (trailing whitespace of the input is dropped first).
        """
        found = find_mentions(text)
        if not found:
            return Preprocessed(text=text, original=text)
        limit = self.settings.atfile_max
        kept, extra = found[:limit], max(0, len(found) - limit)
        reminder = render_reminder(kept, extra)
        return Preprocessed(
            text=f"{text.rstrip()}\n\n{reminder}",
            original=text,
            mentions=kept,
            extra=extra,
            reminder=reminder,
        )
