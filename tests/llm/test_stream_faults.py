"""Streams that cannot hang or garble a round: only pings, event data that is not JSON.

Issue 21 found a ping-only server holding a round forever (``read_timeout`` counts bytes and
pings are bytes) and a non-JSON event ending with a cryptic error and the round left
``open``. Both now fail the attempt with one clear line, are retried like other faults, and
end the round ``failed`` in bounded time.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from engine.llm.anthropic import AnthropicProvider
from engine.llm.base import ProviderError, ProviderRequest, StreamEvent, StreamRetry
from engine.models import RoundStatus
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store
from tests.fakes.anthropic_server import FakeAnthropicServer, text_reply


def _request() -> ProviderRequest:
    return ProviderRequest(
        system=[{"type": "text", "text": "You are a coding agent."}],
        tools=[],
        messages=[{"role": "user", "content": "hello"}],
        max_tokens=256,
    )


def _quick(**overrides: Any) -> Settings:
    return Settings(max_retries=1, retry_base_delay=0.001, retry_max_delay=0.01, **overrides)


def _stream_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ctxscope-anthropic-stream"]


def test_a_ping_only_stream_fails_after_the_idle_timeout_and_is_retried(
    fake_anthropic: FakeAnthropicServer,
) -> None:
    """Pings every 0.05 s keep the socket busy far inside read_timeout (120 s); the 0.3 s
    stream_idle_timeout ends each of the two attempts."""
    fake_anthropic.script([text_reply("never", pings_only=True)] * 2)
    provider = AnthropicProvider(
        _quick(stream_idle_timeout=0.3), api_key="k", base_url=fake_anthropic.url
    )
    events: list[StreamEvent] = []
    earlier = set(_stream_threads())  # other tests' helpers, still waiting on their servers
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        provider.complete(_request(), events.append)
    elapsed = time.monotonic() - started
    assert info.value.kind == "connection"
    message = str(info.value)
    assert "\n" not in message
    assert "no content event for 0.3 s (stream_idle_timeout)" in message
    assert "Gave up after 1 retries" in message
    retries = [e.reason for e in events if isinstance(e, StreamRetry)]
    assert retries == ["stream stalled: no content event for 0.3 s (stream_idle_timeout)"]
    assert len(fake_anthropic.requests) == 2
    assert 0.6 <= elapsed < 3.0
    # the helper threads were woken (their streams closed), not left pinging forever
    deadline = time.monotonic() + 2.0
    while set(_stream_threads()) - earlier and time.monotonic() < deadline:
        time.sleep(0.02)
    assert set(_stream_threads()) - earlier == set()


def test_a_garbled_event_is_a_provider_error_in_one_line(
    fake_anthropic: FakeAnthropicServer,
) -> None:
    fake_anthropic.script([text_reply("hello there", garble_after=3)] * 2)
    provider = AnthropicProvider(_quick(), api_key="k", base_url=fake_anthropic.url)
    events: list[StreamEvent] = []
    with pytest.raises(ProviderError) as info:
        provider.complete(_request(), events.append)
    assert info.value.kind == "server"
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(
        f"The Anthropic API at {fake_anthropic.url} sent a malformed stream: an event's data "
        "is not JSON ("
    )
    retries = [e.reason for e in events if isinstance(e, StreamRetry)]
    assert len(retries) == 1 and retries[0].startswith("malformed stream: an event's data")
    assert len(fake_anthropic.requests) == 2


def test_a_garbled_attempt_is_retried_into_a_good_answer(
    fake_anthropic: FakeAnthropicServer,
) -> None:
    fake_anthropic.script([text_reply("lost", garble_after=2), text_reply("fine")])
    provider = AnthropicProvider(_quick(), api_key="k", base_url=fake_anthropic.url)
    events: list[StreamEvent] = []
    response = provider.complete(_request(), events.append)
    assert response.text == "fine"
    assert sum(isinstance(e, StreamRetry) for e in events) == 1


@pytest.mark.parametrize(
    "reply",
    [text_reply("never", pings_only=True), text_reply("garbled", garble_after=1)],
    ids=["pings-only", "garbled"],
)
def test_the_round_ends_failed_never_open(
    tmp_path: Path, fake_anthropic: FakeAnthropicServer, reply: Any
) -> None:
    store = Store.open(tmp_path / "s.db")
    session = store.create_session(str(tmp_path), "s")
    settings = _quick(stream_idle_timeout=0.3)
    fake_anthropic.script([reply, reply])
    provider = AnthropicProvider(settings, api_key="k", base_url=fake_anthropic.url)
    agent = Agent(store, session, settings, provider, tmp_path)
    started = time.monotonic()
    outcome = agent.run("hello")
    assert time.monotonic() - started < 5.0
    assert outcome.status is RoundStatus.ERROR  # "failed" in the words
    assert outcome.error is not None and "\n" not in outcome.error
    assert [r.status for r in store.rounds(session.id or 0)] == [RoundStatus.ERROR]
    store.close()
