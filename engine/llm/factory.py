"""Choosing the provider: Anthropic when there is a key, the offline rules otherwise.

The Anthropic SDK takes about a second to import (most of a command's start-up on a loaded
machine), so the Anthropic provider is built — and the SDK imported — only when it is first
asked to send: offline runs, listings, and the commands that build an agent only to look at
its request (``ctxscope context``, ``compact --dry-run``, ``pin``) never pay for it, with a key
or without (``bench/bench_startup.py`` measures this; ``tests/llm/test_provider_factory.py``
checks it). The workbench builds it at once (:func:`ready`), in the worker that opens a
session, so the first message does not wait for the import.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

from engine.llm.base import Provider, ProviderRequest, ProviderResponse, StreamEvent
from engine.llm.offline import OfflineProvider
from engine.settings.config import Settings
from tools.secrets import credential

OFFLINE_MODEL = "offline"
"""The model name that selects the offline provider even when a key is set."""


def make_provider(
    settings: Settings, model: str | None = None, api_key: str | None = None
) -> Provider:
    """The provider for ``model`` (default ``settings.model``).

    ``offline``, or no API key (``api_key``, or ``ANTHROPIC_API_KEY`` as the console script
    handed it over, or in the environment), gives the :class:`OfflineProvider`; anything else
    the Anthropic provider, built at its first call (:class:`DeferredAnthropic`).
    """
    chosen = model or settings.model
    key = api_key or credential("ANTHROPIC_API_KEY")
    if chosen.strip().lower() == OFFLINE_MODEL or not key:
        return OfflineProvider(settings)
    return DeferredAnthropic(settings, key, chosen)


def ready(provider: Provider) -> Provider:
    """``provider`` with nothing left to load: a deferred Anthropic provider is built now."""
    if isinstance(provider, DeferredAnthropic):
        provider.built()
    return provider


class DeferredAnthropic:
    """The Anthropic provider (:class:`engine.llm.anthropic.AnthropicProvider`), built — the
    SDK imported — when it is first asked to send. Its name, model and kind are known before."""

    name = "anthropic"  # AnthropicProvider.name
    is_model = True

    def __init__(self, settings: Settings, api_key: str, model: str) -> None:
        self.settings = settings
        self.model = model
        self._key = api_key
        self._lock = threading.Lock()

    def complete(
        self,
        request: ProviderRequest,
        on_event: Callable[[StreamEvent], None],
        cancel: threading.Event | None = None,
    ) -> ProviderResponse:
        return self.built().complete(request, on_event, cancel)

    def ask_text(
        self,
        system: str,
        text: str,
        timeout: float,
        *,
        model: str | None = None,
        retries: int | None = None,
    ) -> str:
        return self.built().ask_text(system, text, timeout, model=model, retries=retries)

    def built(self) -> Provider:
        """The real provider (built once; a summary thread and the loop may ask together)."""
        with self._lock:
            return self._provider

    @functools.cached_property
    def _provider(self) -> Provider:
        from engine.llm.anthropic import AnthropicProvider

        return AnthropicProvider(self.settings, api_key=self._key, model=self.model)
