"""Where a summary goes in the request, and the exact words around it (one place for all seeds).

A stored :class:`~engine.models.Summary` holds the summary text only; its
:class:`~engine.models.Placement` says how the request carries it:

- ``system_block`` (seed 000): one ``system`` block, after L1 and L2;
- ``system_hint`` (seed 001): a ``system`` block holding :func:`reset_hint_text`, the seed's
  ``buildCompressionHint`` wrapper around the summary;
- ``mock_pair`` (seed 002): at the start of ``messages``, the seed's mock user message
  (:data:`MOCK_USER_PROMPT`) and the summary as the assistant's answer;
- ``assistant_message`` (seed 003): one assistant message at the start of ``messages``, after
  the :data:`CONVERSATION_OPENER` user turn the Messages API needs before it (part of the
  summary's cost, so the history pane, the gauge and ``tokens_after`` count it alike);
- ``user_message`` (seed 004): one user message at the start of ``messages`` (the head, L1/L2,
  lives in ``system`` on the Anthropic wire).
"""

from __future__ import annotations

from engine.messages.tokens import BLOCK_OVERHEAD, MESSAGE_OVERHEAD, count_repeated
from engine.messages.wire import CONVERSATION_OPENER
from engine.models import Placement, Summary

IN_SYSTEM = frozenset({Placement.SYSTEM_BLOCK, Placement.SYSTEM_HINT})
"""Placements that put the summary in the ``system`` parameter."""

RESET_HINT_HEADER = "[执行历史摘要 - 之前会话已压缩]"
RESET_HINT_FOOTER = (
    "注意：以上是对之前执行历史的摘要，你处于重建会话状态。\n"
    "请基于摘要继续完成原始任务，不要重复已完成的操作。"
)

MOCK_USER_PROMPT = """请对当前工作进行总结，保留以下关键信息：
- 当前场景设计/生成组件的核心要点
- Execute Agent反馈的主要问题/评测进度
- 已完成的分析结论/已识别的问题
- 待办事项清单
- 关键路径（execution_output_dir等）

总结格式使用JSON，确保信息完整但简洁。"""
"""Seed 002's ``compact_prompt``, word for word: the mock user turn that asks for the summary."""


def reset_hint_text(summary: str) -> str:
    """Seed 001's ``buildCompressionHint(summary)``: the lines joined with newlines."""
    return "\n".join([RESET_HINT_HEADER, "", summary, "", RESET_HINT_FOOTER])


def system_text(summary: Summary) -> str:
    """The ``system`` block text of a summary placed in the system prompt."""
    if summary.placement == Placement.SYSTEM_HINT:
        return reset_hint_text(summary.content)
    return summary.content


def leading_messages(summary: Summary) -> list[tuple[str, str]]:
    """The ``(role, text)`` turns a summary placed in ``messages`` adds at their start."""
    if summary.placement == Placement.MOCK_PAIR:
        return [("user", MOCK_USER_PROMPT), ("assistant", summary.content)]
    if summary.placement == Placement.ASSISTANT_MESSAGE:
        return [("user", CONVERSATION_OPENER), ("assistant", summary.content)]
    if summary.placement == Placement.USER_MESSAGE:
        return [("user", summary.content)]
    return []


def as_sent(summary: Summary) -> str:
    """The summary with the words its placement adds, as one text (for counts and display)."""
    if summary.placement in IN_SYSTEM:
        return system_text(summary)
    return "\n\n".join(text for _, text in leading_messages(summary))


def summary_tokens(summary: Summary) -> int:
    """Tokens a summary adds to the request in its placement (blocks and message overhead)."""
    if summary.placement in IN_SYSTEM:
        return BLOCK_OVERHEAD + count_repeated(system_text(summary))
    return sum(
        MESSAGE_OVERHEAD + BLOCK_OVERHEAD + count_repeated(text)
        for _, text in leading_messages(summary)
    )
