"""Choosing the provider: Anthropic when there is a key, the offline rules otherwise.

The Anthropic SDK takes about a second to import (most of a command's start-up on a loaded
machine), so it is imported only when an Anthropic provider is actually built: offline runs,
listings and ``ctxscope context`` never pay for it (``bench/bench_startup.py`` measures this).
"""

from __future__ import annotations

from engine.config import Settings
from engine.llm.base import Provider
from engine.llm.offline import OfflineProvider
from tools.secrets import credential

OFFLINE_MODEL = "offline"
"""The model name that selects the offline provider even when a key is set."""


def make_provider(
    settings: Settings, model: str | None = None, api_key: str | None = None
) -> Provider:
    """The provider for ``model`` (default ``settings.model``).

    ``offline``, or no API key (``api_key``, or ``ANTHROPIC_API_KEY`` as the console script
    handed it over, or in the environment), gives the
    :class:`OfflineProvider`; anything else the :class:`AnthropicProvider`.
    """
    chosen = model or settings.model
    key = api_key or credential("ANTHROPIC_API_KEY")
    if chosen.strip().lower() == OFFLINE_MODEL or not key:
        return OfflineProvider(settings)
    from engine.llm.anthropic import AnthropicProvider

    return AnthropicProvider(settings, api_key=key, model=chosen)
