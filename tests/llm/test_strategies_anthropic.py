"""Strategies with a model writing the summaries, against the local fake Messages API (which
refuses malformed conversations as the real one does)."""

from __future__ import annotations

from pathlib import Path

from engine.compaction.placement import MOCK_USER_PROMPT
from engine.llm.anthropic import AnthropicProvider
from engine.models import Outcome, Placement, RoundStatus
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store
from tests.fakes.anthropic_server import (
    FakeAnthropicServer,
    error_reply,
    refusals,
    text_reply,
    tool_reply,
)


def agent_on(server: FakeAnthropicServer, tmp_path: Path, settings: Settings) -> Agent:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n" * 50)
    store = Store.open(tmp_path / "s.db")
    session = store.create_session(str(ws), "t", strategy=settings.strategy)
    provider = AnthropicProvider(settings, api_key="sk-test", base_url=server.url)
    return Agent(store, session, settings, provider, ws)


def test_the_fake_refuses_what_the_api_refuses() -> None:
    use = {"type": "tool_use", "id": "t1", "name": "LS", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}
    good = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    tools = [{"name": "LS", "description": "list", "input_schema": {"type": "object"}}]
    assert refusals({"messages": good, "tools": tools}) == []
    assert any("must define tools" in p for p in refusals({"messages": good}))
    sampled = {"messages": good, "tools": tools, "temperature": 0.0}
    assert refusals(sampled) == ["temperature: Extra inputs are not permitted"]
    twice = [*good, {"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    assert any("duplicate tool_use id t1" in p for p in refusals({"messages": twice}))
    orphan = [{"role": "user", "content": [result]}]
    assert any("answers no tool_use" in p for p in refusals({"messages": orphan}))
    same = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    assert any("two user messages in a row" in p for p in refusals({"messages": same}))
    empty = [{"role": "user", "content": []}]
    assert any("empty content" in p for p in refusals({"messages": empty}))


def test_mock_user_asks_the_live_conversation_and_stores_the_answer(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    settings = Settings(
        strategy="mock-user",
        # no gain floor: the re-compaction below frees only a few tokens, and this test is
        # about re-compaction itself (the floor has its own, test_seed_002)
        strategies={
            "mock-user": {"trigger_tokens": 500, "keep_recent_steps": 1, "min_gain_ratio": 0}
        },
        max_retries=0,
    )
    agent = agent_on(fake_anthropic, tmp_path, settings)
    summary = '{"current_progress": "read a.py", "pending_actions": []}'
    fake_anthropic.script(
        [
            tool_reply(("Read", {"file_path": "a.py"}), text="Reading."),
            text_reply("a.py sets x."),
            # before round 2's first request the 500-token trigger fires: everything but the
            # last step goes, summarised by the live conversation plus the mock user turn
            text_reply('{"current": "first"}'),
            tool_reply(("Read", {"file_path": "a.py"}), text="Again."),
            # the 500-token trigger is below L1 alone: before the next request it fires again
            # and re-compacts the first summary with what came since
            text_reply(summary),
            text_reply("done"),
        ]
    )
    assert agent.run("read a.py").status == RoundStatus.FINISHED
    assert agent.run("read it again").status == RoundStatus.FINISHED
    assert fake_anthropic.refused == []
    compaction_call = fake_anthropic.requests[2].body
    texts = [b["text"] for b in compaction_call["messages"][-1]["content"]]
    assert texts == ["read it again", MOCK_USER_PROMPT]  # the live request + the mock turn
    assert compaction_call["messages"][-2]["content"][0]["text"] == "a.py sets x."
    after = fake_anthropic.requests[3].body["messages"]
    assert after[0]["content"][0]["text"] == MOCK_USER_PROMPT
    assert after[1]["content"][0]["text"] == '{"current": "first"}'
    second = fake_anthropic.requests[4].body["messages"]
    # the live step (its result as text: the summary call sends no tools), then the mock turn
    assert second[-1]["content"][0]["text"].startswith("Observation: ")
    assert second[-1]["content"][-1]["text"] == MOCK_USER_PROMPT
    [summ] = agent.history.history.summaries  # the first one was re-compacted
    assert summ.content == summary and summ.placement == Placement.MOCK_PAIR
    last = fake_anthropic.requests[5].body["messages"]
    assert last[1]["content"][0]["text"] == summary


def test_head_middle_tail_skips_after_failed_summary_calls(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    settings = Settings(
        strategy="head-middle-tail",
        context_window=5_000,
        strategies={"head-middle-tail": {"tail_retention_ratio": 0.05, "max_retries": 1}},
        max_retries=0,
    )
    agent = agent_on(fake_anthropic, tmp_path, settings)
    agent.summaries.sleep = lambda _s: None  # no real waits between the retries
    fake_anthropic.script([tool_reply(("Read", {"file_path": "a.py"})), text_reply("ok")])
    assert agent.run("read a.py").status == RoundStatus.FINISHED
    big = "word " * 4_000
    fake_anthropic.script(
        [
            error_reply(529, "overloaded", error_type="overloaded_error"),
            error_reply(529, "overloaded", error_type="overloaded_error"),
            text_reply("answered without compacting"),
        ]
    )
    before = agent.history.history.messages
    assert agent.run(big).status == RoundStatus.FINISHED
    [skipped] = agent.store.compactions(agent.session_id)
    assert skipped.outcome == Outcome.SKIPPED and skipped.stats["compacted"] is False
    assert agent.history.history.messages[: len(before)] == before
    assert fake_anthropic.refused == []
