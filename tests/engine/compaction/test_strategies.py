"""Every rule and boundary each seed states, checked on its strategy.

Expected numbers are worked out by hand from the seeds (``../shared/seeds/``), not recomputed
with the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.compaction.extractive import extractive_summary
from engine.compaction.placement import MOCK_USER_PROMPT, reset_hint_text
from engine.compaction.policy import PolicyView, step_units
from engine.compaction.strategies import STRATEGIES, get_strategy
from engine.compaction.strategies.formats import check_xml, extractive_json, extractive_xml
from engine.compaction.strategies.mock_user import cut_long_result
from engine.compaction.summary import SummaryCompressor
from engine.context.builder import ContextBuilder, ScratchResult, ScratchStep, validate_request
from engine.context.history import HistoryManager
from engine.models import Message, MessageMeta, Outcome, Placement, Summary, ToolCall, Trigger
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.builders import write_round


def make(name: str, **sections: dict[str, object]) -> object:
    settings = Settings(context_window=10_000, keep_rounds=3, strategies=sections)
    return get_strategy(name, settings)


def test_the_six_strategies_by_name() -> None:
    assert list(STRATEGIES) == [
        "layered",
        "reset-hint",
        "mock-user",
        "message-window",
        "head-middle-tail",
        "masking",
    ]
    with pytest.raises(ValueError, match="unknown strategy 'lru'"):
        get_strategy("lru", Settings())


# ---------------------------------------------------------------- seed 001: reset-hint
@pytest.mark.parametrize(("usage", "fires"), [(102_400, False), (102_401, True)])
def test_reset_hint_fires_over_80_percent_of_128k(usage: int, fires: bool) -> None:
    strategy = make("reset-hint")
    view = PolicyView(history=_history(), last_usage=usage)
    assert strategy.measure(view).fires is fires  # promptTokens > 128 000 × 0.8 = 102 400


def test_reset_hint_cuts_everything_and_its_hint_is_the_seed_wrapper(
    manager: HistoryManager, settings: Settings
) -> None:
    for n in (1, 2):
        write_round(manager, n)
    strategy = get_strategy("reset-hint", settings)
    cut = strategy.select(PolicyView(history=manager.history))
    assert len(cut) == len(manager.history.messages) == 8  # history = []
    assert reset_hint_text("S") == (
        "[执行历史摘要 - 之前会话已压缩]\n\nS\n\n"
        "注意：以上是对之前执行历史的摘要，你处于重建会话状态。\n"
        "请基于摘要继续完成原始任务，不要重复已完成的操作。"
    )


def test_reset_hint_replaces_the_earlier_hint(
    manager: HistoryManager, settings: Settings, tmp_path: Path
) -> None:
    strategy = get_strategy("reset-hint", settings)
    offline = _Offline()
    write_round(manager, 1)
    first = manager.compactions.compact(strategy, SummaryCompressor(offline, 5), Trigger.AUTO)
    write_round(manager, 2)
    second = manager.compactions.compact(strategy, SummaryCompressor(offline, 5), Trigger.AUTO)
    assert first.summary and second.summary
    active = manager.history.summaries
    assert [s.id for s in active] == [second.summary.id]  # the first hint is gone from L3
    assert second.compaction.stats["superseded_summaries"] == [first.summary.id]
    assert all(f"<{t}>" in active[0].content for t in ("completed", "notes"))
    built = _builder(tmp_path, settings).build(manager.history, [], "next")
    assert built.request.system[-1]["text"].startswith("[执行历史摘要 - 之前会话已压缩]")
    assert not validate_request(built.request)


def test_reset_hint_summary_must_carry_the_four_tags() -> None:
    assert check_xml("<completed>a</completed><remaining>b</remaining>") == (
        "the summary lacks the tags current_state, notes"
    )
    full = extractive_xml([Message(role="user", content="fix the parser")], None)
    assert check_xml(full) is None


# ---------------------------------------------------------------- seed 002: mock-user
def test_mock_user_profiles_and_overrides() -> None:
    assert make("mock-user").numbers == (200_000, 150_000, 3)
    assert make("mock-user", **{"mock-user": {"profile": "execute"}}).numbers == (
        1_000_000,
        700_000,
        5,
    )
    both = make("mock-user", **{"mock-user": {"profile": "execute", "keep_recent_steps": 2}})
    assert both.numbers == (1_000_000, 700_000, 2)


@pytest.mark.parametrize(("total", "fires"), [(150_000, False), (150_001, True)])
def test_mock_user_fires_when_total_is_over_the_trigger(total: int, fires: bool) -> None:
    view = PolicyView(history=_history(), request_tokens=total)
    assert make("mock-user").measure(view).fires is fires  # total_tokens > 150 000


def test_mock_user_projection_drops_old_tool_calls_and_results_together(
    manager: HistoryManager,
) -> None:
    for n in (1, 2, 3):
        write_round(manager, n)  # user, assistant+Edit, tool, final: 4 messages each
    strategy = make("mock-user", **{"mock-user": {"keep_recent_steps": 1}})
    projected, _ = strategy.project(manager.history.messages, [], None)
    # The newest 2 messages (N = 1) are round 3's Edit result and answer; the result keeps
    # its call, so the window reaches back to the Edit step. Every earlier round keeps only
    # its last user and last assistant message: their Edit calls and results are gone together.
    assert [(m.role, m.content[:10]) for m in projected] == [
        ("user", "question 1"),
        ("assistant", "answer 1"),
        ("user", "question 2"),
        ("assistant", "answer 2"),
        ("user", "question 3"),
        ("assistant", "Thought: s"),
        ("tool", '{"status":'),
        ("assistant", "answer 3"),
    ]
    assert [c.id for m in projected for c in m.tool_calls] == ["toolu_3_1"]
    assert [m.meta.tool_use_id for m in projected if m.role == "tool"] == ["toolu_3_1"]


def test_mock_user_keeps_the_last_n_steps_whole(manager: HistoryManager) -> None:
    for n in (1, 2, 3):
        write_round(manager, n)
    strategy = make("mock-user", **{"mock-user": {"keep_recent_steps": 2}})
    projected, _ = strategy.project(manager.history.messages, [], None)
    # 2N = 4 newest messages: round 3's user, Edit step (call + result) and answer
    assert [m.role for m in projected[-4:]] == ["user", "assistant", "tool", "assistant"]
    assert projected[-3].tool_calls[0].id == "toolu_3_1"
    assert [m.content[:10] for m in projected[:4]] == [
        "question 1",
        "answer 1",
        "question 2",
        "answer 2",
    ]


def test_mock_user_cut_keeps_last_n_steps_and_the_round_input(
    manager: HistoryManager, settings: Settings
) -> None:
    write_round(manager, 1)
    rnd, user = manager.open_round("read many files")
    for step in range(1, 6):
        _step(manager, rnd.index, step)
    strategy = make("mock-user", **{"mock-user": {"keep_recent_steps": 2}})
    view = PolicyView(history=manager.history, in_progress=rnd.index)
    cut = strategy.select(view)
    kept = [m for m in manager.history.messages if m not in cut]
    # kept: the round's own input, then its last 2 steps (4 messages)
    assert [m.id for m in kept] == [user.id, *[m.id for m in manager.history.messages[-4:]]]
    assert kept[1].role == "assistant" and kept[2].role == "tool"


def test_mock_user_long_result_cut_is_head_and_tail_of_1000() -> None:
    text = "a" * 1000 + "b" * 4000 + "c" * 1000
    assert cut_long_result(text, 5000) == (
        "a" * 1000 + "\n\n[... 4000 chars omitted ...]\n\n" + "c" * 1000
    )
    assert cut_long_result("x" * 5000, 5000) == "x" * 5000  # only longer than 5 000
    assert cut_long_result(text, 0) == text  # 0 turns it off


def test_mock_user_request_starts_with_the_mock_pair(tmp_path: Path, settings: Settings) -> None:
    summary = Summary(
        session_id=1,
        content=extractive_json([Message(role="user", content="fix it")], None),
        first_round=1,
        last_round=1,
        placement=Placement.MOCK_PAIR,
    )
    history = _history(summaries=[summary], messages=[Message(role="user", content="go on")])
    request = _builder(tmp_path, settings).build(history, [], "").request
    assert request.messages[0]["role"] == "user"
    assert [b["text"] for b in request.messages[0]["content"]] == [MOCK_USER_PROMPT]
    assert request.messages[1]["role"] == "assistant"
    assert "<compact_summary>" in request.messages[1]["content"][0]["text"]
    assert request.messages[2]["content"][0]["text"] == "go on"
    assert not validate_request(request)


# ---------------------------------------------------------------- seed 003: message-window
def _window_history(manager: HistoryManager, rounds: int, extra: list[str]) -> None:
    for n in range(1, rounds + 1):
        write_round(manager, n)
    if extra:
        rnd, _ = manager.open_round("one more")
        for step, _kind in enumerate(extra[1:], 1):
            _step(manager, rnd.index, step)


def test_message_window_does_not_fire_at_60_messages(manager: HistoryManager) -> None:
    _window_history(manager, 15, [])  # 15 rounds × 4 = 60 messages
    strategy = make("message-window")
    assert strategy.measure(PolicyView(history=manager.history)).fires is False


def test_message_window_at_61_keeps_the_last_30(manager: HistoryManager) -> None:
    _window_history(manager, 15, ["user"])  # 61 messages
    strategy = make("message-window")
    view = PolicyView(history=manager.history)
    assert strategy.measure(view).fires is True
    cut = strategy.select(view)
    # index 31 (61 - 30) is round 8's final answer, a step of its own: exactly 30 stay
    assert len(manager.history.messages) - len(cut) == 30


def test_message_window_keeps_a_pair_together_and_so_31(manager: HistoryManager) -> None:
    # A first round with two parallel calls (user, call, result, result, answer: 5), then
    # 14 rounds of 4 = 61 messages. Index 61 - 30 = 31 is the 7th 4-round's tool result
    # ((31 - 5) % 4 == 2), so its call stays too: 31 kept.
    rnd, _ = manager.open_round("two at once")
    calls = [ToolCall(id=f"p{i}", name="LS", input={"path": "."}) for i in (1, 2)]
    manager.append(rnd.index, Message(role="assistant", tool_calls=calls, meta=MessageMeta(step=1)))
    for call in calls:
        manager.append(
            rnd.index,
            Message(
                role="tool", content="{}", meta=MessageMeta(tool_name="LS", tool_use_id=call.id)
            ),
        )
    manager.append(
        rnd.index, Message(role="assistant", content="done", meta=MessageMeta(final=True))
    )
    for n in range(2, 16):
        write_round(manager, n)
    messages = manager.history.messages
    assert len(messages) == 61 and messages[61 - 30].role == "tool"
    cut = make("message-window").select(PolicyView(history=manager.history))
    kept = messages[len(cut) :]
    assert len(kept) == 31 and kept[0].role == "assistant" and kept[0].tool_calls


def test_message_window_summary_is_one_assistant_message(
    tmp_path: Path, settings: Settings
) -> None:
    summary = Summary(
        session_id=1, content="Summary of it", first_round=1, last_round=2,
        placement=Placement.ASSISTANT_MESSAGE,
    )  # fmt: skip
    history = _history(summaries=[summary], messages=[Message(role="user", content="next")])
    request = _builder(tmp_path, settings).build(history, [], "").request
    assert [m["role"] for m in request.messages] == ["user", "assistant", "user"]
    assert request.messages[1]["content"][0]["text"] == "Summary of it"
    assert not validate_request(request)


def test_message_window_log_is_windowed_with_older_entries_merged(tmp_path: Path) -> None:
    from engine.compaction.execution_log import append_run, read_log

    path = tmp_path / "agent-context.jsonl"
    for n in range(1, 6):
        entries = append_run(path, {"requestId": str(n), "toolCalls": [{"tool": "Read"}]}, 3)
    # window 3: the older entries merged into one, the last 3 - 1 = 2 kept
    assert [e["requestId"] for e in entries[1:]] == ["4", "5"]
    assert entries[0]["summary"] is True and entries[0]["merged"] == 3
    assert entries[0]["toolCalls"] == [{"tool": "Read", "count": 3}]
    assert read_log(path) == entries


# ---------------------------------------------------------------- seed 004: head-middle-tail
@pytest.mark.parametrize(("total", "fires"), [(9_199, False), (9_200, True)])
def test_head_middle_tail_fires_at_exactly_the_threshold(total: int, fires: bool) -> None:
    # 10 000 × 0.92 = 9 200; F-002: at the threshold fires (>=)
    view = PolicyView(history=_history(messages=[Message(role="user")]), request_tokens=total)
    assert make("head-middle-tail").measure(view).fires is fires


def test_head_middle_tail_never_fires_on_an_empty_conversation() -> None:
    view = PolicyView(history=_history(), request_tokens=99_999)
    assert make("head-middle-tail").measure(view).fires is False


def test_head_middle_tail_tail_scan_keeps_the_crossing_message_whole(
    manager: HistoryManager,
) -> None:
    for n in (1, 2, 3):
        write_round(manager, n)
    messages = manager.history.messages
    sizes = dict.fromkeys((m.id for m in messages), 100)
    sizes[messages[-2].id] = 2_000  # round 3's tool result
    # tail budget = 10 000 × 0.25 = 2 500: answer 3 (100), then the tool result (2 000,
    # total 2 100), then Edit call (100, total 2 200), then question 3 (100, 2 300), then
    # answer 2 (100, 2 400), then round 2's tool result (100, 2 500 >= 2 500): the scan stops
    # there, and that result's call is kept with it.
    view = PolicyView(history=manager.history, sent_tokens=lambda m: sizes[m.id or 0])
    strategy = make("head-middle-tail")
    assert strategy.tail_start(view) == 6  # round 2's tool result
    cut = strategy.select(view)
    assert [m.id for m in cut] == [m.id for m in messages[:5]]  # round 1 and question 2


HMT_SMALL = {"head-middle-tail": {"context_limit": 400}}
"""A 400-token limit: a tail budget of 100 tokens, so a few rounds have a middle."""


def test_head_middle_tail_retries_then_skips_leaving_history_untouched(
    store: Store, session_id: int
) -> None:
    settings = Settings(strategies=HMT_SMALL)
    manager = HistoryManager(store, session_id, settings)
    for n in (1, 2, 3):
        write_round(manager, n)
    before = store.history(session_id)
    waits: list[float] = []
    broken = _Broken()
    strategy = get_strategy("head-middle-tail", settings)
    result = manager.compactions.compact(
        strategy, SummaryCompressor(broken, 5, sleep=waits.append), Trigger.AUTO
    )
    assert broken.calls == 3  # COMPACT_MAX_RETRIES = 2: one call and two retries
    assert waits == [1.0, 2.0]  # simple doubling backoff
    assert result.compaction.outcome == Outcome.SKIPPED
    assert result.compaction.stats["compacted"] is False
    assert store.history(session_id) == before


def test_head_middle_tail_without_retries_fails_once(store: Store, session_id: int) -> None:
    s = Settings(strategies={"head-middle-tail": {"context_limit": 400, "max_retries": 0}})
    manager = HistoryManager(store, session_id, s)
    for n in (1, 2, 3):
        write_round(manager, n)
    broken = _Broken()
    result = manager.compactions.compact(
        get_strategy("head-middle-tail", s), SummaryCompressor(broken, 5), Trigger.AUTO
    )
    assert broken.calls == 1 and result.compaction.outcome == Outcome.SKIPPED


def test_head_middle_tail_summary_is_a_user_message_and_raw_middle_is_written(
    store: Store, session_id: int, tmp_path: Path
) -> None:
    settings = Settings(strategies=HMT_SMALL)
    manager = HistoryManager(store, session_id, settings, data_dir=tmp_path / "data")
    for n in range(1, 6):
        write_round(manager, n, tools=3)
    strategy = get_strategy("head-middle-tail", settings)
    first = manager.compactions.compact(strategy, SummaryCompressor(_Offline(), 5), Trigger.AUTO)
    assert first.summary is not None and first.summary.placement == Placement.USER_MESSAGE
    stats = first.compaction.stats
    assert stats["compactedMessageCount"] == first.compaction.messages_compacted > 0
    # F-008 "retainedMessageCount — 保留的消息数量（Head + Tail）": the head is the system prompt
    assert stats["retainedMessageCount"] == 1 + len(manager.history.messages)
    assert stats["originalTokenCount"] == first.compaction.tokens_before
    assert stats["compactionRatio"] == pytest.approx(
        first.compaction.tokens_after / first.compaction.tokens_before, abs=1e-4
    )
    path = Path(stats["raw_middle_file"])
    # <data dir>/<database key>/<session>: the store is tmp_path/test.db, a data dir set
    # elsewhere than its own data/ (here the same place, tmp_path/data: the stem alone)
    assert path.parent == tmp_path / "data" / "test" / str(session_id)
    assert path.name.startswith("compact-") and path.name.endswith("-1.json")
    raw = json.loads(path.read_text())
    assert [m["id"] for m in raw] == [m.id for m in first.segment.messages]

    for n in range(6, 9):
        write_round(manager, n, tools=3)
    second = manager.compactions.compact(strategy, SummaryCompressor(_Offline(), 5), Trigger.AUTO)
    assert second.compaction.stats["raw_middle_file"].endswith("-2.json")
    # UC-002: the earlier summary is part of the new middle, so only the new one is active
    assert [s.id for s in manager.history.summaries] == [second.summary.id]
    assert "GOAL AND KEY DECISIONS:" in second.summary.content

    request = _builder(tmp_path, settings).build(manager.history, [], "").request
    assert request.messages[0]["role"] == "user"
    assert request.messages[0]["content"][0]["text"] == second.summary.content
    assert not validate_request(request)


def test_head_middle_tail_raw_middle_failure_does_not_block(
    store: Store, session_id: int, tmp_path: Path
) -> None:
    settings = Settings(strategies=HMT_SMALL)
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the folder should be")
    manager = HistoryManager(store, session_id, settings, data_dir=blocked)
    for n in range(1, 6):
        write_round(manager, n, tools=3)
    result = manager.compactions.compact(
        get_strategy("head-middle-tail", settings), SummaryCompressor(_Offline(), 5), Trigger.AUTO
    )
    assert result.compaction.outcome == Outcome.SUCCESS
    assert result.compaction.stats["raw_middle_file"] is None
    assert "raw_middle_error" in result.compaction.stats


# ---------------------------------------------------------------- masking
def test_masking_keeps_the_last_k_observations_and_masks_older(manager: HistoryManager) -> None:
    for n in (1, 2, 3):
        write_round(manager, n)  # one Edit observation per round
    strategy = make("masking", masking={"keep_last_observations": 2})
    pad = [
        ScratchStep(
            assistant=Message(
                id=999,
                role="assistant",
                tool_calls=[ToolCall(id="t9", name="Read", input={"file_path": "a.py"})],
            ),
            results=[ScratchResult(tool_use_id="t9", tool_name="Read", text="whole file")],
        )
    ]
    projected, steps = strategy.project(manager.history.messages, pad, 4)
    tools = [m.content for m in projected if m.role == "tool"]
    # 4 observations, K = 2: rounds 1 and 2 masked, round 3 and the scratchpad's whole
    assert tools[0] == (
        '[observation masked: Edit{"file_path":"src/mod1.py"}; observation id toolu_1_1. '
        "Older tool results are hidden to save context; run the tool again if needed.]"
    )
    assert tools[1].startswith("[observation masked: Edit")
    assert json.loads(tools[2]) == {"status": "success", "data": {"file": "src/mod3.py"}}
    assert steps[0].results[0].text == "whole file"
    # nothing is archived and no summary is written
    plan = strategy.plan(PolicyView(history=manager.history))
    assert plan.measure.fires and not plan.compacts and plan.cut == []


# ---------------------------------------------------------------- shared rules
def test_step_units_never_split_a_call_from_its_results() -> None:
    msgs = [
        Message(role="user"),
        Message(role="assistant", tool_calls=[ToolCall(id="a", name="LS")]),
        Message(role="tool"),
        Message(role="tool"),
        Message(role="assistant"),
    ]
    assert [len(u) for u in step_units(msgs)] == [1, 3, 1]


@pytest.mark.parametrize("name", ["reset-hint", "mock-user", "message-window", "head-middle-tail"])
def test_no_strategy_cuts_the_round_in_progress_input(
    name: str, manager: HistoryManager, settings: Settings
) -> None:
    write_round(manager, 1)
    rnd, user = manager.open_round("the task in progress")
    for step in range(1, 80):
        _step(manager, rnd.index, step)
    strategy = get_strategy(name, settings)
    view = PolicyView(history=manager.history, in_progress=rnd.index)
    for emergency in (False, True):
        cut = strategy.select(view, emergency=emergency)
        assert user.id not in {m.id for m in cut}
        ids = {m.id for m in cut}
        for unit in step_units(manager.history.messages):
            assert {m.id for m in unit} <= ids or not ({m.id for m in unit} & ids)


def test_extractive_a5_summary_unchanged_for_layered() -> None:
    msgs = [Message(role="user", content="add a flag")]
    assert extractive_summary(msgs).startswith("## 📌 Archived Session Summary")


# ---------------------------------------------------------------- helpers
class _Offline:
    is_model = False

    def summarize(self, messages, prompt, focus, timeout, render=None, **_options):  # type: ignore[no-untyped-def]
        raise AssertionError("offline: the strategy's extractive summary is used")


class _Broken:
    is_model = True

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, messages, prompt, focus, timeout, render=None, **_options):  # type: ignore[no-untyped-def]
        self.calls += 1
        raise RuntimeError("overloaded")


def _history(summaries: list[Summary] | None = None, messages: list[Message] | None = None):  # type: ignore[no-untyped-def]
    from engine.models import History

    return History(summaries=summaries or [], messages=messages or [])


def _builder(tmp_path: Path, settings: Settings) -> ContextBuilder:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ContextBuilder(ws, settings, [])


def _step(manager: HistoryManager, round_index: int, step: int) -> None:
    call = ToolCall(id=f"toolu_r{round_index}_{step}", name="Read", input={"file_path": "x.py"})
    manager.append(
        round_index,
        Message(role="assistant", content="", tool_calls=[call], meta=MessageMeta(step=step)),
    )
    manager.append(
        round_index,
        Message(
            role="tool",
            content=json.dumps({"status": "success", "data": {"lines": step}}),
            meta=MessageMeta(step=step, tool_name="Read", tool_use_id=call.id),
        ),
    )


@pytest.mark.parametrize("name", ["message-window", "head-middle-tail"])
def test_an_extractive_re_compaction_keeps_what_the_earlier_summary_held(
    name: str, tmp_path: Path
) -> None:
    """Offline, every summary is extractive: re-compacting one must still name the file
    read in round 1, archived two compactions ago (its raw messages are in the store)."""
    from engine.llm.offline import OfflineProvider
    from engine.models import Outcome
    from engine.session import Agent

    workspace = tmp_path / "ws"
    workspace.mkdir()
    for n in range(6):
        (workspace / f"file_{n}.py").write_text(f"x = {n}\n" * 30)
    own = {
        "message-window": {"message-window": {"max_messages": 400, "keep_last": 4}},
        "head-middle-tail": {"head-middle-tail": {"tail_retention_ratio": 0.001}},
    }[name]
    settings = Settings(
        model="offline", keep_rounds=1, strategy=name, strategies=own, data_dir=None
    )
    store = Store.open(tmp_path / "s.db")
    session = store.create_session(str(workspace), "t", strategy=name)
    agent = Agent(store, session, settings, OfflineProvider(settings), workspace)
    done = []
    for n in range(6):
        agent.run(f"read file_{n}.py")
        if n in (2, 5):
            done.append(agent.compact().compaction)
    assert [c.outcome for c in done] == [Outcome.SUCCESS, Outcome.SUCCESS]
    (latest,) = [s for s in agent.history.history.summaries if s.active]
    for n in range(5):  # file_5.py may be in the kept tail
        assert f"file_{n}.py" in latest.content, n
