"""aider: its ``.aider.chat.history.md`` (each ``# aider chat started at`` block a session).

Read by :mod:`engine.recordings.aider`; not followed; no home folder (the history lives in
each project). Window: the model's in genai-prices, else ``watch_context_window``. aider does
not compact a session's context on its own in a way its history records: no trigger.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from engine.recordings import aider
from engine.recordings.agents.protocol import (
    ContextRules,
    Head,
    Recorded,
    Standalone,
    window_without_trigger,
)
from engine.recordings.base import ImportError_, Known, Parsed
from engine.recordings.writer import check
from engine.settings.config import Settings


class Aider(Standalone):
    """aider chat histories."""

    name = aider.FORMAT
    label = "aider"

    def looks_like(self, path: Path | None, head: Head) -> int | None:
        if head.starts_as_json or not aider.looks_like(head.raw):
            return None
        return 0

    def parse(self, path: Path, text: str, known: Known | None = None) -> list[Parsed]:
        sessions = aider.parse_all(text, path.name)
        for parsed in sessions:
            problems = check(parsed)
            if problems:
                raise ImportError_(problems, parsed.fmt)
        return sessions

    def context_rules(
        self, recorded: Recorded, settings: Settings, env: Mapping[str, str]
    ) -> ContextRules:
        return window_without_trigger(self.label, recorded, settings)


AGENT = Aider()
