"""The request a provider sends: the Messages API parameters as the builder makes them.

Here, below the providers, so that the wire checks (:mod:`engine.messages.wire_check`) and the
providers (:mod:`engine.llm`) share one definition without the wire importing a provider.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

MAX_CACHE_BREAKPOINTS = 4
"""The Messages API refuses a request with more ``cache_control`` blocks than this."""


class ProviderRequest(BaseModel):
    """Anthropic Messages API parameters, as built by ``engine.context.builder``."""

    system: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    max_tokens: int = 8192
