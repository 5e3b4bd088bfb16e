"""Gemini CLI: its saved chats, and its window and compression threshold.

Files: ``~/.gemini/tmp/<project hash>/chats/session-*.json``, read by
:mod:`engine.recordings.gemini`; Gemini API ``{role, parts}`` messages (a ``/chat save``
checkpoint) are recognised and refused with a line saying what to import instead. Not
followed (a chat is one JSON document, written again whole).

**Window**: the model's in genai-prices, else Gemini CLI's own default token limit
(``tokenLimits.ts``: ``DEFAULT_TOKEN_LIMIT`` 1,048,576, the Gemini 2.5 models' window).
**Compression point**: ``model.compressionThreshold`` from ``~/.gemini/settings.json`` when
set, else Gemini CLI's ``DEFAULT_COMPRESSION_TOKEN_THRESHOLD`` (0.5 of the window,
``chatCompressionService.ts``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.figures.prices import listed_context_window
from engine.recordings import gemini
from engine.recordings.agents.protocol import (
    ContextRules,
    Folder,
    Head,
    Recorded,
    Standalone,
    checked,
    count_surrogates,
    home_of,
    load_document,
)
from engine.recordings.base import Known, Parsed
from engine.settings.config import Settings

DEFAULT_TOKEN_LIMIT = 1_048_576
"""Gemini CLI's ``DEFAULT_TOKEN_LIMIT`` (``packages/core/src/core/tokenLimits.ts``)."""
COMPRESSION_THRESHOLD = 0.5
"""Gemini CLI's ``DEFAULT_COMPRESSION_TOKEN_THRESHOLD`` (``chatCompressionService.ts``;
``model.compressionThreshold`` in its settings)."""


class GeminiCli(Standalone):
    """Gemini CLI saved chats (and the API messages it is refused for)."""

    name = gemini.FORMAT
    label = "Gemini CLI"

    def looks_like(self, path: Path | None, head: Head) -> int | None:
        whole = head.whole
        if gemini.looks_like(whole):
            return 0
        if isinstance(whole, list) and whole and gemini.looks_like_contents(whole[0]):
            return 0
        return next((n for n, r in enumerate(head.records) if gemini.looks_like_contents(r)), None)

    def parse(self, path: Path, text: str, known: Known | None = None) -> list[Parsed]:
        try:
            whole, surrogates = load_document(text)
        except (json.JSONDecodeError, RecursionError):
            whole, surrogates = None, 0
        if not gemini.looks_like(whole):
            raise gemini.refuse_contents()
        parsed = count_surrogates(gemini.parse(whole, path.name), surrogates)
        return checked(parsed)

    def home_folders(self, env: Mapping[str, str], settings: Settings) -> list[Folder]:
        tmp = home_of(env) / ".gemini" / "tmp"
        if not tmp.is_dir():
            return []
        return [Folder(p, self.name) for p in sorted(tmp.glob("*/chats"))]

    def context_rules(
        self, recorded: Recorded, settings: Settings, env: Mapping[str, str]
    ) -> ContextRules:
        listed = listed_context_window(recorded.model)
        if listed:
            window, window_source = listed, f"{recorded.model}'s window in genai-prices"
        else:
            window, window_source = (
                DEFAULT_TOKEN_LIMIT,
                ("Gemini CLI's default token limit (tokenLimits.ts DEFAULT_TOKEN_LIMIT)"),
            )
        path = home_of(env) / ".gemini" / "settings.json"
        threshold = _threshold(_settings(path))
        if threshold is not None:
            source = f"model.compressionThreshold {threshold} in {path}"
        else:
            threshold = COMPRESSION_THRESHOLD
            source = "Gemini CLI's DEFAULT_COMPRESSION_TOKEN_THRESHOLD"
        return ContextRules(
            window,
            int(threshold * window),
            window_source,
            f"{threshold:.0%} of the window ({source})",
        )


def _settings(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _threshold(user: dict[str, Any]) -> float | None:
    model = user.get("model")
    value = model.get("compressionThreshold") if isinstance(model, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    return None


AGENT = GeminiCli()
