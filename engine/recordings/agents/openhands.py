"""OpenHands: its event lists (actions and observations linked by ``cause``).

Read by :mod:`engine.recordings.openhands`; not followed; no home folder ctxscope knows.
Window: the model's in genai-prices, else ``watch_context_window``. OpenHands' condensers are
configured per run and not recorded in the event list: no trigger.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from engine.recordings import openhands
from engine.recordings.agents.protocol import (
    ContextRules,
    Head,
    Recorded,
    Standalone,
    checked,
    count_surrogates,
    load_document,
    window_without_trigger,
)
from engine.recordings.base import Known, Parsed
from engine.settings.config import Settings


class OpenHands(Standalone):
    """OpenHands event lists."""

    name = openhands.FORMAT
    label = "OpenHands"

    def looks_like(self, path: Path | None, head: Head) -> int | None:
        return 0 if openhands.looks_like(head.whole) else None

    def parse(self, path: Path, text: str, known: Known | None = None) -> list[Parsed]:
        whole, surrogates = load_document(text)
        parsed = count_surrogates(openhands.parse(whole, path.name), surrogates)
        return checked(parsed)

    def context_rules(
        self, recorded: Recorded, settings: Settings, env: Mapping[str, str]
    ) -> ContextRules:
        return window_without_trigger(self.label, recorded, settings)


AGENT = OpenHands()
