"""What a compaction worked out comes to: the draft it would store
(:meth:`engine.compaction.executor.CompactionExecutor.prepare`), what storing it gave, and the
figures a skipped one reports."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.compaction.policy import PolicyView
from engine.models import ArchivedSegment, Compaction, History, Message, Summary

NOT_COMPACTED: dict[str, Any] = {
    "compacted": False,
    "originalTokenCount": None,
    "compactedTokenCount": None,
    "compactionRatio": None,
    "compactedMessageCount": 0,
    "retainedMessageCount": 0,
}
"""A skipped compaction's statistics: seed 004 F-008 "未执行压缩时，统计字段全部为 0 或 null"."""


def messages_as_sent(messages: list[Message]) -> int:
    """How many messages ``messages`` are on the wire: a step's tool results go as one user
    message of tool_result blocks, however many calls it made (seed 004 F-008 counts messages
    in its ``Message[]``, F-001; issue 39: two parallel results had counted as two)."""
    steps = {(m.meta.round, m.meta.step) for m in messages if m.role == "tool"}
    return sum(m.role != "tool" for m in messages) + len(steps)


@dataclass
class CompactionDraft:
    """A compaction worked out and not yet stored (:meth:`CompactionExecutor.prepare`)."""

    record: Compaction
    summary: Summary | None
    messages: list[Message]
    """What it archives, in order."""
    summarised: list[Message]
    """What the summary was written from: earlier summaries it re-compacts, then the cut."""
    supersede: list[int]
    """Active summaries it retires (replaced or re-compacted)."""
    kept_tokens: int
    """L3 tokens that stay (summaries kept, messages kept), without the new summary."""
    writes_raw_middle: bool = False
    request_after: Callable[[Summary | None], int] | None = None
    """The local count of the request after it, with a given summary (the F-008 figures are
    in this count, the one the trigger measures); None: the L3 counts stand in."""


@dataclass
class CompactionResult:
    compaction: Compaction
    summary: Summary | None
    segment: ArchivedSegment | None


def request_count_after(
    view: PolicyView, history: History, retired: list[int], kept: list[Message]
) -> Callable[[Summary | None], int] | None:
    """The request's local count once a compaction retires ``retired`` and keeps ``kept``,
    with the summary it is given; None when the view cannot count a request."""
    count = view.count_request
    if count is None or not view.request_tokens:
        return None
    carried = [s for s in history.summaries if s.id not in retired]

    def after(summary: Summary | None) -> int:
        summaries = carried + ([summary] if summary is not None else [])
        return count(History(summaries=summaries, messages=kept))

    return after
