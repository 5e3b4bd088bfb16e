"""Seed 002 (``mock-user``) where ctxscope used to deviate from it: the profile's window, the
5 000-character cut in history, compactions that would not shrink, and the summary call.

Every expected value is read off the seed (``/work/shared/seeds/002_e88ac4ba3ea66dc9.txt``),
quoted in each test's docstring.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.compaction.placement import MOCK_USER_PROMPT
from engine.compaction.policy import PolicyView
from engine.compaction.strategies import get_strategy
from engine.compaction.strategies.mock_user import MockUserStrategy
from engine.compaction.summary import SummaryCompressor
from engine.context.history import HistoryManager
from engine.events import BudgetWarning, CompactionFailed, Event, Notice
from engine.llm.anthropic import AnthropicProvider
from engine.llm.offline import OfflineProvider
from engine.messages.tokens import count_request
from engine.models import Message, MessageMeta, Outcome, RoundStatus, ToolCall, Trigger
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.builders import write_round
from tests.fakes.anthropic_server import (
    FakeAnthropicServer,
    refusals,
    text_reply,
    tool_reply,
)


def mock_user(**section: Any) -> MockUserStrategy:
    settings = Settings(strategy="mock-user", strategies={"mock-user": section})
    strategy = get_strategy("mock-user", settings)
    assert isinstance(strategy, MockUserStrategy)
    return strategy


# ------------------------------------------------------------ 2: the profile's window
def test_execute_trigger_above_the_session_window_is_said() -> None:
    """``COMPACT_TRIGGER_THRESHOLD = 700_000  # 700K (70%)`` / ``API_HARD_LIMIT = 1_000_000``
    (Execute Agent, Sonnet 1M): in a 200 000-token window (Opus's, the session's default) a
    trigger of 700 000 can never fire. The window is the model's, so it is not applied (a
    200 000-token model refuses a longer request); the user is told instead."""
    execute = mock_user(profile="execute")
    said = execute.window_notice(200_000)
    assert "'execute'" in said and "700,000" in said and "200,000" in said
    assert "context_window = 1000000" in said  # the profile's own window, as the fix
    assert execute.window_notice(1_000_000) == ""  # 700 000 < 1 000 000: it fires in time


@pytest.mark.parametrize(("window", "said"), [(150_000, True), (150_001, False)])
def test_init_trigger_at_the_window_is_said(window: int, said: bool) -> None:
    """``COMPACT_TRIGGER_THRESHOLD = 150_000  # 150K (75%)`` and ``if total_tokens >
    COMPACT_TRIGGER_THRESHOLD``: in a 150 000-token window no request can be over 150 000."""
    assert bool(mock_user(profile="init").window_notice(window)) is said


def test_the_notice_reaches_the_user_once_and_requests_stay_inside(tmp_path: Path) -> None:
    """Execute (``700K (70%)`` of ``1M``) in a 20 000-token session window: one notice over
    three rounds, and no request over the session's window."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n" * 400)
    settings = Settings(strategy="mock-user", context_window=20_000, data_dir=None,
                        strategies={"mock-user": {"profile": "execute"}})  # fmt: skip
    store = Store.open(tmp_path / "s.db")
    session = store.create_session(str(ws), "t", strategy="mock-user")
    events: list[Event] = []
    sent: list[int] = []

    class Counting(OfflineProvider):
        def complete(self, request, on_event, cancel=None):  # type: ignore[no-untyped-def]
            sent.append(count_request(request.system, request.messages, request.tools))
            return super().complete(request, on_event, cancel)

    agent = Agent(store, session, settings, Counting(settings), ws, events=events.append)
    for ask in ("read a.py", "ls .", "read a.py"):
        assert agent.run(ask).status == RoundStatus.FINISHED
    told = [e.message for e in events if isinstance(e, Notice) and "'execute'" in e.message]
    assert len(told) == 1 and "700,000" in told[0] and "20,000" in told[0]
    assert sent and max(sent) <= 20_000


