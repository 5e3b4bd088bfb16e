"""Seed 001 (``reset-hint``, mini-claude-code): summarise everything, clear, hint the system.

- checked after a round ends (not per step, and the round is not re-run);
- fires when the last API call's prompt tokens are *over* ``threshold_ratio × context_limit``
  (``promptTokens > 128 000 × 0.8``: 102 401 fires, 102 400 does not);
- the whole history is summarised into ``<completed> <remaining> <current_state> <notes>`` by a
  separate call (``COMPRESS_SYSTEM``, history as ``[role]\\ncontent`` joined by ``---``);
- history is cleared and the summary goes into the system prompt in the seed's
  ``buildCompressionHint`` wrapper, *replacing* any earlier hint.
"""

from __future__ import annotations

from engine.compaction.policy import (
    CheckPoint,
    CompactionPolicy,
    Lifecycle,
    Measure,
    PolicyView,
    ResultForm,
    cut_before,
)
from engine.compaction.strategies.formats import RESET_HINT_SPEC
from engine.models import Message, Placement


class ResetHintStrategy(CompactionPolicy):
    name = "reset-hint"
    seed = "001_bd0e20770b3e665a.txt"
    checks = frozenset({CheckPoint.AFTER_ROUND})
    placement = Placement.SYSTEM_HINT
    lifecycle = Lifecycle.REPLACE
    summary = RESET_HINT_SPEC
    uses_api_usage = True
    tool_results = ResultForm.AS_RETURNED

    def measure(self, view: PolicyView) -> Measure:
        own = self.settings.strategies.reset_hint
        usage = view.last_usage if view.last_usage is not None else view.request_tokens
        source = view.last_usage_source if view.last_usage is not None else "local"
        api = source != "local"
        return Measure(
            what="last API prompt tokens" if api else "prompt tokens (local count)",
            value=usage,
            threshold=own.context_limit * own.threshold_ratio,
            comparison=">",
            source="api" if api else "local",
        )

    def select(self, view: PolicyView, *, emergency: bool = False) -> list[Message]:
        """Everything (``history = []``), but never the round in progress' own input."""
        messages = view.history.messages
        return cut_before(messages, len(messages), view.protected())
