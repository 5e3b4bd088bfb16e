"""Seed 003 (``message-window``), issue 20: deviations 7, 8, 11 and 14, each checked against
the seed's own words (``/work/shared/seeds/003_fdb0470445deb778.txt``, quoted in each test).

7. a merged log entry's ``requestId`` stays flat however many merges it goes through;
8. messages are counted as the seed's runtime holds them (a step's results are one message);
11. the log keeps a summary of each call (not its input) and ``hadToolFailure``;
14. the two loading tools, offered only with this strategy, and what they inject.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.compaction.execution_log import append_run, read_log, run_entry
from engine.compaction.policy import PolicyView
from engine.compaction.strategies import get_strategy
from engine.compaction.strategies.message_window import seed_message_count
from engine.context.builder import ContextBuilder, validate_request
from engine.context.history import HistoryManager
from engine.llm.anthropic import AnthropicProvider
from engine.llm.base import ProviderRequest
from engine.messages.tokens import count_request
from engine.models import History, Message, MessageMeta, RoundStatus, ToolCall
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.compaction.scripted import Scripted, answer, tool_use
from tests.fakes.anthropic_server import (  # noqa: F401  (the fixture)
    FAKE_API_KEY,
    FakeAnthropicServer,
    fake_anthropic,
    text_reply,
    tool_reply,
)
from tools.registry import default_registry

LOADERS = ["chat_load_history", "agent_load_context"]


# ----------------------------------------------------------------------------- helpers
@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    for n in range(5):
        (ws / "src" / f"m{n}.py").write_text(f"X = {n}\n")
    return ws


def make_agent(
    store: Store, workspace: Path, provider: Any, strategy: str = "message-window", **kw: Any
) -> Agent:
    settings = Settings(strategy=strategy, validate_requests=True, **kw)
    session = store.create_session(str(workspace), "t", strategy=strategy)
    return Agent(store, session, settings, provider, workspace)


def tool_names(request: ProviderRequest) -> list[str]:
    return [t["name"] for t in request.tools]


def texts(message: dict[str, Any]) -> list[str]:
    return [b["text"] for b in message["content"] if b.get("type") == "text"]


def five_call_round(manager: HistoryManager, n: int) -> None:
    """A round of one step with five parallel calls: user, assistant, 5 results, answer."""
    rnd, _ = manager.open_round(f"question {n}")
    calls = [
        ToolCall(id=f"t{n}_{i}", name="Read", input={"file_path": f"m{i}.py"}) for i in range(5)
    ]
    manager.append(rnd.index, Message(role="assistant", tool_calls=calls, meta=MessageMeta(step=1)))
    for call in calls:
        meta = MessageMeta(step=1, tool_name="Read", tool_use_id=call.id)
        manager.append(rnd.index, Message(role="tool", content="{}", meta=meta))
    final = MessageMeta(step=2, final=True)
    manager.append(rnd.index, Message(role="assistant", content=f"answer {n}", meta=final))
    manager.finish_round(rnd.index, RoundStatus.FINISHED)


# ------------------------------------------------------------ 8: how messages are counted
def test_a_step_with_five_parallel_calls_is_two_messages(manager: HistoryManager) -> None:
    """Seed 2.2: ``history.push({ role: "user", content: userText })`` then
    ``history.push(...result.response.messages)`` — the run's user input, then the response
    messages, which hold per step one assistant message (its text and tool calls) and one
    tool message with every result of that step. So the round below is
    user + assistant + tool + final answer = 4 messages, not 8."""
    five_call_round(manager, 1)
    messages = manager.history.messages
    assert len(messages) == 8  # as ctxscope stores them: each result on its own row
    assert seed_message_count(messages) == 4
    strategy = get_strategy("message-window", Settings())
    assert strategy.measure(PolicyView(history=manager.history)).value == 4


def test_the_window_counts_as_the_seed_does(manager: HistoryManager) -> None:
    """Seed 2.2: "超过 ``inMemoryMaxMessages``（默认 60）时 ``compactChatHistory(chatKey,
    { keepLast })``（默认保留最后 30 条）" — past 60 messages (default), compact keeping the
    last 30 (default).

    15 such rounds are 15 × 4 = 60 seed messages (120 rows): not past 60, no compaction. One
    more user input makes 61: it fires, and the last 30 seed messages are kept — the new input
    (1), rounds 9-15 (7 × 4 = 28) and round 8's final answer (1)."""
    for n in range(1, 16):
        five_call_round(manager, n)
    strategy = get_strategy("message-window", Settings())
    assert len(manager.history.messages) == 120
    assert strategy.measure(PolicyView(history=manager.history)).fires is False

    manager.open_round("one more")
    view = PolicyView(history=manager.history)
    measure = strategy.measure(view)
    assert (measure.value, measure.fires) == (61, True)
    messages = manager.history.messages
    cut = strategy.select(view)
    kept = messages[len(cut) :]
    assert seed_message_count(kept) == 30
    assert kept[0].content == "answer 8" and kept[0].meta.round == 8
    assert len(kept) == 1 + 7 * 8 + 1  # as rows


