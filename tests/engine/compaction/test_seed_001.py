"""Seed 001 (``reset-hint``): the summary call is the seed's ``compressHistory`` and its answer is
used as it comes (issue 20, deviation 10).

Expected texts are the seed's own (``001_bd0e20770b3e665a.txt``), copied from its code.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.compaction.strategies.formats import RESET_HINT_SPEC
from engine.compaction.summary import SummaryCompressor
from engine.compaction.summary_call import ProviderSummariser
from engine.events import CompactionFinished, Event, Notice
from engine.llm.anthropic import AnthropicProvider
from engine.models import Message, MessageMeta, Outcome, Placement
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store
from tests.fakes.anthropic_server import (
    FakeAnthropicServer,
    prompt_too_long_reply,
    text_reply,
)

COMPRESS_SYSTEM = (
    "你是一个 Agent 执行历史压缩器。"
    "将以下执行历史总结为结构化摘要，输出格式如下（使用 XML 标签）：\n"
    "\n"
    "<completed>...</completed>\n"
    "<remaining>...</remaining>\n"
    "<current_state>...</current_state>\n"
    "<notes>...</notes>"
)
"""The seed's ``COMPRESS_SYSTEM`` template literal, after its ``.trim()``."""

HINT_HEAD = "[执行历史摘要 - 之前会话已压缩]"


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    """A fake Messages API on 127.0.0.1."""
    with FakeAnthropicServer() as fake:
        yield fake


def _agent(store: Store, tmp_path: Path, server: FakeAnthropicServer) -> tuple[Agent, list[Event]]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = Settings()
    session = store.create_session(str(workspace), "t", strategy="reset-hint")
    provider = AnthropicProvider(settings, api_key="sk-test", base_url=server.url, model="m")
    events: list[Event] = []
    agent = Agent(store, session, settings, provider, workspace, events=events.append)
    return agent, events


def test_the_summary_call_is_compress_system_over_history_text_alone(
    store: Store, tmp_path: Path, server: FakeAnthropicServer
) -> None:
    """The seed's call, nothing added (no time header, no ``<archive>`` tags):

    ``generateText({ model, system: COMPRESS_SYSTEM, prompt: historyText, maxSteps: 1 })``
    (the summary call: COMPRESS_SYSTEM as the system prompt, the history text as the prompt),
    with ``historyText = history.map(m => `[${m.role}]\\n${content}`).join('\\n\\n---\\n\\n')``
    (each message as ``[role]``, a newline and its content, joined by ``---`` lines).
    """
    server.script(
        [
            text_reply("Fixed the bug.", usage={"input_tokens": 102_401, "output_tokens": 5}),
            text_reply("<completed>fixed</completed>"),
        ]
    )
    agent, _ = _agent(store, tmp_path, server)
    agent.run("fix the bug")

    summary_call = server.requests[1].body
    assert summary_call["system"] == [{"type": "text", "text": COMPRESS_SYSTEM}]
    assert summary_call["messages"] == [
        {"role": "user", "content": "[user]\nfix the bug\n\n---\n\n[assistant]\nFixed the bug."}
    ]


