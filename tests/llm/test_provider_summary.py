"""The summary call through the Anthropic provider (ProviderSummariser over ask_text) and
summarize_in_chunks: timeouts and over-large segments."""

from __future__ import annotations

import time

import pytest

from engine.compaction.summary_call import ProviderSummariser, summarize_in_chunks
from engine.llm.anthropic import AnthropicProvider
from engine.llm.base import ProviderError
from engine.models import Message, ToolCall
from engine.settings.config import Settings
from tests.fakes.anthropic_server import (
    FakeAnthropicServer,
    RecordedRequest,
    Reply,
    error_reply,
    prompt_too_long_reply,
    text_reply,
)

PROMPT = "You archive conversations. Follow the template."


def _provider(settings: Settings, server: FakeAnthropicServer) -> ProviderSummariser:
    """The summariser a session builds over an Anthropic provider."""
    provider = AnthropicProvider(settings, api_key="sk-test", base_url=server.url, model="claude-x")
    return ProviderSummariser(provider, settings)


def _conversation(rounds: int, size: int) -> list[Message]:
    messages: list[Message] = []
    for n in range(rounds):
        messages.append(Message(role="user", content=f"request {n}: " + "u" * size))
        messages.append(
            Message(
                role="assistant",
                content=f"answer {n}: " + "a" * size,
                tool_calls=[ToolCall(id=f"t{n}", name="Read", input={"file_path": f"f{n}.py"})],
            )
        )
    return messages


def _numbered(server: FakeAnthropicServer) -> None:
    """Every request gets ``summary #n`` back, n counting from 1."""

    def answer(request: RecordedRequest) -> Reply:
        return text_reply(f"summary #{len(server.requests)}")

    server.default = answer


def _user_text(request: RecordedRequest) -> str:
    content = request.body["messages"][0]["content"]
    assert isinstance(content, str)
    return content


def test_summary_request_shape(settings: Settings, fake_anthropic: FakeAnthropicServer) -> None:
    fake_anthropic.script([text_reply("## 📌 Archived Session Summary\n…")])
    messages = _conversation(2, 20)

    result = _provider(settings, fake_anthropic).summarize(messages, PROMPT, "keep auth", 5.0)

    assert result == "## 📌 Archived Session Summary\n…"
    (request,) = fake_anthropic.requests
    assert not request.stream
    assert request.body["system"] == [{"type": "text", "text": PROMPT}]
    text = _user_text(request)
    assert text.startswith("Segment time range: ")
    assert "[user] request 0: uuuu" in text
    assert 'Action: Read[{"file_path": "f1.py"}]' in text
    # the archive sits in the <archive> tags SUMMARY_PROMPT announces, the focus after it
    archive = text.split("<archive>\n", 1)[1].split("\n</archive>", 1)[0]
    assert archive.startswith("[user] request 0:") and "keep auth" not in archive
    assert text.endswith("</archive>\n\nFocus instructions from the user: keep auth")


def test_summary_timeout(settings: Settings, fake_anthropic: FakeAnthropicServer) -> None:
    fake_anthropic.script([text_reply("too late", delay=3)])
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        _provider(settings, fake_anthropic).summarize(_conversation(1, 10), PROMPT, None, 0.3)
    assert time.monotonic() - started < 2