def test_the_agent_does_not_compact_a_parallel_step_as_six_messages(
    store: Store, workspace: Path
) -> None:
    """Seed 2.2 ("超过 inMemoryMaxMessages … 时") with ``max_messages`` 4: a run of one step
    with five parallel calls pushes user + assistant + tool + answer = 4 messages, not more
    than 4, so no compaction (counting each result would make 8 and compact)."""
    calls = [tool_use(f"r{i}", "Read", file_path=f"src/m{i}.py") for i in range(5)]
    provider = Scripted([answer("reading all five", *calls), answer("X is 0 to 4")])
    agent = make_agent(
        store,
        workspace,
        provider,
        strategies={"message-window": {"max_messages": 4, "keep_last": 2}},
    )
    agent.run("read the five modules")
    assert len(agent.history.history.messages) == 8
    assert store.compactions(agent.session_id) == []


# ------------------------------------------------------------ 7: a merged entry stays flat
def test_merged_entries_keep_a_flat_request_id(tmp_path: Path) -> None:
    """Seed 2.3: "超过 ``windowEntries``（默认 200）时 … 策略：把更早的 entries 合并成 1 条
    summary entry，保留最近 ``window-1`` 条" — past the window, the older entries are merged
    into one summary entry and the last window - 1 kept.

    With a window of 3, ten runs merge eight times; the summary entry stands for runs r1..r8
    and its requestId names that range once, with no ``summary:`` nested in it."""
    path = tmp_path / "agent-context.jsonl"
    for n in range(1, 11):
        entries = append_run(path, run_entry(f"r{n}", f"ask {n}", f"done {n}", []), 3)
    assert len(entries) == 3
    assert entries[0]["requestId"] == "summary:r1..r8"
    assert entries[0]["merged"] == 8
    assert [e["requestId"] for e in entries[1:]] == ["r9", "r10"]
    assert "summary:" not in path.read_text().replace('"requestId": "summary:r1..r8"', "")


def test_a_nested_id_from_an_older_log_is_flattened(tmp_path: Path) -> None:
    """Seed 2.3 ("把更早的 entries 合并成 1 条 summary entry"): a log written before the fix
    holds ``summary:summary:r1..r5..r7``; the next merge names runs r1 to r8, flat."""
    path = tmp_path / "agent-context.jsonl"
    nested = {"requestId": "summary:summary:r1..r5..r7", "summary": True, "merged": 7}
    path.write_text(json.dumps(nested) + "\n" + json.dumps(run_entry("r8", "", "", [])) + "\n")
    entries = append_run(path, run_entry("r9", "", "", []), 2)
    assert entries[0]["requestId"] == "summary:r1..r8"
    assert entries[0]["merged"] == 8


# ------------------------------------------------- 11: a summary of the calls, failure flag
def test_the_log_keeps_a_summary_of_each_call_and_the_failure_flag(
    store: Store, workspace: Path
) -> None:
    """Seed 2.3: "每次 run 完成后，将 ``{requestId, userPreview, outputPreview, toolCalls摘要}``
    写入" — after each run, write the requestId, previews and a *summary* of the tool calls;
    seed 4.2: "若 tool output 形如 ``{ success: false, error/stderr }``，会记录
    ``hadToolFailure``" — a failed tool output is recorded as hadToolFailure.

    A Write of 5 000 characters is logged as a one-line preview, not its content; a Read of a
    file that does not exist fails, so the entry says hadToolFailure."""
    content = "print('hello')\n" * 334  # 5 010 characters
    provider = Scripted(
        [
            answer(
                "write it, read another",
                tool_use("w1", "Write", file_path="src/new.py", content=content),
                tool_use("r1", "Read", file_path="src/missing.py"),
            ),
            answer("written; the other file does not exist"),
        ]
    )
    agent = make_agent(store, workspace, provider, edit_policy="allow")
    agent.run("write src/new.py and read src/missing.py")

    [entry] = read_log(agent.execution_log_path)
    assert set(entry) >= {"requestId", "userPreview", "outputPreview", "toolCalls"}
    write, read = entry["toolCalls"]
    assert (write["tool"], write["ok"]) == ("Write", True)
    assert (read["tool"], read["ok"]) == ("Read", False)
    assert len(write["input"]) <= 200 and content not in write["input"]
    assert write["input"].startswith("file_path=src/new.py, content=print('hello')")
    assert "5,009 chars" in write["input"]  # whitespace runs folded to one space
    assert entry["hadToolFailure"] is True


