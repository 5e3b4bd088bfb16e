"""Claude Managed Agents: an event stream (``agent.message``, ``span.model_request_end``…).

Read by :mod:`engine.recordings.managed_agents`: a file whose first known record is a
Managed Agents event (``managed_agents.is_event``) is an event stream, read through the
Anthropic JSON-lines reader, which hands the events to it. Not followed; no home folder
(the events live on the platform). Window: the model's in genai-prices, else
``watch_context_window``; the platform compacts on its own
(``agent.thread_context_compacted``) at a point it does not record: no trigger.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from engine.recordings import anthropic_jsonl, managed_agents
from engine.recordings.agents.protocol import (
    ContextRules,
    Head,
    Recorded,
    Standalone,
    checked,
    window_without_trigger,
)
from engine.recordings.base import Known, Parsed
from engine.settings.config import Settings


class ManagedAgents(Standalone):
    """Claude Managed Agents event streams."""

    name = managed_agents.FORMAT
    label = "Claude Managed Agents"

    def looks_like(self, path: Path | None, head: Head) -> int | None:
        return next((n for n, r in enumerate(head.records) if managed_agents.is_event(r)), None)

    def parse(self, path: Path, text: str, known: Known | None = None) -> list[Parsed]:
        parsed = anthropic_jsonl.parse(text, path.name)
        return checked(parsed)

    def context_rules(
        self, recorded: Recorded, settings: Settings, env: Mapping[str, str]
    ) -> ContextRules:
        return window_without_trigger(self.label, recorded, settings)


AGENT = ManagedAgents()