def test_summary_retries_an_overloaded_answer(
    settings: Settings, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_anthropic.script([error_reply(529), text_reply("fine")])
    result = _provider(settings, fake_anthropic).summarize(_conversation(1, 10), PROMPT, None, 5)
    assert result == "fine"
    assert len(fake_anthropic.requests) == 2


def test_summary_auth_error_is_a_provider_error(
    settings: Settings, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_anthropic.script([error_reply(401)])
    with pytest.raises(ProviderError) as info:
        _provider(settings, fake_anthropic).summarize(_conversation(1, 10), PROMPT, None, 5)
    assert info.value.kind == "auth"


def test_a_segment_larger_than_the_window_is_summarised_in_chunks(
    fake_anthropic: FakeAnthropicServer,
) -> None:
    settings = Settings(context_window=3000)
    # The provider's limit: 80 % of the window, minus the prompt, at 3 characters a token.
    limit = (int(0.8 * 3000) - len(PROMPT) // 3) * 3
    messages = _conversation(8, 1500)  # ~24 000 characters, about three times the limit
    _numbered(fake_anthropic)

    result = _provider(settings, fake_anthropic).summarize(messages, PROMPT, "auth", 10)

    sent = [_user_text(r) for r in fake_anthropic.requests]
    parts, merge = sent[:-1], sent[-1]
    assert len(parts) >= 3
    assert all(len(text) <= limit for text in sent)
    assert [f"Part {i} of {len(parts)}" in text for i, text in enumerate(parts, 1)] == [True] * len(
        parts
    )
    assert all(r.body["system"][0]["text"] == PROMPT for r in fake_anthropic.requests)
    assert "Merge them into a single summary" in merge
    assert all(f"summary #{i}" in merge for i in range(1, len(parts) + 1))
    assert all(text.endswith("Focus instructions from the user: auth") for text in sent)
    assert result == f"summary #{len(sent)}"
    # Every message made it into some part, in order.
    joined = "\n".join(parts)
    positions = [joined.index(f"request {n}: ") for n in range(8)]
    assert positions == sorted(positions)


def test_prompt_too_long_answer_splits_the_segment(
    settings: Settings, fake_anthropic: FakeAnthropicServer
) -> None:
    messages = _conversation(4, 1500)  # fits the default window by the estimate
    fake_anthropic.script([prompt_too_long_reply()])
    _numbered(fake_anthropic)

    result = _provider(settings, fake_anthropic).summarize(messages, PROMPT, None, 10)

    sent = [_user_text(r) for r in fake_anthropic.requests]
    assert len(sent) >= 4  # the refused whole, at least two parts, the merge
    assert all(len(text) <= len(sent[0]) // 2 for text in sent[1:])
    assert "Merge them" in sent[-1]
    assert result == f"summary #{len(sent)}"


# --- summarize_in_chunks on its own ---------------------------------------------------------


def test_one_huge_message_is_sliced() -> None:
    calls: list[str] = []

    def summarize(text: str) -> str:
        calls.append(text)
        return f"s{len(calls)}"

    result = summarize_in_chunks(
        [Message(role="tool", content="x" * 9000)], summarize, max_chars=2000
    )
    assert len(calls) >= 6  # five or more slices, then the merge
    assert all(len(c) <= 2000 for c in calls)
    assert sum(c.count("x") for c in calls[:-1]) == 9000  # nothing lost between slices
    assert result == f"s{len(calls)}"


def test_long_part_summaries_are_merged_in_rounds() -> None:
    calls: list[str] = []

    def summarize(text: str) -> str:
        calls.append(text)
        return f"[{len(calls)}]" + "s" * 700  # each summary is a third of the limit

    result = summarize_in_chunks(_conversation(10, 900), summarize, max_chars=2000)
    merges = [c for c in calls if "Merge them" in c]
    assert len(merges) >= 2  # the summaries did not fit one merge call
    assert all(len(c) <= 2000 for c in calls)
    assert result.startswith(f"[{len(calls)}]")


def test_a_segment_that_fits_is_one_call() -> None:
    calls: list[str] = []
    result = summarize_in_chunks(
        _conversation(2, 10), lambda t: calls.append(t) or "one", max_chars=10_000
    )
    assert result == "one"
    assert len(calls) == 1


def test_other_provider_errors_propagate() -> None:
    def refuse(text: str) -> str:
        raise ProviderError("auth", "bad key")

    with pytest.raises(ProviderError) as info:
        summarize_in_chunks(_conversation(5, 1000), refuse, max_chars=2000)
    assert info.value.kind == "auth"