def test_a_merged_entry_keeps_the_failures_of_what_it_merged(tmp_path: Path) -> None:
    """Seed 4.2 ("会记录 hadToolFailure") with seed 2.3's merge: the summary entry standing
    for a run that failed still says so, and counts the failed calls per tool."""
    path = tmp_path / "agent-context.jsonl"
    append_run(path, run_entry("r1", "", "", [("Bash", {"command": "false"}, False)]), 2)
    append_run(path, run_entry("r2", "", "", [("Bash", {"command": "true"}, True)]), 2)
    entries = append_run(path, run_entry("r3", "", "", []), 2)
    assert entries[0]["hadToolFailure"] is True
    assert entries[0]["toolCalls"] == [{"tool": "Bash", "count": 2, "failed": 1}]
    assert entries[1]["hadToolFailure"] is False


# ---------------------------------------------------------------- 14: the loading tools
@pytest.mark.parametrize(("strategy", "offered"), [("message-window", True), ("layered", False)])
def test_the_loading_tools_are_offered_with_message_window_only(
    store: Store, workspace: Path, strategy: str, offered: bool
) -> None:
    """Seed 4.1: "合并 builtin 工具： … ``chat_load_history`` … ``agent_load_context``" — the
    runtime of seed 003 assembles both into its tool set; ctxscope offers them while the
    message-window strategy is on, and only then."""
    provider = Scripted([answer("hello")])
    agent = make_agent(store, workspace, provider, strategy=strategy)
    agent.run("hi")
    names = tool_names(provider.requests[0])
    assert all((n in names) is offered for n in LOADERS)
    assert names[:10] == ["LS", "Glob", "Grep", "Read", "Edit", "MultiEdit", "Write", "Bash",
                          "TodoWrite", "Recall"]  # fmt: skip


def test_chat_load_history_injects_one_assistant_message_before_the_input(
    store: Store, workspace: Path
) -> None:
    """Seed 5.1: "注入形态：合并为 **一条 assistant message**，插入到当前 user message 之前" —
    the transcript, merged into ONE assistant message, inserted before the current user
    message; seed 3: "永远不改写用户原始输入" — the user's input is never rewritten.

    Two earlier rounds are compacted away first; the transcript still holds them (the chat is
    a separate chain from the in-memory history), and the injection lasts this run only."""
    provider = Scripted(
        [
            answer("one"),
            answer("two"),
            answer("", tool_use("h1", "chat_load_history", count=4)),
            answer("you first asked: first question"),
            answer("ok"),
        ]
    )
    agent = make_agent(store, workspace, provider)
    agent.run("first question about @src/m0.py")
    agent.run("second question")
    agent.compact(keep_rounds=0)
    assert agent.history.history.messages == []  # both rounds archived

    agent.run("what did I ask first?")
    after = provider.requests[3]
    assert validate_request(after) == []
    roles = [m["role"] for m in after.messages]
    # opener, the summary turn (with the transcript merged in: the API allows no two assistant
    # turns in a row), the question, the chat_load_history call, its result
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    summary_turn, question_turn = after.messages[1], after.messages[2]
    assert texts(question_turn) == ["what did I ask first?"]  # the input, unchanged
    injected = [t for t in texts(summary_turn) if t.startswith("Earlier chat of this session")]
    assert len(injected) == 1 and texts(summary_turn)[-1] == injected[0]  # the last before it
    assert injected[0].splitlines()[2:] == [
        "user: first question about @src/m0.py",  # as typed: the @file reminder is not chat
        "assistant: one",
        "user: second question",
        "assistant: two",
    ]
    assert not any("Earlier chat" in t for t in texts(after.messages[3]))

    agent.run("thanks")
    last = provider.requests[4]
    assert not any("Earlier chat of this session" in t for m in last.messages for t in texts(m))


def test_chat_load_history_injects_the_same_part_once_per_run(
    store: Store, workspace: Path
) -> None:
    """Seed 3: "防止单次 run 无边界膨胀：去重 + 上限 maxInjectedMessages" — within a run,
    injections are de-duplicated (and capped): asking twice for the same part of the chat
    injects it once, and the second call says it is already there."""
    provider = Scripted(
        [
            answer("one"),
            answer("", tool_use("h1", "chat_load_history")),
            answer("", tool_use("h2", "chat_load_history")),
            answer("done"),
        ]
    )
    agent = make_agent(store, workspace, provider)
    agent.run("first question")
    agent.run("remind me")
    last = provider.requests[-1]
    injected = [t for m in last.messages for t in texts(m) if t.startswith("Earlier chat")]
    assert len(injected) == 1
    results = store.observations(agent.session_id)
    assert [o.result["data"]["inserted"] for o in results] == [1, 0]
    assert results[1].result["data"]["reason"] == "duplicate"


