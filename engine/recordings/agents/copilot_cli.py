"""GitHub Copilot CLI: its sessions' event files, read and followed.

Files: ``~/.copilot/session-state/<session id>/events.jsonl`` (``$COPILOT_HOME`` for
``~/.copilot`` where set), read by :mod:`engine.recordings.copilot_cli` and followed with the
same parse. The file records no input tokens: each request's input is ctxscope's estimate,
labelled so (:data:`engine.recordings.copilot_cli.NO_INPUT`).

**Window**: the model's in genai-prices, else ``watch_context_window`` named as the default.
**Auto-compact point**: Copilot CLI compacts on its own (``session.compaction_start``) at a
point it does not document: none is claimed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.recordings import copilot_cli
from engine.recordings.agents.protocol import (
    ContextRules,
    Folder,
    Head,
    Recorded,
    TailParser,
    checked,
    home_of,
    window_without_trigger,
)
from engine.recordings.base import JsonLines, Known, NotRead, Parsed
from engine.recordings.writer import check
from engine.settings.config import Settings


class CopilotCli:
    """GitHub Copilot CLI ``events.jsonl`` files."""

    name = copilot_cli.FORMAT
    label = "Copilot CLI"
    records_times = True
    follow_glob: str | None = "*/events.jsonl"
    """``session-state/<session id>/events.jsonl``."""

    def looks_like(self, path: Path | None, head: Head) -> int | None:
        return next((n for n, r in enumerate(head.records) if copilot_cli.looks_like(r)), None)

    def parse(self, path: Path, text: str, known: Known | None = None) -> list[Parsed]:
        parsed = copilot_cli.parse(text, path.name, known)
        return checked(parsed)

    def tail_parser(self, path: Path) -> TailParser | None:
        return CopilotTail(path.name)

    def home_folders(self, env: Mapping[str, str], settings: Settings) -> list[Folder]:
        home = env.get("COPILOT_HOME")
        base = Path(home) if home else home_of(env) / ".copilot"
        return [Folder(base / "session-state", self.name)]

    def companions(self, path: Path) -> list[Path]:
        return []

    def is_companion(self, relative: Path) -> bool:
        return False

    def orphaned(self, path: Path) -> bool:
        return False

    def context_rules(
        self, recorded: Recorded, settings: Settings, env: Mapping[str, str]
    ) -> ContextRules:
        return window_without_trigger(self.label, recorded, settings)


class CopilotTail:
    """A followed ``events.jsonl``: its records so far through the importer's parse."""

    def __init__(self, name: str) -> None:
        self.name = name

    def parse(
        self,
        records: list[tuple[int, dict[str, Any]]],
        lines: int,
        skipped: Counter[str],
        warnings: list[str],
        not_read: NotRead,
    ) -> Parsed:
        reader = JsonLines.holding(lines, skipped, warnings, not_read)
        return copilot_cli.parse_records(list(records), reader, self.name)

    def check(self, parsed: Parsed) -> list[str]:
        return check(parsed)


AGENT = CopilotCli()
