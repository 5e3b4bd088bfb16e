"""Provider faults: a silent server, duplicate tool ids, echoed secrets, zero usage."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from engine.llm.anthropic import AnthropicProvider
from engine.llm.base import ProviderError, ProviderRequest, StreamEvent, StreamRetry
from engine.models import Usage, UsageRecord
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store
from tests.fakes.anthropic_server import (
    FakeAnthropicServer,
    error_reply,
    text_reply,
    tool_reply,
)


def _request(*messages: dict[str, Any]) -> ProviderRequest:
    return ProviderRequest(
        system=[{"type": "text", "text": "You are a coding agent."}],
        tools=[],
        messages=list(messages) or [{"role": "user", "content": "hello"}],
        max_tokens=256,
    )


def test_a_server_that_never_answers_fails_the_call_after_the_read_timeout(
    fake_anthropic: FakeAnthropicServer,
) -> None:
    settings = Settings(
        max_retries=1, retry_base_delay=0.001, retry_max_delay=0.01, read_timeout=0.2
    )
    # Each reply would come after an hour: only the read timeout ends the attempts.
    fake_anthropic.script([text_reply("late", delay=3600), text_reply("late", delay=3600)])
    provider = AnthropicProvider(settings, api_key="k", base_url=fake_anthropic.url)
    events: list[StreamEvent] = []
    with pytest.raises(ProviderError) as info:
        provider.complete(_request(), events.append)
    assert info.value.kind == "connection"
    assert "did not answer in time" in str(info.value)
    assert "Gave up after 1 retries" in str(info.value)
    retries = [e for e in events if isinstance(e, StreamRetry)]
    assert [r.reason for r in retries] == ["timed out: no answer from the server in time"]
    assert len(fake_anthropic.requests) == 2


def test_the_client_gets_the_configured_timeouts() -> None:
    settings = Settings(connect_timeout=3, read_timeout=45)
    provider = AnthropicProvider(settings, api_key="k", base_url="http://127.0.0.1:9")
    timeout = provider._client.timeout
    assert (timeout.connect, timeout.read) == (3, 45)


def test_duplicate_tool_use_ids_are_renamed_at_the_provider_boundary(
    fake_anthropic: FakeAnthropicServer,
) -> None:
    settings = Settings(max_retries=0)
    fake_anthropic.script(
        [
            tool_reply(
                ("toolu_A", "Read", {"file_path": "a"}),
                ("toolu_A", "Read", {"file_path": "b"}),  # repeated within the answer
                ("toolu_old", "LS", {}),  # already used earlier in the conversation
            )
        ]
    )
    provider = AnthropicProvider(settings, api_key="k", base_url=fake_anthropic.url)
    earlier = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_old", "name": "LS", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_old", "content": "x"}],
        },
    ]
    # The API refuses tool blocks in a request that defines no tools.
    ls = {"name": "LS", "description": "list a folder", "input_schema": {"type": "object"}}
    request = _request(*earlier).model_copy(update={"tools": [ls]})
    response = provider.complete(request, lambda _e: None)
    assert [c.id for c in response.tool_calls] == ["toolu_A", "toolu_A_2", "toolu_old_2"]
    assert [c.input for c in response.tool_calls] == [
        {"file_path": "a"},
        {"file_path": "b"},
        {},
    ]


def test_a_key_echoed_back_by_the_server_is_not_in_the_error(
    fake_anthropic: FakeAnthropicServer,
) -> None:
    key = "sk-ant-very-secret-0123456789"
    fake_anthropic.script([error_reply(400, f"bad header x-api-key: {key}")])
    provider = AnthropicProvider(Settings(max_retries=0), api_key=key, base_url=fake_anthropic.url)
    with pytest.raises(ProviderError) as info:
        provider.complete(_request(), lambda _e: None)
    assert key not in str(info.value)
    assert "[redacted ANTHROPIC_API_KEY]" in str(info.value)


def test_credentials_in_the_base_url_are_never_printed() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again at once: connections are refused
    url = f"http://proxyuser:pa55w0rd-xyz@127.0.0.1:{port}"
    provider = AnthropicProvider(Settings(max_retries=0), api_key="k", base_url=url)
    with pytest.raises(ProviderError) as info:
        provider.complete(_request(), lambda _e: None)
    assert "pa55w0rd-xyz" not in str(info.value) and "proxyuser" not in str(info.value)
    assert f"http://127.0.0.1:{port}" in str(info.value)


def test_a_zero_usage_is_never_the_last_api_usage(
    tmp_path: Path, fake_anthropic: FakeAnthropicServer
) -> None:
    store = Store.open(tmp_path / "u.db")
    session = store.create_session(str(tmp_path), "u")
    assert session.id is not None
    store.add_usage(
        UsageRecord(
            session_id=session.id, round_index=None, step=None, usage=Usage(input_tokens=900)
        )
    )
    settings = Settings(max_retries=0)
    fake_anthropic.script([text_reply("ok", usage={"input_tokens": 0, "output_tokens": 0})])
    provider = AnthropicProvider(settings, api_key="k", base_url=fake_anthropic.url)
    agent = Agent(store, session, settings, provider, tmp_path)
    assert agent.run("hello").status.value == "finished"
    assert agent.last_usage() == 900
    # an imported or older zero record is passed over too
    store.add_usage(UsageRecord(session_id=session.id, round_index=None, step=None, usage=Usage()))
    last = store.last_usage(session.id)
    assert last is not None and last.usage.input_tokens == 900
    store.close()
