"""Seed 003 (``message-window``): a message-count window and a JSONL execution log.

- checked after a run: when history holds *more* than ``max_messages`` (60) messages;
- everything before the last ``keep_last`` (30) messages becomes **one assistant message**
  (an earlier one included: it is one of the messages), the kept part aligned back so that no
  tool result loses its call (so at least 30 are kept);
- after every run an entry ``{requestId, userPreview, outputPreview, toolCalls}`` is appended
  to the session's ``agent-context.jsonl``; past ``log_window`` (200) entries, the older ones are
  merged into one summary entry and the last ``log_window - 1`` kept
  (:mod:`engine.compaction.execution_log`).
"""

from __future__ import annotations

from engine.compaction.policy import (
    CheckPoint,
    CompactionPolicy,
    Lifecycle,
    Measure,
    PolicyView,
    cut_before,
)
from engine.compaction.strategies.formats import MESSAGE_WINDOW_SPEC
from engine.models import Message, Placement


class MessageWindowStrategy(CompactionPolicy):
    name = "message-window"
    seed = "003_fdb0470445deb778.txt"
    checks = frozenset({CheckPoint.AFTER_ROUND})
    placement = Placement.ASSISTANT_MESSAGE
    lifecycle = Lifecycle.RECOMPACT
    summary = MESSAGE_WINDOW_SPEC
    keeps_execution_log = True

    def message_count(self, view: PolicyView) -> int:
        """Messages in the seed's in-memory history: each summary message counts as one."""
        return len(view.history.summaries) + len(view.history.messages)

    def measure(self, view: PolicyView) -> Measure:
        return Measure(
            what="messages in history",
            value=self.message_count(view),
            threshold=self.settings.strategies.message_window.max_messages,
            comparison=">",
            source="count",
        )

    def select(self, view: PolicyView, *, emergency: bool = False) -> list[Message]:
        if emergency:
            return self.emergency_cut(view)
        keep_last = self.settings.strategies.message_window.keep_last
        messages = view.history.messages
        # An earlier summary message is older than every history message: it goes too.
        return cut_before(messages, max(0, len(messages) - keep_last), view.protected())