# ------------------------------------------------------------ 3: the cut, in history too
def _long_round(manager: HistoryManager, n: int, result: str) -> None:
    rnd, _ = manager.open_round(f"read big{n}.log")
    call = ToolCall(id=f"toolu_big{n}", name="Read", input={"file_path": f"big{n}.log"})
    manager.append(rnd.index, Message(role="assistant", content="Reading.", tool_calls=[call],
                                      meta=MessageMeta(step=1)))  # fmt: skip
    manager.append(rnd.index, Message(role="tool", content=result, meta=MessageMeta(
        step=1, tool_name="Read", tool_use_id=call.id)))  # fmt: skip
    manager.append(rnd.index, Message(role="assistant", content=f"big{n} read",
                                      meta=MessageMeta(step=2, final=True)))  # fmt: skip
    manager.finish_round(rnd.index, RoundStatus.FINISHED)


def test_a_long_result_in_history_last_n_steps_is_cut(manager: HistoryManager) -> None:
    """Step 5, ``compress_long_tool_results(messages, max_length=5000)``: ``if len(content) >
    max_length`` → ``f"{prefix}\\n\\n[... {len(content)-2000} chars omitted ...]\\n\\n{suffix}"``
    with ``prefix = content[:1000]``, ``suffix = content[-1000:]`` — applied to the messages
    a compaction keeps (the last N steps), not only to the running round."""
    long = "".join(f"line {i:05d}\n" for i in range(700))  # 7 700 characters
    exact = "y" * 5000
    _long_round(manager, 1, long)
    _long_round(manager, 2, exact)
    strategy = mock_user(keep_recent_steps=3)  # the last 6 messages: both Read steps whole
    projected, _ = strategy.project(manager.history.messages, [], None)
    results = [m.content for m in projected if m.role == "tool"]
    assert results[0] == long[:1000] + "\n\n[... 5700 chars omitted ...]\n\n" + long[-1000:]
    assert results[1] == exact  # 5 000 is not over 5 000
    stored = [m.content for m in manager.history.messages if m.role == "tool"]
    assert stored == [long, exact]  # history itself keeps the text: the cut is what is sent


def test_what_a_compaction_keeps_is_sent_cut(manager: HistoryManager, store: Store) -> None:
    """``compressed_messages = [compact_prompt, summary_message, *recent_messages]``, and
    "最近N步中存在超长tool result（如读取了大型trace文件…）可以截断为 前1K + ... + 后1K" (a long
    tool result in the last N steps may be cut to first 1K + … + last 1K)."""
    for n in (1, 2):
        write_round(manager, n)
    long = "t" * 1000 + "m" * 6000 + "e" * 1000
    _long_round(manager, 3, long)
    strategy = mock_user(keep_recent_steps=2)
    result = manager.compactions.compact(strategy, SummaryCompressor(_Offline(), 5), Trigger.MANUAL)
    assert result.compaction.outcome == Outcome.SUCCESS
    projected, _ = strategy.project(manager.history.messages, [], None)
    [kept] = [m.content for m in projected if m.role == "tool"]
    assert kept == "t" * 1000 + "\n\n[... 6000 chars omitted ...]\n\n" + "e" * 1000


# ------------------------------------------------------------ 4: only when it shrinks
class _Offline:
    is_model = False

    def summarize(self, messages, prompt, focus, timeout, render=None):  # type: ignore[no-untyped-def]
        raise AssertionError("offline: the extractive summary is used")


class _Model:
    is_model = True

    def summarize(self, messages, prompt, focus, timeout, render=None):  # type: ignore[no-untyped-def]
        raise AssertionError("seed 002 asks the live conversation, not a separate call")


def _summary(words: int) -> str:
    return json.dumps({"current_progress": " ".join(["checked"] * words), "pending": []})