def test_agent_load_context_injects_the_log_as_a_system_message(
    store: Store, workspace: Path
) -> None:
    """Seed 5.2: "来源：.ship/memory/agent-context/<chatKey>.jsonl（ContextStore 写入）…
    注入形态：**system message**" — the execution log the runs wrote, injected as a system
    message. The Messages API has no system role among ``messages``: ctxscope puts it in the
    ``system`` parameter, as one more block after the others, for this run's requests only.
    (The first run's Bash call fails: bash_policy ``ask`` with no one to ask refuses it.)"""
    provider = Scripted(
        [
            answer("", tool_use("b1", "Bash", command="exit 3")),
            answer("the command failed"),
            answer("", tool_use("c1", "agent_load_context")),
            answer("the first run's command failed"),
        ]
    )
    agent = make_agent(store, workspace, provider)
    agent.run("run exit 3")
    agent.run("what happened before?")
    before, after = provider.requests[2], provider.requests[3]
    assert validate_request(after) == []
    assert len(after.system) == len(before.system) + 1
    block = after.system[-1]["text"]
    assert block.startswith("Agent execution context")
    assert f"--- run {agent.session_id}-1" in block
    assert "user: run exit 3" in block and "hadToolFailure: true" in block
    assert "tools: Bash(command=exit 3) failed" in block
    assert "cache_control" not in after.system[-1]
    assert all(m["role"] in ("user", "assistant") for m in after.messages)
    assert not any("Agent execution context" in t for m in after.messages for t in texts(m))
    preview = agent.preview()
    assert len(preview.request.system) == len(before.system)  # gone once the run ended


def test_both_injections_pass_the_strict_fake_messages_api(
    fake_anthropic: FakeAnthropicServer,  # noqa: F811  (the fixture imported above)
    store: Store,
    workspace: Path,
) -> None:
    """Seed 5 (``chat_load_history``: assistant 注入; ``agent_load_context``: system 注入),
    sent through the Anthropic provider to the local fake Messages API, which refuses what the
    real one refuses: every request is accepted, the last carries both injections."""
    fake_anthropic.script(
        [
            text_reply("hello there"),
            tool_reply(("chat_load_history", {}), ("agent_load_context", {}), text="loading"),
            text_reply("you said hi"),
        ]
    )
    settings = Settings(strategy="message-window", validate_requests=True, max_retries=0)
    provider = AnthropicProvider(settings, api_key=FAKE_API_KEY, base_url=fake_anthropic.url)
    session = store.create_session(str(workspace), "t", strategy="message-window")
    agent = Agent(store, session, settings, provider, workspace)
    agent.run("hi")
    outcome = agent.run("what did I say?")

    assert outcome.answer == "you said hi"
    assert fake_anthropic.refused == []
    body = fake_anthropic.requests[-1].body
    assert body["system"][-1]["text"].startswith("Agent execution context")
    assistant_texts = [
        b["text"] for m in body["messages"] if m["role"] == "assistant" for b in m["content"]
        if b.get("type") == "text"
    ]  # fmt: skip
    assert any(t.startswith("Earlier chat of this session") for t in assistant_texts)
    assert {t["name"] for t in body["tools"]} >= set(LOADERS)


def test_an_injected_system_text_is_counted_and_after_the_breakpoints(
    tmp_path: Path, settings: Settings
) -> None:
    """Seed 3: "``systemMessageInsertIndex``: system message 应插入的位置（保证 system 聚合在
    顶部）" — injected system messages join the system ones at the top. On the wire that is
    one more ``system`` block, after the cached prefix (no breakpoint of its own), counted in
    the request's total like every other block."""
    builder = ContextBuilder(tmp_path, settings, default_registry().schemas())
    turns = [Message(role="user", content="hi"), Message(role="assistant", content="hello")]
    history = History(messages=turns)
    plain = builder.build(history, [], "next")
    injected = builder.build(history, [], "next", injected_system=["Agent execution context x"])
    request = injected.request
    assert request.system[:-1] == plain.request.system
    assert request.system[-1] == {"type": "text", "text": "Agent execution context x"}
    assert injected.total == count_request(request.system, request.messages, request.tools)
    assert injected.layers["L3 summaries"] > plain.layers["L3 summaries"]
    assert injected.total - plain.total == (
        injected.layers["L3 summaries"] - plain.layers["L3 summaries"]
    )
