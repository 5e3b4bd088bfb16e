"""Seed 004 (``head-middle-tail``, the Context Compact PRD): one token count for the trigger and
the statistics, the raw middle as the seed defines it, and what a skipped compaction says
(issue 20, deviations 5, 9 and 12).

Expected values come from the PRD (``004_244b862ce0fab8f2.txt``), quoted in each docstring.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.compaction.strategies import get_strategy
from engine.compaction.summary import SummaryCompressor
from engine.compaction.summary_call import ProviderSummariser
from engine.config import Settings
from engine.context.history import HistoryManager
from engine.events import CompactionFailed, Event, Notice
from engine.llm.anthropic import AnthropicProvider
from engine.llm.offline import OfflineProvider
from engine.models import Message, MessageMeta, Observation, Outcome, ToolCall, Trigger
from engine.session import Agent
from engine.store import Store
from tests.engine.builders import write_round
from tests.fakes.anthropic_server import FakeAnthropicServer, error_reply, text_reply

SMALL = {"head-middle-tail": {"context_limit": 400}}
"""A 400-token limit: a 100-token tail, so a few rounds have a middle."""


class _Recording:
    """A model that answers every summary call and keeps what it was given."""

    is_model = True

    def __init__(self) -> None:
        self.given: list[list[Message]] = []

    def summarize(self, messages, prompt, focus, timeout, render=None, **_options):  # type: ignore[no-untyped-def]
        self.given.append(list(messages))
        return f"GOAL AND KEY DECISIONS:\n- summary {len(self.given)}"


class _Broken:
    is_model = True

    def summarize(self, messages, prompt, focus, timeout, render=None, **_options):  # type: ignore[no-untyped-def]
        raise RuntimeError("overloaded")


# ---------------------------------------------------------------- deviation 5: one count
def test_the_statistics_are_in_the_count_the_trigger_measures(store: Store, tmp_path: Path) -> None:
    """The trigger and the statistics count the same thing, the token total of the messages:

    F-001 ``计算消息列表的 token 总量`` (the token total of the message list), F-002
    ``当 token 总量 ≥ 阈值时返回 true`` (true when that total reaches the threshold), F-008
    ``originalTokenCount: number — 压缩前 token 总量`` / ``compactedTokenCount: number — 压缩后
    token 总量`` / ``compactionRatio: number — 压缩比（compactedTokenCount / originalTokenCount）``
    (the totals before and after, and their ratio).
    """
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = Settings(strategies={"head-middle-tail": {"context_limit": 4_000}})
    session = store.create_session(str(workspace), "t", strategy="head-middle-tail")
    assert session.id is not None
    manager = HistoryManager(store, session.id, settings)
    for n in range(1, 9):
        write_round(manager, n, tools=3)
    agent = Agent(store, session, settings, OfflineProvider(), workspace)

    before = agent.plan()
    assert before.measure.fires and before.compacts  # the request is over 0.92 × 4 000
    result = agent.compact(trigger=Trigger.AUTO)
    after = agent.plan().measure.value

    stats = result.compaction.stats
    assert stats["originalTokenCount"] == before.measure.value
    assert stats["compactedTokenCount"] == after < before.measure.value
    assert stats["compactionRatio"] == round(after / before.measure.value, 4)


# ---------------------------------------------------------------- deviation 9: the raw middle
def test_the_raw_middle_holds_the_full_results_and_the_summary_as_a_user_message(
    store: Store, session_id: int, tmp_path: Path
) -> None:
    """The file is the middle itself, and a re-compacted summary is in it as what it is:

    F-006 ``文件内容为 middleMessages 的 JSON 序列化`` (the file holds the middle messages as
    JSON), 4.2 ``仅原始消息的忠实序列化`` (only a faithful serialisation of the original
    messages: a tool result as the model saw it, not history's compressed form); F-005
    ``摘要消息的格式：{ role: "user", content: summary }`` (the summary is a user message) and
    UC-002 ``前次摘要也参与压缩`` (the earlier summary is compacted again with the rest).
    """
    data = tmp_path / "data"
    settings = Settings(strategies=SMALL)
    manager = HistoryManager(store, session_id, settings, data_dir=data)
    full = "\n".join(f"src/mod.py:{i}: TODO item {i}" for i in range(1, 41))
    _grep_round(manager, store, session_id, full)
    for n in range(2, 6):
        write_round(manager, n, tools=3)
    strategy = get_strategy("head-middle-tail", settings)
    model = _Recording()

    first = manager.compact(strategy, SummaryCompressor(model, 5), Trigger.AUTO)
    rows = json.loads(Path(first.compaction.stats["raw_middle_file"]).read_text())
    grep = next(r for r in rows if r["role"] == "tool")
    assert grep["content"] == full  # all 40 lines, not the compressed first five
    assert first.segment is not None
    stored = next(m for m in first.segment.messages if m.role == "tool")
    assert stored.content != full  # history (and the archive) keep the compressed form

    for n in range(6, 10):
        write_round(manager, n, tools=3)
    second = manager.compact(strategy, SummaryCompressor(model, 5), Trigger.AUTO)
    rows = json.loads(Path(second.compaction.stats["raw_middle_file"]).read_text())
    assert first.summary is not None
    assert rows[0]["role"] == "user" and rows[0]["content"] == first.summary.content
    # the summary call got the same middle: the earlier summary as a user message
    assert model.given[1][0].role == "user"
    assert model.given[1][0].content == first.summary.content


def _grep_round(manager: HistoryManager, store: Store, session_id: int, full: str) -> None:
    """Round 1: a Grep whose full result (40 lines) history keeps compressed (5 lines)."""
    rnd, _ = manager.open_round("find the TODOs")
    call = ToolCall(id="toolu_g", name="Grep", input={"pattern": "TODO"})
    manager.append(rnd.index, Message(role="assistant", content="Grep.", tool_calls=[call]))
    compressed = json.dumps({"status": "success", "data": {"matches": full.splitlines()[:5]}})
    tool = manager.append(
        rnd.index,
        Message(
            role="tool",
            content=compressed,
            meta=MessageMeta(step=1, tool_name="Grep", tool_use_id="toolu_g"),
        ),
    )
    store.add_observation(
        Observation(
            session_id=session_id,
            round_index=rnd.index,
            step=1,
            tool_use_id="toolu_g",
            tool_name="Grep",
            result={"status": "success"},
            text=full,
            message_id=tool.id,
        )
    )
    manager.append(
        rnd.index, Message(role="assistant", content="40 TODOs.", meta=MessageMeta(final=True))
    )


# ---------------------------------------------------------------- deviation 12: the skip
def test_after_the_retries_the_notices_say_the_compaction_was_skipped(
    store: Store, session_id: int
) -> None:
    """What the user reads matches what happened: retries, then no compaction at all, every
    message kept (nothing like "keeping recent history only"):

    F-007 ``最多重试 COMPACT_MAX_RETRIES 次（默认 2 次）`` (at most 2 retries),
    ``所有重试均失败后，跳过本次压缩，返回原始消息列表`` (after they all fail, skip this
    compaction and return the original message list), ``CompactResult.compacted 设为 false``
    (compacted is false) and ``所有失败和重试记录日志`` (every failure and retry is logged).
    """
    events: list[Event] = []
    settings = Settings(strategies=SMALL)
    manager = HistoryManager(store, session_id, settings, events=events.append)
    for n in (1, 2, 3):
        write_round(manager, n)
    before = store.history(session_id)
    strategy = get_strategy("head-middle-tail", settings)
    result = manager.compact(
        strategy, SummaryCompressor(_Broken(), 5, sleep=lambda _s: None), Trigger.AUTO
    )

    notices = [e.message for e in events if isinstance(e, Notice)]
    assert notices == [
        "Summary call 1 of 3 failed (overloaded); retrying in 1 s.",
        "Summary call 2 of 3 failed (overloaded); retrying in 2 s.",
    ]
    (failed,) = [e for e in events if isinstance(e, CompactionFailed)]
    said = failed.error
    assert said == result.compaction.error
    assert "3 times" in said and "last: overloaded" in said
    assert "Compaction skipped" in said and "compacted = false" in said
    assert "recent history only" not in said and "keeping recent" not in " ".join(notices)
    assert result.compaction.outcome == Outcome.SKIPPED
    # F-008 boundary: "未执行压缩时，统计字段全部为 0 或 null" (no compaction done: every
    # statistics field 0 or null)
    assert result.compaction.stats == {
        "compacted": False,
        "originalTokenCount": None,
        "compactedTokenCount": None,
        "compactionRatio": None,
        "compactedMessageCount": 0,
        "retainedMessageCount": 0,
    }
    assert store.history(session_id) == before


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    """A fake Messages API on 127.0.0.1."""
    with FakeAnthropicServer() as fake:
        yield fake


# ---------------------------------------------------------------- issue 32: F-007's count
def test_a_failing_summary_call_is_sent_three_times_in_all(
    store: Store, session_id: int, server: FakeAnthropicServer
) -> None:
    """F-007 "LLM 调用失败时，最多重试 ``COMPACT_MAX_RETRIES`` 次（默认 2 次）" (at most 2
    retries) and the scenario "连续 N+1 次 LLM 调用失败" (N + 1 failed calls in a row): with
    N = 2, three calls reach the API, although the provider's own setting would retry each 4
    times (15 calls); and "所有失败和重试记录日志": each failure is said right after its call."""
    said: list[str] = []
    server.default = lambda _request: (
        said.append("call") or error_reply(529, "overloaded", error_type="overloaded_error")
    )
    settings = Settings(strategies=SMALL, max_retries=4, retry_base_delay=0.001)
    manager = HistoryManager(
        store, session_id, settings, events=lambda e: said.append(getattr(e, "message", ""))
    )
    for n in (1, 2, 3):
        write_round(manager, n)
    provider = AnthropicProvider(settings, api_key="sk-test", base_url=server.url)
    compressor = SummaryCompressor(ProviderSummariser(provider, settings), 5, sleep=lambda _s: None)
    result = manager.compact(get_strategy("head-middle-tail", settings), compressor, Trigger.AUTO)

    assert len(server.requests) == 3
    assert result.compaction.outcome == Outcome.SKIPPED
    calls_and_notices = [s for s in said if s == "call" or s.startswith("Summary call")]
    overloaded = "(The Anthropic API is overloaded (HTTP 529): overloaded)"
    assert calls_and_notices == [
        "call",
        f"Summary call 1 of 3 failed {overloaded}; retrying in 1 s.",
        "call",
        f"Summary call 2 of 3 failed {overloaded}; retrying in 2 s.",
        "call",
    ]


# ---------------------------------------------------------------- issue 32: F-008's counts
def test_the_counts_include_the_recompacted_summary_and_the_head(
    store: Store, session_id: int, tmp_path: Path
) -> None:
    """F-008 "``compactedMessageCount: number`` — 被压缩的消息数量（Middle 区域消息数）" (the
    middle's messages, and UC-002 "前次摘要也参与压缩": an earlier summary is one of them) and
    "``retainedMessageCount: number`` — 保留的消息数量（Head + Tail）", where F-003's head is
    "消息列表开头连续的 ``role: "system"`` 消息" (here the system prompt: one message)."""
    data = tmp_path / "data"
    settings = Settings(strategies=SMALL)
    manager = HistoryManager(store, session_id, settings, data_dir=data)
    for n in range(1, 6):
        write_round(manager, n, tools=3)
    strategy = get_strategy("head-middle-tail", settings)
    first = manager.compact(strategy, SummaryCompressor(_Recording(), 5), Trigger.AUTO)
    assert first.compaction.stats["compactedMessageCount"] == first.compaction.messages_compacted
    for n in range(6, 10):
        write_round(manager, n, tools=3)
    second = manager.compact(strategy, SummaryCompressor(_Recording(), 5), Trigger.AUTO)

    stats = second.compaction.stats
    rows = json.loads(Path(stats["raw_middle_file"]).read_text())
    assert stats["compactedMessageCount"] == len(rows) == second.compaction.messages_compacted + 1
    assert stats["retainedMessageCount"] == 1 + len(manager.history.messages)


# ---------------------------------------------------------------- issue 32: F-004's model
@pytest.mark.parametrize(("configured", "sent"), [(None, "claude-sonnet-4-6"), ("cheap", "cheap")])
def test_the_summary_call_asks_the_configured_model(
    store: Store,
    session_id: int,
    server: FakeAnthropicServer,
    configured: str | None,
    sent: str,
) -> None:
    """F-004's input "``model: string`` — 用于摘要的模型名称" (the model used for the summary)
    and seed 000 C2 "调用新的模型会话（可配置模型，默认使用当前模型）" (a new model call, the
    model configurable, by default the current one)."""
    server.script([text_reply("GOAL AND KEY DECISIONS:\n- done")])
    settings = Settings(strategies=SMALL, summary_model=configured, model="claude-sonnet-4-6")
    manager = HistoryManager(store, session_id, settings)
    for n in (1, 2, 3):
        write_round(manager, n)
    provider = AnthropicProvider(settings, api_key="sk-test", base_url=server.url)
    compressor = SummaryCompressor(ProviderSummariser(provider, settings), 5)
    result = manager.compact(get_strategy("head-middle-tail", settings), compressor, Trigger.AUTO)

    assert result.compaction.outcome == Outcome.SUCCESS
    [request] = server.requests
    assert request.body["model"] == sent