def test_a_compaction_that_would_not_shrink_is_skipped_said_and_not_stored(
    store: Store, session_id: int, settings: Settings
) -> None:
    """Seed: "删除：从起始点到触发点之前的所有中间对话", "保留：Mock消息 + Summary + 最近N步"
    (delete the middle, keep mock + summary + last N) and "Compact前（total_tokens=155K）…
    Compact后（total_tokens≈70K）": a compaction replaces what it deletes by a smaller pair.
    Older rounds are already sent as their question and answer only, so a summary longer
    than them would make the request grow: skipped, said, and nothing stored."""
    events: list[Event] = []
    manager = HistoryManager(store, session_id, settings, events.append)
    for n in (1, 2, 3):
        write_round(manager, n)
    before = [m.id for m in manager.history.messages]
    strategy = mock_user(keep_recent_steps=1)
    view = PolicyView(history=manager.history, request_tokens=200_000)  # over 150 000
    compressor = SummaryCompressor(_Model(), 5)
    result = manager.compactions.compact(
        strategy, compressor, Trigger.AUTO, None, view, lambda _t: _summary(400)
    )

    assert result.compaction.outcome == Outcome.SKIPPED and result.segment is None
    assert result.compaction.id is None and store.compactions(session_id) == []
    assert [m.id for m in manager.history.messages] == before and not manager.history.summaries
    [said] = [e for e in events if isinstance(e, CompactionFailed)]
    assert "would not shrink" in said.error
    # Until what it would replace outgrows that summary, no new summary call is made.
    plan = strategy.plan(PolicyView(history=manager.history, request_tokens=200_000))
    assert plan.measure.fires and not plan.compacts and "would not shrink" in plan.reason


def test_a_compaction_that_shrinks_is_stored(
    store: Store, session_id: int, settings: Settings
) -> None:
    """The same rounds with long answers: the pair is smaller than what it replaces
    ("Compact后（total_tokens≈70K）" after 155K), so the compaction is stored."""
    manager = HistoryManager(store, session_id, settings)
    for n in (1, 2, 3):
        rnd, _ = manager.open_round(f"question {n}")
        manager.append(rnd.index, Message(role="assistant", content="found " * 600,
                                          meta=MessageMeta(step=1, final=True)))  # fmt: skip
        manager.finish_round(rnd.index, RoundStatus.FINISHED)
    # no gain floor: the ~1,200 tokens freed here are under the default 7,500
    strategy = mock_user(keep_recent_steps=1, min_gain_ratio=0)
    view = PolicyView(history=manager.history, request_tokens=200_000)
    compressor = SummaryCompressor(_Model(), 5)
    result = manager.compactions.compact(
        strategy, compressor, Trigger.AUTO, None, view, lambda _t: _summary(20)
    )
    assert result.compaction.outcome == Outcome.SUCCESS and result.segment is not None
    assert [c.outcome for c in store.compactions(session_id)] == [Outcome.SUCCESS]
    assert manager.history.summaries[0].content == _summary(20)


# ------------------------------------------------------------ 6: the summary call
@pytest.fixture
def fake_api() -> Any:
    with FakeAnthropicServer() as server:
        yield server


