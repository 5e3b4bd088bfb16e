"""Seed 004 (``head-middle-tail``, the Context Compact PRD): keep head and tail, summarise the
middle.

- F-002, before every request: compact when the request's local count is *at or over*
  ``threshold_ratio × context_limit`` (``>=``: exactly the threshold fires); never on an empty
  conversation;
- F-003: head = the system prompt (``system`` on the Anthropic wire, never touched); tail = scan
  back from the newest message, whole messages, until the tokens reach
  ``tail_retention_ratio × context_limit`` (the message that crosses it is kept whole); then
  moved back so that no tool result loses its call; middle = the rest, an earlier summary
  included (re-compaction, UC-002);
- F-004/F-007: a separate call writes structured plain text; a failure or an empty answer is
  retried ``max_retries`` times with a doubling wait, then the compaction is skipped and history
  is left untouched;
- F-005: the summary is one **user** message after the head;
- F-006: the raw middle is also written to ``<data dir>/<session>/compact-<ISO8601>-<seq>.json``
  (:mod:`engine.context.history`; a write failure is logged, never blocking);
- F-008: the statistics go into the compaction record.
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
from engine.compaction.strategies.formats import head_middle_tail_spec
from engine.compaction.summary import SummarySpec
from engine.models import History, Message, Placement


class HeadMiddleTailStrategy(CompactionPolicy):
    name = "head-middle-tail"
    seed = "004_244b862ce0fab8f2.txt"
    checks = frozenset({CheckPoint.BEFORE_REQUEST})
    placement = Placement.USER_MESSAGE
    lifecycle = Lifecycle.RECOMPACT
    writes_raw_middle = True
    stores_only_shrinking = True

    @property
    def summary(self) -> SummarySpec:  # type: ignore[override]
        return head_middle_tail_spec(self.settings.strategies.head_middle_tail.max_retries)

    @property
    def context_limit(self) -> int:
        own = self.settings.strategies.head_middle_tail.context_limit
        return own or self.settings.context_window

    def measure(self, view: PolicyView) -> Measure:
        own = self.settings.strategies.head_middle_tail
        return Measure(
            what="request tokens (local count)",
            value=view.request_tokens,
            threshold=self.context_limit * own.threshold_ratio,
            comparison=">=",
            extra_condition=bool(view.history.messages or view.history.summaries),
        )

    def tail_start(self, view: PolicyView) -> int:
        """F-003: index of the first tail message (whole messages, scanned from the end)."""
        budget = self.context_limit * self.settings.strategies.head_middle_tail.tail_retention_ratio
        messages = view.history.messages
        total = 0
        for i in range(len(messages) - 1, -1, -1):
            total += view.tokens_of(messages[i])
            if total >= budget:
                return i
        return 0

    def select(self, view: PolicyView, *, emergency: bool = False) -> list[Message]:
        cut = cut_before(view.history.messages, self.tail_start(view), view.protected())
        if emergency and not cut:
            return self.emergency_cut(view)
        return cut

    def recompacted(self, history: History) -> list[Message]:
        """UC-002: the earlier summary joins the middle as what it is, a user message (F-005:
        ``{ role: "user", content: summary }``)."""
        return [
            Message(role="user", content=s.content, created_at=s.created_at)
            for s in history.summaries
        ]
