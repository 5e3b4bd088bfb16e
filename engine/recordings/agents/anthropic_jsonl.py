"""JSON lines of Anthropic Messages API messages (``{"role": …, "content": …}`` a line).

Read by :mod:`engine.recordings.anthropic_jsonl` (which reads a file that is mostly Claude
Managed Agents events as such); not followed; no home folder. Window: the model's in
genai-prices, else ``watch_context_window``; no agent, so no trigger.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from engine.recordings import anthropic_jsonl
from engine.recordings.agents.protocol import (
    ContextRules,
    Head,
    Recorded,
    Standalone,
    checked,
    model_window,
)
from engine.recordings.base import Known, Parsed
from engine.settings.config import Settings


class AnthropicJsonl(Standalone):
    """JSON lines of Anthropic messages."""

    name = anthropic_jsonl.FORMAT
    label = "Anthropic messages"

    def looks_like(self, path: Path | None, head: Head) -> int | None:
        return next(
            (n for n, r in enumerate(head.records) if isinstance(r, dict) and "role" in r), None
        )

    def parse(self, path: Path, text: str, known: Known | None = None) -> list[Parsed]:
        parsed = anthropic_jsonl.parse(text, path.name)
        return checked(parsed)

    def context_rules(
        self, recorded: Recorded, settings: Settings, env: Mapping[str, str]
    ) -> ContextRules:
        window, source = model_window(recorded.model, settings)
        return ContextRules(window, None, source, "a list of messages: no agent, no trigger")


AGENT = AnthropicJsonl()