def test_the_summary_call_is_the_seeds_request_on_the_wire(
    fake_api: FakeAnthropicServer, tmp_path: Path
) -> None:
    """``client.messages.create(model=…, system=system_prompt, messages=messages_for_compact,
    max_tokens=4000, temperature=0.0)`` with ``messages_for_compact = current_messages +
    [compact_prompt]``: no ``tools``, ``max_tokens`` 4 000 (the agent's own requests keep
    theirs and their tools). ``temperature=0.0`` is not sent: the API version the SDK sends
    refuses any sampling parameter. Without tools, the calls and results of the live
    conversation go as text: the API refuses tool blocks in a request without tools."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n" * 50)
    small = {"mock-user": {"trigger_tokens": 500, "keep_recent_steps": 1}}
    settings = Settings(strategy="mock-user", max_retries=0, strategies=small)
    store = Store.open(tmp_path / "s.db")
    session = store.create_session(str(ws), "t", strategy="mock-user")
    provider = AnthropicProvider(settings, api_key="sk-test", base_url=fake_api.url)
    agent = Agent(store, session, settings, provider, ws)
    summary = '{"current_progress": "' + "read a.py and found x = 1 on every line; " * 3 + '"}'
    fake_api.script([
        tool_reply(("Read", {"file_path": "a.py"}), text="Reading."),
        text_reply("a.py sets x."),
        text_reply(summary),  # before round 2's first request: the compaction call
        text_reply("done"),
    ])  # fmt: skip
    assert agent.run("read a.py").status == RoundStatus.FINISHED
    assert agent.run("read it again").status == RoundStatus.FINISHED
    assert fake_api.refused == []

    call = fake_api.requests[2]
    body = call.body
    assert body["max_tokens"] == 4000
    assert "tools" not in body and "tool_choice" not in body
    assert not {"temperature", "top_p", "top_k"} & set(body)
    assert call.headers["anthropic-version"] == "2026-10-21"
    blocks = [b for m in body["messages"] for b in m["content"]]
    assert {b["type"] for b in blocks} == {"text"}
    texts = [b["text"] for b in blocks]
    assert 'Action: Read[{"file_path": "a.py"}]' in texts
    assert any(t.startswith("Observation: ") and "x = 1" in t for t in texts)
    assert body["messages"][-1]["role"] == "user"
    assert [b["text"] for b in body["messages"][-1]["content"]] == [
        "read it again",
        MOCK_USER_PROMPT,
    ]
    assert body["system"] == fake_api.requests[3].body["system"]  # system=system_prompt
    for normal in (0, 1, 3):
        sent = fake_api.requests[normal].body
        assert sent["max_tokens"] == settings.max_tokens and sent["tools"]
    assert agent.history.history.summaries[0].content == summary

    # What the real API would answer to the seed's call taken literally:
    assert refusals({**body, "temperature": 0.0}) == ["temperature: Extra inputs are not permitted"]
    with_blocks = fake_api.requests[1].body
    assert refusals({**with_blocks, "tools": []}) == [
        "Requests which include `tool_use` or `tool_result` blocks must define tools."
    ]


def test_a_live_run_skips_the_growing_compaction_and_asks_no_more(
    fake_api: FakeAnthropicServer, tmp_path: Path
) -> None:
    """Seed: "Compact前（total_tokens=155K）… Compact后（total_tokens≈70K）" — against the
    fake Messages API: the model's summary is longer than the round it would replace, so the
    compaction is skipped (said, nothing stored) and, while what it would replace stays
    smaller than that summary, no further summary call is made."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n" * 50)
    small = {"mock-user": {"trigger_tokens": 500, "keep_recent_steps": 1}}
    settings = Settings(strategy="mock-user", max_retries=0, strategies=small)
    store = Store.open(tmp_path / "s.db")
    session = store.create_session(str(ws), "t", strategy="mock-user")
    provider = AnthropicProvider(settings, api_key="sk-test", base_url=fake_api.url)
    events: list[Event] = []
    agent = Agent(store, session, settings, provider, ws, events=events.append)
    long_summary = _summary(3_000)
    fake_api.script([
        tool_reply(("Read", {"file_path": "a.py"}), text="Reading."),
        text_reply("a.py sets x."),
        text_reply(long_summary),  # round 2: the one summary call, refused
        tool_reply(("Read", {"file_path": "a.py"}), text="Again."),
        text_reply("done"),
    ])  # fmt: skip
    assert agent.run("read a.py").status == RoundStatus.FINISHED
    assert agent.run("read it again").status == RoundStatus.FINISHED
    assert fake_api.refused == [] and len(fake_api.requests) == 5

    assert [r.body["max_tokens"] for r in fake_api.requests].count(4000) == 1
    assert store.compactions(agent.session_id) == [] and not agent.history.history.summaries
    skipped = [e for e in events if isinstance(e, CompactionFailed)]
    assert len(skipped) == 1 and "would not shrink" in skipped[0].error
    assert skipped[0].compaction.outcome == Outcome.SKIPPED
    warned = [e for e in events if isinstance(e, BudgetWarning) and "would not shrink" in e.message]
    assert warned  # the next check says why, without asking the model again
    later = json.dumps([r.body for r in fake_api.requests[3:]])
    assert "checked checked" not in later  # the refused summary was never sent


# ------------------------------------------------------------ issue 32: a gain floor
def _answered_rounds(manager: HistoryManager, words: int) -> None:
    for n in (1, 2, 3):
        rnd, _ = manager.open_round(f"question {n}")
        manager.append(rnd.index, Message(role="assistant", content="found " * words,
                                          meta=MessageMeta(step=1, final=True)))  # fmt: skip
        manager.finish_round(rnd.index, RoundStatus.FINISHED)


