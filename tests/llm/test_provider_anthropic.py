"""AnthropicProvider against the local fake Messages API: streaming, caching, retries, errors."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

from engine.llm.anthropic import AnthropicProvider
from engine.llm.base import (
    Cancelled,
    ProviderError,
    ProviderRequest,
    StreamEvent,
    StreamRetry,
    StreamText,
    StreamToolUse,
)
from engine.settings.config import Settings
from tests.fakes.anthropic_server import (
    FakeAnthropicServer,
    error_reply,
    prompt_too_long_reply,
    text_reply,
    tool_reply,
)

TOOLS = [
    {"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}},
    {"name": "Grep", "description": "Search files", "input_schema": {"type": "object"}},
]
SYSTEM = [
    {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "CODE_LAW: tabs.", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "## 📌 Archived Session Summary …"},
]


def _provider(settings: Settings, server: FakeAnthropicServer) -> AnthropicProvider:
    return AnthropicProvider(settings, api_key="sk-test", base_url=server.url, model="claude-x")


def _request(*messages: dict[str, Any]) -> ProviderRequest:
    return ProviderRequest(
        system=SYSTEM,
        tools=TOOLS,
        messages=list(messages) or [{"role": "user", "content": "hello"}],
        max_tokens=1024,
    )


def _complete(
    provider: AnthropicProvider, request: ProviderRequest, cancel: threading.Event | None = None
) -> tuple[Any, list[StreamEvent]]:
    events: list[StreamEvent] = []
    response = provider.complete(request, events.append, cancel)
    return response, events


def test_multi_step_exchange_with_parallel_tool_calls(
    settings: Settings, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_anthropic.script(
        [
            tool_reply(
                ("toolu_1", "Read", {"file_path": "README.md"}),
                ("toolu_2", "Grep", {"pattern": "TODO", "path": "src"}),
                text="Thought: I need both.",
            ),
            text_reply("README has 3 lines and there are 2 TODOs."),
        ]
    )
    provider = _provider(settings, fake_anthropic)

    first, events = _complete(provider, _request({"role": "user", "content": "look"}))

    calls = [e.call for e in events if isinstance(e, StreamToolUse)]
    assert [(c.id, c.name, c.input) for c in calls] == [
        ("toolu_1", "Read", {"file_path": "README.md"}),
        ("toolu_2", "Grep", {"pattern": "TODO", "path": "src"}),
    ]
    streamed = "".join(e.text for e in events if isinstance(e, StreamText))
    assert streamed == "Thought: I need both."
    assert len([e for e in events if isinstance(e, StreamText)]) > 1  # really streamed
    assert first.stop_reason == "tool_use"
    assert first.content == [
        {"type": "text", "text": "Thought: I need both."},
        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "README.md"}},
        {
            "type": "tool_use",
            "id": "toolu_2",
            "name": "Grep",
            "input": {"pattern": "TODO", "path": "src"},
        },
    ]

    second, _ = _complete(
        provider,
        _request(
            {"role": "user", "content": "look"},
            {"role": "assistant", "content": first.content},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a\nb\nc"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "x:1:TODO"},
                ],
            },
        ),
    )
    assert second.text == "README has 3 lines and there are 2 TODOs."
    assert second.stop_reason == "end_turn"
    assert second.tool_calls == []
    sent = fake_anthropic.requests
    assert [r.stream for r in sent] == [True, True]
    assert sent[0].body["model"] == "claude-x"
    assert sent[0].body["max_tokens"] == 1024
    assert sent[1].body["messages"][1]["content"][2]["id"] == "toolu_2"
    auth = sent[0].headers.get("x-api-key", "") + sent[0].headers.get("authorization", "")
    assert "sk-test" in auth  # SDK 2.x sends the key as a bearer token


def test_usage_with_cache_fields(settings: Settings, fake_anthropic: FakeAnthropicServer) -> None:
    fake_anthropic.script(
        [
            text_reply(
                "ok",
                usage={
                    "input_tokens": 12,
                    "output_tokens": 34,
                    "cache_read_input_tokens": 5000,
                    "cache_creation_input_tokens": 700,
                },
            )
        ]
    )
    response, _ = _complete(_provider(settings, fake_anthropic), _request())
    assert response.usage.input_tokens == 12
    assert response.usage.output_tokens == 34
    assert response.usage.cache_read_input_tokens == 5000
    assert response.usage.cache_creation_input_tokens == 700
    assert response.usage.input_side == 5712


def _breakpoints(body: dict[str, Any]) -> dict[str, list[int]]:
    def marked(blocks: list[Any]) -> list[int]:
        return [i for i, b in enumerate(blocks) if isinstance(b, dict) and "cache_control" in b]

    in_messages = [
        i
        for i, m in enumerate(body["messages"])
        if isinstance(m["content"], list) and marked(m["content"])
    ]
    return {
        "tools": marked(body.get("tools", [])),
        "system": marked(body.get("system", [])),
        "messages": in_messages,
    }


def test_cache_control_on_last_tool_and_given_system_blocks_only(
    settings: Settings, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_anthropic.script([text_reply("ok")])
    request = _request(
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        {"role": "user", "content": "again"},
    )
    _complete(_provider(settings, fake_anthropic), request)

    body = fake_anthropic.requests[0].body
    marks = _breakpoints(body)
    assert marks == {"tools": [1], "system": [0, 1], "messages": []}
    assert body["tools"][1]["cache_control"] == {"type": "ephemeral"}
    assert sum(len(v) for v in marks.values()) <= 4
    assert "cache_control" not in request.tools[-1]  # the caller's request is not mutated


def test_never_more_than_four_breakpoints(
    settings: Settings, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_anthropic.script([text_reply("ok")])
    marked = {"cache_control": {"type": "ephemeral"}}
    system = [{"type": "text", "text": f"block {i}", **marked} for i in range(4)]
    request = ProviderRequest(
        system=system, tools=TOOLS, messages=[{"role": "user", "content": "hi"}]
    )
    _complete(_provider(settings, fake_anthropic), request)

    marks = _breakpoints(fake_anthropic.requests[0].body)
    # The earliest (the tool's) is dropped: the later system ones still cache the tools.
    assert marks == {"tools": [], "system": [0, 1, 2, 3], "messages": []}


def test_rate_limit_then_success_emits_one_retry(
    settings: Settings, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_anthropic.script([error_reply(429), text_reply("finally")])
    response, events = _complete(_provider(settings, fake_anthropic), _request())

    retries = [e for e in events if isinstance(e, StreamRetry)]
    assert len(retries) == 1
    assert retries[0].attempt == 1
    assert retries[0].max_attempts == settings.max_retries
    assert "429" in retries[0].reason
    assert 0 < retries[0].wait_seconds <= settings.retry_max_delay
    assert events.index(retries[0]) == 0  # announced before anything of the answer
    assert response.text == "finally"
    assert len(fake_anthropic.requests) == 2


def test_retry_after_header_is_honoured_but_capped(
    settings: Settings, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_anthropic.script([error_reply(429, retry_after=120), text_reply("ok")])
    _, events = _complete(_provider(settings, fake_anthropic), _request())
    retry = next(e for e in events if isinstance(e, StreamRetry))
    assert retry.wait_seconds == settings.retry_max_delay


def test_backoff_doubles_up_to_the_cap() -> None:
    provider = AnthropicProvider(
        Settings(retry_base_delay=1.0, retry_max_delay=5.0), api_key="k", base_url="http://x"
    )
    assert [provider.backoff(n, None) for n in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert provider.backoff(0, 2.5) == 2.5


def test_overloaded_exhausted(settings: Settings, fake_anthropic: FakeAnthropicServer) -> None:
    fake_anthropic.script([error_reply(529)] * (settings.max_retries + 1))
    events: list[StreamEvent] = []
    with pytest.raises(ProviderError) as info:
        _provider(settings, fake_anthropic).complete(_request(), events.append)

    assert info.value.kind == "overloaded"
    assert info.value.status == 529
    assert "overloaded" in str(info.value).lower()
    assert len(fake_anthropic.requests) == settings.max_retries + 1
    assert [e.attempt for e in events if isinstance(e, StreamRetry)] == [1, 2]


def test_server_error_kind(settings: Settings, fake_anthropic: FakeAnthropicServer) -> None:
    fake_anthropic.script([error_reply(500)] * (settings.max_retries + 1))
    with pytest.raises(ProviderError) as info:
        _complete(_provider(settings, fake_anthropic), _request())
    assert info.value.kind == "server"


@pytest.mark.parametrize("status", [401, 403])
def test_auth_error_is_not_retried(
    status: int, settings: Settings, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_anthropic.script([error_reply(status)])
    with pytest.raises(ProviderError) as info:
        _complete(_provider(settings, fake_anthropic), _request())
    assert info.value.kind == "auth"
    assert info.value.status == status
    assert "ANTHROPIC_API_KEY" in str(info.value)
    assert len(fake_anthropic.requests) == 1


def test_prompt_too_long(settings: Settings, fake_anthropic: FakeAnthropicServer) -> None:
    fake_anthropic.script([prompt_too_long_reply()])
    with pytest.raises(ProviderError) as info:
        _complete(_provider(settings, fake_anthropic), _request())
    assert info.value.kind == "prompt_too_long"
    assert "210000 tokens" in str(info.value)
    assert len(fake_anthropic.requests) == 1


def test_other_bad_request_carries_the_api_message(
    settings: Settings, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_anthropic.script([error_reply(400, "messages.0.content: field required")])
    with pytest.raises(ProviderError) as info:
        _complete(_provider(settings, fake_anthropic), _request())
    assert info.value.kind == "bad_request"
    assert "messages.0.content: field required" in str(info.value)


def test_stream_cut_mid_answer_is_retried(
    settings: Settings, fake_anthropic: FakeAnthropicServer
) -> None:
    # message_start, ping, content_block_start, one text delta, then the connection drops.
    fake_anthropic.script(
        [
            text_reply("The partial answer that never finishes", cut_after=4),
            text_reply("The whole answer."),
        ]
    )
    response, events = _complete(_provider(settings, fake_anthropic), _request())

    kinds = [e.kind for e in events]
    retry_at = kinds.index("retry")
    assert "text" in kinds[:retry_at]  # something was streamed before the cut...
    retry = events[retry_at]
    assert isinstance(retry, StreamRetry)
    assert retry.reason.startswith("stream interrupted")
    assert "incomplete" in retry.reason or "closed" in retry.reason  # the transport said why
    after = "".join(e.text for e in events[retry_at:] if isinstance(e, StreamText))
    assert after == "The whole answer."  # ...and superseded by the second attempt
    assert response.text == "The whole answer."
    assert len(fake_anthropic.requests) == 2


def test_cancel_while_waiting_for_the_first_byte(
    settings: Settings, fake_anthropic: FakeAnthropicServer
) -> None:
    fake_anthropic.script([text_reply("too late", delay=5)])
    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        _complete(_provider(settings, fake_anthropic), _request(), cancel)
    assert time.monotonic() - started < 2


def test_cancel_during_retry_wait(fake_anthropic: FakeAnthropicServer) -> None:
    slow = Settings(max_retries=3, retry_base_delay=10, retry_max_delay=10)
    fake_anthropic.script([error_reply(529), text_reply("never")])
    cancel = threading.Event()
    events: list[StreamEvent] = []

    def on_event(event: StreamEvent) -> None:
        events.append(event)
        if isinstance(event, StreamRetry):
            cancel.set()  # the user presses Esc as soon as the wait is announced

    started = time.monotonic()
    with pytest.raises(Cancelled):
        _provider(slow, fake_anthropic).complete(_request(), on_event, cancel)
    assert time.monotonic() - started < 2
    assert len(fake_anthropic.requests) == 1


def test_connection_refused_is_a_connection_error(settings: Settings) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    provider = AnthropicProvider(settings, api_key="k", base_url=url, model="claude-x")
    events: list[StreamEvent] = []
    with pytest.raises(ProviderError) as info:
        provider.complete(_request(), events.append)
    assert info.value.kind == "connection"
    assert url in str(info.value)
    assert len([e for e in events if isinstance(e, StreamRetry)]) == settings.max_retries


def test_missing_api_key_is_a_readable_auth_error(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ProviderError) as info:
        AnthropicProvider(settings)
    assert info.value.kind == "auth"
    assert "ANTHROPIC_API_KEY" in str(info.value)


def test_defaults_come_from_environment_and_settings(
    fake_anthropic: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in fake_anthropic.env().items():
        monkeypatch.setenv(name, value)
    fake_anthropic.script([text_reply("ok")])
    provider = AnthropicProvider(Settings(model="claude-from-settings"))
    assert provider.name == "anthropic"
    assert provider.model == "claude-from-settings"
    provider.complete(_request(), lambda e: None)
    assert fake_anthropic.requests[0].body["model"] == "claude-from-settings"
