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
from engine.context.history import HistoryManager
from engine.events import CompactionFailed, Event, Notice
from engine.llm.anthropic import AnthropicProvider
from engine.llm.offline import OfflineProvider
from engine.models import (
    Message,
    MessageMeta,
    Observation,
    Outcome,
    RoundStatus,
    ToolCall,
    Trigger,
)
from engine.session import Agent
from engine.settings.config import Settings
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

    first = manager.compactions.compact(strategy, SummaryCompressor(model, 5), Trigger.AUTO)
    rows = json.loads(Path(first.compaction.stats["raw_middle_file"]).read_text())
    grep = next(r for r in rows if r["role"] == "tool")
    assert grep["content"] == full  # all 40 lines, not the compressed first five
    assert first.segment is not None
    stored = next(m for m in first.segment.messages if m.role == "tool")
    assert stored.content != full  # history (and the archive) keep the compressed form

    for n in range(6, 10):
        write_round(manager, n, tools=3)
    second = manager.compactions.compact(strategy, SummaryCompressor(model, 5), Trigger.AUTO)
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
    result = manager.compactions.compact(
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
    result = manager.compactions.compact(
        get_strategy("head-middle-tail", settings), compressor, Trigger.AUTO
    )

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
    first = manager.compactions.compact(strategy, SummaryCompressor(_Recording(), 5), Trigger.AUTO)
    assert first.compaction.stats["compactedMessageCount"] == first.compaction.messages_compacted
    for n in range(6, 10):
        write_round(manager, n, tools=3)
    second = manager.compactions.compact(strategy, SummaryCompressor(_Recording(), 5), Trigger.AUTO)

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
    result = manager.compactions.compact(
        get_strategy("head-middle-tail", settings), compressor, Trigger.AUTO
    )

    assert result.compaction.outcome == Outcome.SUCCESS
    [request] = server.requests
    assert request.body["model"] == sent


def test_with_no_retries_the_summary_call_is_sent_once(
    store: Store, session_id: int, server: FakeAnthropicServer
) -> None:
    """F-007 "``COMPACT_MAX_RETRIES = 0`` 时不重试，失败即跳过" (with 0, no retry: a failure
    skips): one request reaches the (fake) API, counted at the HTTP level, although the
    provider's own setting would retry it 4 times (issue 39: it was sent 5 times, and the
    record said both "no retries" and "gave up after 4 retries"). The record is skipped and
    says one call, no retries."""
    server.default = lambda _request: error_reply(529, "overloaded", error_type="overloaded_error")
    section = {**SMALL, "head-middle-tail": {**SMALL.get("head-middle-tail", {}), "max_retries": 0}}
    settings = Settings(strategies=section, max_retries=4, retry_base_delay=0.001)
    manager = HistoryManager(store, session_id, settings)
    for n in (1, 2, 3):
        write_round(manager, n)
    provider = AnthropicProvider(settings, api_key="sk-test", base_url=server.url)
    compressor = SummaryCompressor(ProviderSummariser(provider, settings), 5, sleep=lambda _s: None)
    result = manager.compactions.compact(
        get_strategy("head-middle-tail", settings), compressor, Trigger.AUTO
    )

    assert len(server.requests) == 1
    record = result.compaction
    assert record.outcome == Outcome.SKIPPED
    assert (record.error or "").startswith("The summary call failed once, no retries; last: ")
    assert "Gave up after" not in (record.error or "")  # the provider's own retries: none


def _parallel_round(manager: HistoryManager, n: int) -> None:
    """A round whose one step makes two calls at once: the user input, the assistant's two
    tool_use blocks, their two results, the final answer."""
    rnd, _ = manager.open_round(f"question {n}: please read two files")
    calls = [ToolCall(id=f"toolu_{n}_{k}", name="Read", input={"file_path": f"f{k}.py"})
             for k in (1, 2)]  # fmt: skip
    manager.append(rnd.index, Message(role="assistant", content="Thought: both",
                                      tool_calls=calls, meta=MessageMeta(step=1)))  # fmt: skip
    for call in calls:
        manager.append(rnd.index, Message(
            role="tool", content=json.dumps({"status": "success", "data": {"lines": "1-9"}}),
            meta=MessageMeta(step=1, tool_name="Read", tool_use_id=call.id)))  # fmt: skip
    manager.append(rnd.index, Message(role="assistant", content=f"answer {n}",
                                      meta=MessageMeta(step=2, final=True)))  # fmt: skip
    manager.finish_round(rnd.index, RoundStatus.FINISHED)


def _as_sent(messages: list[Message]) -> int:
    """Messages as the Messages API gets them: a step's tool results are one user message."""
    steps = {(m.meta.round, m.meta.step) for m in messages if m.role == "tool"}
    return sum(m.role != "tool" for m in messages) + len(steps)


def test_a_steps_parallel_results_count_as_one_message(store: Store, session_id: int) -> None:
    """F-008 "``compactedMessageCount`` — 被压缩的消息数量（Middle 区域消息数）" and
    "``retainedMessageCount`` — 保留的消息数量（Head + Tail）", in the seed's messages
    (F-001: "``messages: Message[]`` — … ``role``（``"system" | "user" | "assistant"``）和
    ``content``（``string | ContentBlock[]``）"): a step's tool results are one user message of
    ToolResultBlocks, as ctxscope sends them, not one message each (issue 39: 6 counted for 5).
    Each round here is 4 such messages (input, two calls, their two results, the answer)."""
    settings = Settings(strategies=SMALL)
    manager = HistoryManager(store, session_id, settings)
    for n in range(1, 6):
        _parallel_round(manager, n)
    strategy = get_strategy("head-middle-tail", settings)
    result = manager.compactions.compact(strategy, SummaryCompressor(_Recording(), 5), Trigger.AUTO)
    assert result.segment is not None
    stats = result.compaction.stats
    archived = result.segment.messages
    assert len(archived) % 5 == 0  # whole rounds of 5 stored messages went
    assert stats["compactedMessageCount"] == _as_sent(archived) == 4 * len(archived) // 5
    assert stats["retainedMessageCount"] == 1 + _as_sent(manager.history.messages)


def test_a_compaction_with_no_middle_stores_its_figures_at_zero_or_null(
    store: Store, session_id: int
) -> None:
    """F-008 "未执行压缩时，统计字段全部为 0 或 null" (when nothing is compacted, every field is 0
    or null): a compaction skipped for want of a middle (one short round, all of it tail) is
    stored with those fields, not with none (issue 39: ``{}``)."""
    settings = Settings(strategies=SMALL)
    manager = HistoryManager(store, session_id, settings)
    rnd, _ = manager.open_round("hi")
    manager.append(rnd.index, Message(role="assistant", content="hello",
                                      meta=MessageMeta(step=1, final=True)))  # fmt: skip
    manager.finish_round(rnd.index, RoundStatus.FINISHED)
    strategy = get_strategy("head-middle-tail", settings)
    result = manager.compactions.compact(strategy, SummaryCompressor(_Recording(), 5), Trigger.AUTO)
    assert result.compaction.outcome == Outcome.SKIPPED
    [stored] = store.compactions(session_id)
    assert stored.stats == {
        "compacted": False,
        "originalTokenCount": None,
        "compactedTokenCount": None,
        "compactionRatio": None,
        "compactedMessageCount": 0,
        "retainedMessageCount": 0,
    }


class _Long:
    """A model whose summary is longer than what it summarises."""

    is_model = True

    def summarize(self, messages, prompt, focus, timeout, render=None, **_options):  # type: ignore[no-untyped-def]
        return "GOAL AND KEY DECISIONS:\n- " + "checked " * 500


def test_a_compaction_that_does_not_shrink_the_request_is_not_stored(
    store: Store, session_id: int
) -> None:
    """F-008 "``compactionRatio: number`` — 压缩比（compactedTokenCount /
    originalTokenCount）" and the product's aim, "Context Compact": a compaction reduces the
    token total. In a small window a summary can outgrow the middle it replaces (issue 39:
    ratios 1.0191, 1.0007 stored): such a compaction is said and not stored, history as it
    was."""
    events: list[Event] = []
    settings = Settings(strategies=SMALL)
    manager = HistoryManager(store, session_id, settings, events=events.append)
    for n in (1, 2, 3):
        write_round(manager, n)
    before = [m.id for m in manager.history.messages]
    strategy = get_strategy("head-middle-tail", settings)
    result = manager.compactions.compact(strategy, SummaryCompressor(_Long(), 5), Trigger.AUTO)
    assert result.compaction.outcome == Outcome.SKIPPED and result.segment is None
    assert store.compactions(session_id) == []
    assert [m.id for m in manager.history.messages] == before and not manager.history.summaries
    [said] = [e for e in events if isinstance(e, CompactionFailed)]
    assert "would not shrink" in said.error