def test_a_compaction_that_frees_little_makes_no_summary_call(
    store: Store, session_id: int, settings: Settings
) -> None:
    """Seed: "Compact前（total_tokens=155K）… Compact后（total_tokens≈70K）" — the seed compacts
    to shrink the request by half. Two rounds of 600-word answers sent in a 200 000-token
    request would free about 1 200 tokens (0.6 %): under the floor of 5 % of the 150 000
    trigger (7 500), so no summary call is made, and the reason says so with the figures."""
    manager = HistoryManager(store, session_id, settings)
    _answered_rounds(manager, 600)
    view = PolicyView(history=manager.history, request_tokens=200_000)  # over 150 000
    plan = mock_user(keep_recent_steps=1).plan(view)
    assert plan.measure.fires and plan.cut and not plan.compacts
    assert "under the floor of 7,500 (min_gain_ratio 0.05 × trigger 150,000)" in plan.reason
    assert "% of the 200,000 sent" in plan.reason

    unfloored = mock_user(keep_recent_steps=1, min_gain_ratio=0).plan(view)
    assert unfloored.compacts  # the same cut, with the floor off
    floored_low = mock_user(keep_recent_steps=1, min_gain_ratio=0.001).plan(view)
    assert floored_low.compacts  # 150 tokens: a floor it clears


def test_the_agent_says_why_it_does_not_compact(tmp_path: Path) -> None:
    """The user is told, before the request goes, that the compaction would free too little
    (and how to change the floor); nothing is stored."""
    ws = tmp_path / "ws"
    ws.mkdir()
    # L1 alone is about 3 400 tokens: a 3 000-token trigger fires before every request
    section = {"trigger_tokens": 3_000, "keep_recent_steps": 1, "min_gain_ratio": 0.5}
    settings = Settings(strategy="mock-user", data_dir=None, strategies={"mock-user": section})
    store = Store.open(tmp_path / "s.db")
    session = store.create_session(str(ws), "t", strategy="mock-user")
    events: list[Event] = []
    agent = Agent(store, session, settings, OfflineProvider(settings), ws, events=events.append)
    for question in ("first question", "second question", "third question"):
        agent.run(question)
    said = [e.message for e in events if isinstance(e, BudgetWarning)]
    assert any("under the floor of 1,500" in s and "min_gain_ratio" in s for s in said)
    assert store.compactions(agent.session_id) == []


def test_the_gain_floor_holds_for_what_is_stored(
    store: Store, session_id: int, settings: Settings
) -> None:
    """Seed: "Compact前（total_tokens=155K）… Compact后（total_tokens≈70K）" — a compaction
    shrinks the request. ctxscope's floor (``min_gain_ratio`` of the trigger) was checked
    before the summary call against an empty summary, so the summary's own size was never
    counted (issue 39: with a 4,600-token trigger 5 of 11 stored compactions freed less than
    the floor, one 9 tokens). Two rounds of 600-word answers free about 1,200 tokens with an
    empty summary, over a floor of 1,000 (ratio 1/150 of the 150,000 trigger): the call is
    made; its 400-word summary leaves less than 1,000 freed, so nothing is stored."""
    events: list[Event] = []
    manager = HistoryManager(store, session_id, settings, events.append)
    _answered_rounds(manager, 600)
    strategy = mock_user(keep_recent_steps=1, min_gain_ratio=1 / 150)
    view = PolicyView(history=manager.history, request_tokens=200_000)
    assert strategy.plan(view).compacts  # the floor before the call: cleared
    compressor = SummaryCompressor(_Model(), 5)
    result = manager.compactions.compact(
        strategy, compressor, Trigger.AUTO, None, view, lambda _t: _summary(400)
    )
    assert result.compaction.outcome == Outcome.SKIPPED and result.segment is None
    assert store.compactions(session_id) == [] and not manager.history.summaries
    [said] = [e for e in events if isinstance(e, CompactionFailed)]
    assert "under the floor of 1,000" in said.error
    # a short summary clears it: stored
    strategy = mock_user(keep_recent_steps=1, min_gain_ratio=1 / 150)
    view = PolicyView(history=manager.history, request_tokens=200_000)
    compressor = SummaryCompressor(_Model(), 5)
    result = manager.compactions.compact(
        strategy, compressor, Trigger.AUTO, None, view, lambda _t: _summary(20)
    )
    assert [c.outcome for c in store.compactions(session_id)] == [Outcome.SUCCESS]