def test_the_summary_call_asks_the_summary_model(
    store: Store, tmp_path: Path, server: FakeAnthropicServer
) -> None:
    """Issue 32, seed 000 C2 "调用新的模型会话（可配置模型，默认使用当前模型）" (a new model call,
    the model configurable, by default the current one): ``summary_model`` is sent for the
    summary call, the session's model for the round."""
    server.script(
        [
            text_reply("Fixed the bug.", usage={"input_tokens": 102_401, "output_tokens": 5}),
            text_reply("<completed>fixed</completed>"),
        ]
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = Settings(summary_model="claude-haiku-4-5")
    session = store.create_session(str(workspace), "t", strategy="reset-hint")
    provider = AnthropicProvider(settings, api_key="sk-test", base_url=server.url, model="m")
    Agent(store, session, settings, provider, workspace).run("fix the bug")

    assert [r.body["model"] for r in server.requests] == ["m", "claude-haiku-4-5"]
    assert server.requests[1].body["system"] == [{"type": "text", "text": COMPRESS_SYSTEM}]


def test_an_answer_without_the_four_tags_is_kept_with_a_warning(
    store: Store, tmp_path: Path, server: FakeAnthropicServer
) -> None:
    """The seed returns the model's text as it is and builds the hint from it:

    ``const { text } = await generateText(...); return text`` and
    ``const hint = buildCompressionHint(summary)`` (the answer, whatever it is, becomes the
    hint); ctxscope warns that tags are missing but does not replace the answer.
    """
    answer = "<completed>fixed the login bug</completed>\nnothing else to report"
    server.script(
        [
            text_reply("Fixed the bug.", usage={"input_tokens": 102_401, "output_tokens": 5}),
            text_reply(answer),
        ]
    )
    agent, events = _agent(store, tmp_path, server)
    agent.run("fix the bug")

    finished = [e for e in events if isinstance(e, CompactionFinished)]
    assert len(finished) == 1
    compaction, summary = finished[0].compaction, finished[0].summary
    assert compaction.outcome == Outcome.SUCCESS
    assert summary is not None and summary.content == answer and not summary.fallback
    assert summary.placement == Placement.SYSTEM_HINT
    warning = compaction.stats["summary_warning"]
    assert "remaining, current_state, notes" in warning and "kept as written" in warning
    assert any(isinstance(e, Notice) and e.message == warning for e in events)
    # history = [] and the hint, in the seed's wrapper, around the model's own text
    assert agent.history.history.messages == []
    system = agent.preview().request.system
    hint = next(b["text"] for b in system if b["text"].startswith(HINT_HEAD))
    assert f"{HINT_HEAD}\n\n{answer}\n\n注意：" in hint


def test_an_empty_answer_is_a_failed_call_and_the_extractive_tags_stand_in(
    server: FakeAnthropicServer,
) -> None:
    """An empty answer would leave a hint with nothing in it (the seed does not guard; ctxscope
    treats it as a failed call): the extractive summary in the seed's four tags stands in:

    ``<completed>...</completed> <remaining>...</remaining> <current_state>...</current_state>
    <notes>...</notes>`` (the four XML tags the seed's prompt asks for).
    """
    server.script([text_reply("   ")])
    compressor = _compressor(server)
    outcome = compressor.summarize(_history(), spec=RESET_HINT_SPEC)
    assert outcome is not None and outcome.fallback
    for tag in ("completed", "remaining", "current_state", "notes"):
        assert f"<{tag}>" in outcome.content and f"</{tag}>" in outcome.content


def test_a_history_the_api_refuses_as_too_long_goes_again_through_the_splitting_frame(
    server: FakeAnthropicServer,
) -> None:
    """The seed sends the whole history in one call and has no answer to a refusal; ctxscope
    then sends it through its own summary call (framed, split into parts while the API
    refuses), so the compaction still happens:

    ``const { text } = await generateText({ model, system: COMPRESS_SYSTEM, prompt:
    historyText, maxSteps: 1 })`` (one call over the whole history text).
    """
    server.script([prompt_too_long_reply(), text_reply("<completed>a</completed>")])
    outcome = _compressor(server).summarize(_history(), spec=RESET_HINT_SPEC)
    assert outcome is not None and not outcome.fallback
    assert outcome.content == "<completed>a</completed>"
    first, second = server.requests
    assert first.body["messages"][0]["content"].startswith("[user]\nfix the bug")
    assert "<archive>" in second.body["messages"][0]["content"]


def _compressor(server: FakeAnthropicServer) -> SummaryCompressor:
    settings = Settings()
    provider = AnthropicProvider(settings, api_key="sk-test", base_url=server.url, model="m")
    return SummaryCompressor(
        ProviderSummariser(provider, settings), 5.0, sleep=lambda _s: None, send=provider.ask_text
    )


def _history() -> list[Message]:
    return [
        Message(role="user", content="fix the bug"),
        Message(role="assistant", content="Fixed.", meta=MessageMeta(final=True)),
    ]
