"""The ReAct loop with a scripted provider: steps, pairs, scratchpad, budget, cancel, crash."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from engine.compaction.extractive import extractive_summary
from engine.context.builder import validate_conversation
from engine.events import (
    BudgetWarning,
    CompactionFinished,
    Event,
    RoundFinished,
    RoundInterrupted,
    ToolFinished,
)
from engine.llm.base import ProviderError, ProviderRequest, ProviderResponse, StreamText
from engine.models import Message, MessageMeta, RoundStatus, ToolCall, Trigger, Usage
from engine.session import CRASH_ANSWER, Agent
from engine.settings.config import Settings
from engine.store import Store


def tool_use(id_: str, name: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": inp}


def answer(text: str, *blocks: dict[str, Any], usage: int = 100) -> ProviderResponse:
    content = ([{"type": "text", "text": text}] if text else []) + list(blocks)
    return ProviderResponse(
        content=content,
        stop_reason="tool_use" if blocks else "end_turn",
        usage=Usage(input_tokens=usage, output_tokens=10),
    )


class Scripted:
    """A provider that plays back answers (or raises errors) and records each request."""

    is_model = True

    name = "scripted"
    model = "scripted"

    def __init__(self, script: list[ProviderResponse | Exception]) -> None:
        self.script = list(script)
        self.requests: list[ProviderRequest] = []

    def complete(self, request, on_event, cancel=None):  # type: ignore[no-untyped-def]
        self.requests.append(request.model_copy(deep=True))
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        on_event(StreamText(text=item.text))
        return item

    def summarize(self, messages, prompt, focus, timeout):  # type: ignore[no-untyped-def]
        return extractive_summary(messages, focus)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text("# demo\n" + "".join(f"line {i}\n" for i in range(1, 801)))
    (ws / "src" / "app.py").write_text("def main():\n    return 42  # TODO tidy\n")
    return ws


def make_agent(
    store: Store, workspace: Path, provider: Any, **settings: Any
) -> tuple[Agent, list[Event]]:
    events: list[Event] = []
    session = store.create_session(str(workspace), "t")
    agent = Agent(store, session, Settings(**settings), provider, workspace, events=events.append)
    return agent, events


def wire(agent: Agent) -> list[dict[str, Any]]:
    return agent.preview("").request.messages


def test_round_with_parallel_tools_stores_compressed_steps_and_full_observations(
    store: Store, workspace: Path
) -> None:
    provider = Scripted(
        [
            answer(
                "Thought: read both.",
                tool_use("t1", "Read", file_path="README.md"),
                tool_use("t2", "Grep", pattern="TODO", path="."),
            ),
            answer("README has 801 lines; one TODO in src/app.py."),
        ]
    )
    agent, events = make_agent(store, workspace, provider)
    outcome = agent.run("what is in @README.md?")

    assert outcome.status is RoundStatus.FINISHED and outcome.steps == 2
    assert outcome.answer == "README has 801 lines; one TODO in src/app.py."
    msgs = agent.history.history.messages
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "tool", "assistant"]
    assert "<system-reminder>" in msgs[0].content  # @file reminder appended to the input
    assert [m.meta.tool_use_id for m in msgs[2:4]] == ["t1", "t2"]
    assert msgs[-1].meta.final

    read_hist = json.loads(msgs[2].content)
    assert read_hist["status"] == "success" and "text" not in read_hist
    obs = store.observations(agent.session_id)
    assert [o.tool_use_id for o in obs] == ["t1", "t2"]
    # the full observation the model saw: 500 lines (the last one is "line 499")
    assert "\tline 499\n" in obs[0].text and "\tline 500" not in obs[0].text
    assert obs[0].tokens_full > 0 and obs[0].tokens_compressed > 0

    # the second request carried the full observations (scratchpad), not the compressed ones
    second = provider.requests[1].messages
    results = [b for b in second[-1]["content"] if b.get("type") == "tool_result"]
    assert [b["tool_use_id"] for b in results] == ["t1", "t2"]
    assert "line 499" in json.dumps(results[0]["content"])
    assert agent.scratchpad == [] and len(agent.last_scratchpad) == 1
    assert validate_conversation(wire(agent)) == []
    assert [e.type for e in events if isinstance(e, (ToolFinished, RoundFinished))] == [
        "tool_finished",
        "tool_finished",
        "round_finished",
    ]
    assert [u.usage.input_tokens for u in store.usages(agent.session_id)] == [100, 100]


def test_next_round_sees_compressed_history_of_the_previous_one(
    store: Store, workspace: Path
) -> None:
    provider = Scripted(
        [
            answer("", tool_use("t1", "Read", file_path="README.md")),
            answer("done"),
            answer("second answer"),
        ]
    )
    agent, _ = make_agent(store, workspace, provider)
    agent.run("read @README.md")
    agent.run("and now?")
    third = provider.requests[2].messages
    first_result = third[2]["content"][0]
    assert first_result["type"] == "tool_result"
    assert first_result["content"] == agent.history.history.messages[2].content  # compressed
    assert third[-1]["role"] == "user"


def test_budget_rule_compacts_before_the_round(store: Store, workspace: Path) -> None:
    script: list[ProviderResponse | Exception] = [answer(f"a{i}", usage=50) for i in range(4)]
    script.append(answer("big", usage=900))
    script.append(answer("after compaction", usage=100))
    provider = Scripted(script)
    agent, events = make_agent(store, workspace, provider, context_window=1000, keep_rounds=2)
    for i in range(5):
        agent.run(f"question {i}")
    assert not [e for e in events if isinstance(e, CompactionFinished)]
    agent.run("x" * 30)  # 900 + 10 >= 800 → compaction first
    done = [e for e in events if isinstance(e, CompactionFinished)]
    assert len(done) == 1 and done[0].compaction.trigger == Trigger.AUTO
    assert {m.meta.round for m in agent.history.history.messages} == {4, 5, 6}
    assert len(agent.history.history.summaries) == 1


def test_budget_warning_when_kept_rounds_alone_exceed(store: Store, workspace: Path) -> None:
    provider = Scripted([answer("a", usage=50), answer("b", usage=990), answer("c")])
    agent, events = make_agent(store, workspace, provider, context_window=1000, keep_rounds=5)
    agent.run("one")
    agent.run("two")
    agent.run("three")
    warnings = [e for e in events if isinstance(e, BudgetWarning)]
    assert len(warnings) == 1 and "last 5 rounds" in warnings[0].message
    assert not [e for e in events if isinstance(e, CompactionFinished)]


def test_prompt_too_long_compacts_and_retries_once(store: Store, workspace: Path) -> None:
    provider = Scripted(
        [
            answer("a"),
            answer("b"),
            answer("c"),
            ProviderError("prompt_too_long", "prompt is too long: 210000 tokens"),
            answer("fits now"),
        ]
    )
    agent, events = make_agent(store, workspace, provider, keep_rounds=2)
    for q in ("one", "two", "three"):
        agent.run(q)
    outcome = agent.run("four")
    assert outcome.status is RoundStatus.FINISHED and outcome.answer == "fits now"
    done = [e for e in events if isinstance(e, CompactionFinished)]
    assert done and done[0].compaction.trigger == Trigger.EMERGENCY
    assert len(provider.requests) == 5
    assert 4 in {m.meta.round for m in agent.history.history.messages}


def test_auth_error_ends_round_cleanly(store: Store, workspace: Path) -> None:
    provider = Scripted(
        [
            answer("", tool_use("t1", "LS", path=".")),
            ProviderError("auth", "invalid x-api-key: check ANTHROPIC_API_KEY", status=401),
        ]
    )
    agent, events = make_agent(store, workspace, provider)
    outcome = agent.run("ls")
    assert outcome.status is RoundStatus.ERROR and "ANTHROPIC_API_KEY" in (outcome.error or "")
    assert [e.type for e in events if e.type == "error"] == ["error"]
    assert store.rounds(agent.session_id)[0].status is RoundStatus.ERROR
    assert validate_conversation(wire(agent)) == []


def test_step_limit_ends_a_runaway_round(store: Store, workspace: Path) -> None:
    provider = Scripted([answer("", tool_use(f"t{i}", "LS", path=".")) for i in range(3)])
    agent, _ = make_agent(store, workspace, provider, max_steps=3)
    outcome = agent.run("loop forever")
    assert outcome.status is RoundStatus.ERROR
    assert "Stopped after 3 steps" in (outcome.error or "")
    assert validate_conversation(wire(agent)) == []


def test_cancel_mid_tool_leaves_a_valid_conversation(store: Store, workspace: Path) -> None:
    provider = Scripted(
        [
            answer(
                "",
                tool_use("t1", "Bash", command="touch started; sleep 30"),
                tool_use("t2", "LS", path="."),
            ),
        ]
    )
    agent, events = make_agent(store, workspace, provider, bash_policy="allow")
    result: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: result.update(out=agent.run("run `sleep 30`")))
    runner.start()
    deadline = time.monotonic() + 10
    while not any(e.type == "tool_started" for e in events) and time.monotonic() < deadline:
        time.sleep(0.02)
    while not (workspace / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.02)  # the command runs
    agent.cancel()
    runner.join(15)
    assert not runner.is_alive()
    assert result["out"].status is RoundStatus.INTERRUPTED
    msgs = agent.history.history.messages
    tools = {m.meta.tool_use_id: m for m in msgs if m.role == "tool"}
    assert set(tools) == {"t1", "t2"}  # both tool_use blocks are paired
    assert tools["t2"].meta.interrupted
    assert msgs[-1].meta.interrupted and msgs[-1].meta.final
    assert any(isinstance(e, RoundInterrupted) for e in events)
    assert store.rounds(agent.session_id)[0].status is RoundStatus.INTERRUPTED
    assert validate_conversation(wire(agent)) == []


def test_restart_marks_a_crashed_round_interrupted(store: Store, workspace: Path) -> None:
    session = store.create_session(str(workspace), "crashed")
    assert session.id is not None
    store.open_round(session.id, Message(role="user", content="do it"))
    store.append_message(
        session.id,
        1,
        Message(
            role="assistant",
            content="Thought: go",
            tool_calls=[ToolCall(id="t9", name="LS", input={"path": "."})],
            meta=MessageMeta(step=1),
        ),
    )
    agent = Agent(store, session, Settings(), Scripted([]), workspace)
    assert store.rounds(session.id)[0].status is RoundStatus.INTERRUPTED
    msgs = agent.history.history.messages
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert msgs[2].meta.tool_use_id == "t9" and msgs[2].meta.is_error
    assert msgs[3].content == CRASH_ANSWER
    assert validate_conversation(wire(agent)) == []
