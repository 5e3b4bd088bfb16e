"""Whose words a user message holds: the user's own, or the agent's harness speaking in the
user's turn.

An agent's harness writes into the user's side of the conversation: Claude Code sends a
background task's ``<task-notification>``, ``[Request interrupted by user for tool use]`` when
the user pressed Esc, a slash command as ``<command-name>`` / ``<command-args>`` wrappers and
its output as ``<local-command-stdout>``, reminders as ``<system-reminder>``. An importer
marks each such message in ``meta.origin["input"]`` (:data:`INPUT_KEY`) with one of
:data:`HARNESS_KINDS` or ``command``, and an input the user typed while the agent worked
(delivered at the next tool boundary) with ``queued``; the workbench and exports label them,
and the artifact ledger counts as requests only the user's own (:func:`is_users_own`).
"""

from __future__ import annotations

import re

from engine.models import Message

INPUT_KEY = "input"
"""The key of ``meta.origin`` that says what kind of input a user message is."""
QUEUED = "queued"
"""Typed by the user while the agent worked; delivered where the message stands."""
COMMAND = "command"
"""A slash command the user ran (its name and arguments) or its local output."""
HARNESS_KINDS = ("task-notification", "interrupt", "reminder", "harness")
"""Written by the harness, not by the user: a background task's notice, the interruption
mark, a reminder, a record the agent flags as its own (Claude Code's ``isMeta``)."""
HARNESS_LABELS = {
    "task-notification": "Background task",
    "interrupt": "Interruption",
    "reminder": "Reminder",
    "harness": "Harness",
}
"""How a screen or an export names each harness kind (never "you" / "User")."""

_INTERRUPT = re.compile(r"^\[Request interrupted by user[^\]]*\]$")
_REMINDERS = re.compile(r"^(?:\s*<system-reminder>.*?</system-reminder>)+\s*$", re.S)
_COMMAND_TAGS = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
)


def input_kind(text: str) -> str | None:
    """What kind of harness input ``text`` is (one of :data:`HARNESS_KINDS` or ``command``),
    None for the user's own words."""
    stripped = text.strip()
    if _INTERRUPT.match(stripped):
        return "interrupt"
    if stripped.startswith("<task-notification>"):
        return "task-notification"
    if stripped.startswith(_COMMAND_TAGS):
        return COMMAND
    if _REMINDERS.match(stripped):
        return "reminder"
    return None


def kind_of(msg: Message) -> str | None:
    """The kind of input a stored user message is: as its importer marked it, else as its
    text shows (a session stored before the mark existed)."""
    origin = msg.meta.origin or {}
    marked = origin.get(INPUT_KEY)
    if isinstance(marked, str):
        return marked
    return input_kind(msg.content)


def is_users_own(msg: Message) -> bool:
    """Whether a user message holds the user's own words (typed, queued, or a command the user
    ran), not the harness's, nor ctxscope's own (the round an importer opens after a
    compaction, a summary that starts a continued session)."""
    origin = msg.meta.origin or {}
    if origin.get("synthetic") or origin.get("compact_summary"):
        return False
    return kind_of(msg) not in HARNESS_KINDS
