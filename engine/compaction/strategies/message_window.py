"""Seed 003 (``message-window``): a message-count window and a JSONL execution log.

- messages are counted as the seed's runtime holds them: after each run it pushes the user
  input and the run's ``response.messages``, which hold, per step, **one** assistant message
  (its text and tool calls) and **one** tool message with all of that step's results; so a step
  with five parallel calls is 2 messages, not 6 (:func:`seed_message_count`);
- checked after a run: when history holds *more* than ``max_messages`` (60) such messages;
- everything before the last ``keep_last`` (30) messages becomes **one assistant message**
  (an earlier one included: it is one of the messages), the kept part aligned back so that no
  tool result loses its call (so at least 30 are kept);
- after every run an entry ``{requestId, userPreview, outputPreview, toolCalls,
  hadToolFailure}`` is appended to the session's ``agent-context.jsonl``; past ``log_window``
  (200) entries, the older ones are merged into one summary entry and the last
  ``log_window - 1`` kept (:mod:`engine.compaction.execution_log`);
- the seed's two loading tools, ``chat_load_history`` and ``agent_load_context``, are offered
  while this strategy is on (:attr:`extra_tools`; :mod:`tools.context_loading`).
"""

from __future__ import annotations

from typing import ClassVar

from engine.compaction.policy import (
    CheckPoint,
    CompactionPolicy,
    Lifecycle,
    Measure,
    PolicyView,
    ResultForm,
    cut_before,
)
from engine.compaction.strategies.formats import MESSAGE_WINDOW_SPEC
from engine.models import Message, Placement
from tools.base import Tool
from tools.context_loading import AgentLoadContextTool, ChatLoadHistoryTool
from tools.injection import Injections


def _joins_previous(messages: list[Message], i: int) -> bool:
    """Whether ``messages[i]`` is a further result of a step whose tool message began earlier."""
    return i > 0 and messages[i].role == "tool" and messages[i - 1].role == "tool"


def seed_message_count(messages: list[Message]) -> int:
    """How many messages ``messages`` are in the seed's history: a run of tool results (one
    step's) is one tool message."""
    return sum(1 for i in range(len(messages)) if not _joins_previous(messages, i))


def last_seed_messages_start(messages: list[Message], count: int) -> int:
    """Index where the last ``count`` seed messages begin (a step's results count once)."""
    i = len(messages)
    while i > 0 and count > 0:
        i -= 1
        while _joins_previous(messages, i):
            i -= 1
        count -= 1
    return i


class MessageWindowStrategy(CompactionPolicy):
    name = "message-window"
    seed = "003_fdb0470445deb778.txt"
    checks = frozenset({CheckPoint.AFTER_ROUND})
    placement = Placement.ASSISTANT_MESSAGE
    lifecycle = Lifecycle.RECOMPACT
    summary = MESSAGE_WINDOW_SPEC
    tool_results = ResultForm.AS_RETURNED
    extra_tools: ClassVar[tuple[type[Tool], ...]] = (ChatLoadHistoryTool, AgentLoadContextTool)

    def execution_log_window(self) -> int:
        return self.settings.strategies.message_window.log_window

    def injections(self) -> Injections:
        own = self.settings.strategies.message_window
        return Injections(max_messages=own.max_injected_messages, max_chars=own.injected_max_chars)

    def message_count(self, view: PolicyView) -> int:
        """Messages in the seed's in-memory history: each summary message counts as one, and
        so does each step's tool message however many results it holds."""
        return len(view.history.summaries) + seed_message_count(view.history.messages)

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
        keep_from = last_seed_messages_start(messages, keep_last)
        return cut_before(messages, keep_from, view.protected())
