"""A history that stays: Claude Code's own clean-up, and importing each session as it ends.

Claude Code deletes its session files older than ``cleanupPeriodDays`` (default 30) at start-up
(``settings.json`` in ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``). ctxscope keeps what it
imported whatever happens to the file (a session whose file is gone is marked,
``Session.source_gone_at``); :func:`cleanup_warning` says so when the setting is at its default,
and how to keep everything.

:func:`hook_payload` reads what Claude Code passes to a ``SessionEnd`` hook on stdin
(``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``, ``reason``: code.claude.com
/docs/en/hooks), for ``ctxscope import --hook``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

CLEANUP_DEFAULT_DAYS = 30
"""Claude Code's ``cleanupPeriodDays`` when its settings do not set it."""
HOOK_DOC = "docs/importing.md#a-history-that-stays"


def claude_settings(environ: Mapping[str, str] | None = None) -> Path:
    """Claude Code's user settings file: ``$CLAUDE_CONFIG_DIR/settings.json``, else
    ``~/.claude/settings.json``."""
    env = os.environ if environ is None else environ
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    return Path(env.get("HOME") or Path.home()) / ".claude" / "settings.json"


def cleanup_days(environ: Mapping[str, str] | None = None) -> tuple[int | None, Path]:
    """``cleanupPeriodDays`` as the user's settings set it (None: not set, or the file is
    missing or unreadable), and the file."""
    path = claude_settings(environ)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, path
    value = data.get("cleanupPeriodDays") if isinstance(data, dict) else None
    return (value if isinstance(value, int) and not isinstance(value, bool) else None), path


def cleanup_warning(environ: Mapping[str, str] | None = None) -> str | None:
    """The warning ``import`` gives while Claude Code deletes sessions after its default 30
    days (None when the setting is something else)."""
    days, path = cleanup_days(environ)
    if days is not None and days != CLEANUP_DEFAULT_DAYS:
        return None
    how = "set to 30" if days is not None else "not set: its default"
    return (
        f"Claude Code deletes its session files after {CLEANUP_DEFAULT_DAYS} days "
        f"(cleanupPeriodDays in {path}, {how}). ctxscope keeps what it imported even once the "
        "file is gone; to keep everything, run `ctxscope import` within every 30 days, or "
        "have each session imported as it ends with a SessionEnd hook that runs "
        f"`ctxscope import --hook` ({HOOK_DOC}), or raise cleanupPeriodDays (e.g. 3650)"
    )


class HookError(ValueError):
    """What a hook's input lacks, in words."""


@dataclass(frozen=True)
class HookInput:
    """What ``import --hook`` uses of a hook's input."""

    transcript: Path
    session_id: str
    cwd: str
    event: str
    reason: str


def hook_payload(text: str) -> HookInput:
    """The hook's stdin (a JSON object); :class:`HookError` when it names no transcript."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise HookError(f"the hook's input is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise HookError("the hook's input is not a JSON object")
    transcript = data.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        raise HookError(
            "the hook's input has no transcript_path (is this Claude Code's SessionEnd hook?)"
        )
    return HookInput(
        transcript=Path(transcript).expanduser(),
        session_id=str(data.get("session_id") or ""),
        cwd=str(data.get("cwd") or ""),
        event=str(data.get("hook_event_name") or ""),
        reason=str(data.get("reason") or ""),
    )
