"""The proxy passes every request through unchanged: bodies and answers byte for byte, streams
as they arrive, errors with their status and retry-after, keys and OAuth tokens; it refuses a
foreign Host and an oversized body, and drops only hop-by-hop headers."""

from __future__ import annotations

import http.client
import itertools
import json
import socket
import time
from pathlib import Path
from typing import Any

import anthropic
import pytest

import tests.fakes.anthropic_server as fake
from engine.store import Store
from tests.fakes.anthropic_server import (
    FAKE_API_KEY,
    FakeAnthropicServer,
    error_reply,
    text_reply,
    tool_reply,
)
from tests.proxy.conftest import RunningProxy, client

BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 64,
    "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hi"}]}],
}


def raw(
    port: int, method: str, path: str, body: bytes | None, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    """One request by hand (http.client sends the headers given, in that order); a body is
    JSON unless a content type is given (the proxy refuses others: engine/proxy/guard.py)."""
    if body is not None and not any(k.lower() == "content-type" for k in headers):
        headers = {**headers, "Content-Type": "application/json"}
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        con.request(method, path, body=body, headers=headers)
        resp = con.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        con.close()


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def both_ways(
    upstream: FakeAnthropicServer,
    proxy: RunningProxy,
    replies: list[Any],
    body: bytes,
    monkeypatch: pytest.MonkeyPatch,
    path: str = "/v1/messages",
) -> tuple[tuple[int, dict[str, str], bytes], tuple[int, dict[str, str], bytes]]:
    """The same request sent direct and through the proxy, the fake's ids restarted before
    each, so both answers are the same bytes if the proxy changes nothing."""
    headers = {"x-api-key": FAKE_API_KEY, "content-type": "application/json"}
    results = []
    for port in (port_of(upstream.url), proxy.proxy.port):
        monkeypatch.setattr(fake, "_ids", itertools.count(1))
        upstream.script(list(replies))
        results.append(raw(port, "POST", path, body, headers))
    direct, proxied = results
    return direct, proxied


def without_date(headers: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k not in ("date", "transfer-encoding")}


def test_a_message_comes_back_byte_identical(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = json.dumps(BODY).encode()
    direct, proxied = both_ways(fake_anthropic, proxy, [text_reply("hi there")], body, monkeypatch)
    assert proxied[0] == direct[0] == 200
    assert proxied[2] == direct[2]
    assert without_date(proxied[1]) == without_date(direct[1])
    sent = fake_anthropic.requests
    assert sent[0].body == sent[1].body == BODY
    # The same headers (their order is the HTTP library's), the Host the upstream's own.
    assert sent[1].headers == sent[0].headers
    assert sent[1].headers["host"] == f"127.0.0.1:{port_of(fake_anthropic.url)}"


def test_a_stream_comes_back_byte_identical(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = json.dumps({**BODY, "stream": True}).encode()
    reply = tool_reply(("toolu_1", "Read", {"file_path": "a.py"}), text="Reading")
    direct, proxied = both_ways(fake_anthropic, proxy, [reply], body, monkeypatch)
    assert proxied[0] == direct[0] == 200
    assert proxied[1]["content-type"] == "text/event-stream"
    assert proxied[2] == direct[2]
    # "Reading" in 3 pieces of at most 3 characters, the input JSON in 2 (the fake's _pieces)
    assert proxied[2].count(b"event: content_block_delta") == 5


@pytest.mark.parametrize("chunk_size", [1, 3, 7, 50])
def test_chunks_cut_anywhere_in_an_event_reach_the_sdk_whole(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy, chunk_size: int
) -> None:
    """The upstream sends the stream in pieces of ``chunk_size`` bytes (inside lines, inside
    the JSON of an event): the SDK through the proxy builds the same message, and the
    recorder reassembles it from the same pieces."""
    text = "naïve café — ünïcode split anywhere"
    fake_anthropic.script([text_reply(text, chunk_size=chunk_size)])
    with client(proxy.url).messages.stream(**BODY) as stream:
        message = stream.get_final_message()
    assert message.content[0].text == text  # type: ignore[union-attr]
    proxy.stop()
    store = Store.open(proxy.db)
    (exchange,) = store.exchanges(store.proxied_sessions()[0])
    assert exchange.response is not None
    assert exchange.response["content"] == [{"type": "text", "text": text}]
    assert exchange.outcome == "complete"


def test_a_stream_is_forwarded_as_it_arrives(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """A stream that never ends (pings every 50 ms): its first events reach the client while
    the upstream is still sending, so nothing waits for the end. Hanging up cancels the
    upstream call, and the request is stored as cancelled."""
    fake_anthropic.script([fake.Reply(content=[], pings_only=True)])
    sock = socket.create_connection(("127.0.0.1", proxy.proxy.port), timeout=5)
    body = json.dumps({**BODY, "stream": True}).encode()
    sock.sendall(
        b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nx-api-key: k\r\n"
        b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
        % (proxy.proxy.port, len(body), body)
    )
    received = b""
    while received.count(b"event: ping") < 2:
        piece = sock.recv(4096)
        assert piece, "the proxy closed the stream"
        received += piece
    sock.close()
    proxy.stop()  # waits for the record of the cancelled call
    store = Store.open(proxy.db)
    (exchange,) = store.exchanges(store.proxied_sessions()[0])
    assert exchange.outcome == "cancelled"
    assert exchange.request == {**BODY, "stream": True}


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (429, anthropic.RateLimitError),
        (529, anthropic.InternalServerError),
        (500, anthropic.InternalServerError),
    ],
)
def test_upstream_errors_reach_the_client_as_they_are(
    fake_anthropic: FakeAnthropicServer,
    proxy: RunningProxy,
    status: int,
    error_class: type[anthropic.APIStatusError],
) -> None:
    fake_anthropic.script([error_reply(status, retry_after=7)])
    with pytest.raises(error_class) as caught:
        client(proxy.url).messages.create(**BODY)
    assert caught.value.status_code == status
    assert caught.value.response.headers["retry-after"] == "7"
    default_type = {429: "rate_limit_error", 529: "overloaded_error", 500: "api_error"}[status]
    assert caught.value.body["error"]["type"] == default_type  # type: ignore[index]
    proxy.stop()
    store = Store.open(proxy.db)
    (exchange,) = store.exchanges(store.proxied_sessions()[0])
    assert (exchange.status, exchange.outcome) == (status, "error")
    assert exchange.response == caught.value.body


def test_count_tokens_and_models_pass_through_unrecorded(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    question = {"model": "claude-sonnet-4-6", "messages": BODY["messages"]}
    through = client(proxy.url).messages.count_tokens(**question)  # type: ignore[arg-type]
    direct = client(fake_anthropic.url).messages.count_tokens(**question)  # type: ignore[arg-type]
    assert through.input_tokens == direct.input_tokens > 0
    models = client(proxy.url).models.list()
    assert [m.id for m in models.data] == ["claude-fake"]
    assert [r.path for r in fake_anthropic.requests] == ["/v1/messages/count_tokens"] * 2
    proxy.stop()
    assert Store.open(proxy.db).proxied_sessions() == []


def test_an_oauth_token_and_an_api_key_are_passed_and_never_stored(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """The SDK sends a bearer token (``auth_token``); a key goes as ``x-api-key``. Both reach
    the upstream; neither is anywhere in the database's files (grep of their bytes)."""
    token = "sk-ant-oat01-secret-oauth-token-for-the-test"
    key = "sk-ant-api03-secret-key-for-the-test"
    fake_anthropic.script([text_reply("one"), text_reply("two")])
    client(proxy.url, api_key=None, auth_token=token).messages.create(**BODY)
    status, _, _ = raw(
        proxy.proxy.port,
        "POST",
        "/v1/messages",
        json.dumps(BODY).encode(),
        {"x-api-key": key, "anthropic-version": "2023-06-01"},
    )
    assert status == 200
    oauth, keyed = fake_anthropic.requests
    assert oauth.headers["authorization"] == f"Bearer {token}"
    assert "x-api-key" not in oauth.headers
    assert keyed.headers["x-api-key"] == key
    proxy.stop()
    store = Store.open(proxy.db)
    assert len(store.exchanges(store.proxied_sessions()[0])) == 2
    store.close()
    files = list(Path(proxy.db).parent.glob(Path(proxy.db).name + "*"))
    data = b"".join(f.read_bytes() for f in files)
    assert b"You are terse." in data  # the grep reads what was stored
    for secret in (token, key, "Bearer"):
        assert secret.encode() not in data


def test_a_foreign_host_is_refused_and_nothing_forwarded(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    port = proxy.proxy.port
    body = json.dumps(BODY).encode()
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.2:{port}", "127.0.0.1"):
        status, _, answer = raw(port, "POST", "/v1/messages", body, {"Host": host})
        assert status == 403
        assert json.loads(answer)["error"]["type"] == "permission_error"
    assert fake_anthropic.requests == []
    fake_anthropic.script([text_reply("ok")])
    status, _, _ = raw(port, "POST", "/v1/messages", body, {"Host": f"localhost:{port}"})
    assert status == 200


@pytest.mark.parametrize("target", ["http://example.com", "http://127.0.0.1:{port}"])
def test_an_absolute_url_is_not_relayed_anywhere(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy, target: str
) -> None:
    """``GET http://elsewhere/… HTTP/1.1`` (a forward proxy's request form) is refused with
    403: the host it names (aiohttp takes it from the URL) is not the proxy's address."""
    port = proxy.proxy.port
    url = target.format(port=port).encode() + b"/v1/models"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            b"GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % (url, port)
        )
        answer = b""
        while piece := sock.recv(4096):
            answer += piece
    assert answer.startswith(b"HTTP/1.1 403")
    assert fake_anthropic.requests == []


def test_a_body_over_the_limit_is_refused(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    small = RunningProxy(fake_anthropic.url, tmp_path / "p.db", max_body=1000)
    try:
        body = json.dumps({**BODY, "messages": [{"role": "user", "content": "x" * 2000}]})
        status, _, answer = raw(small.proxy.port, "POST", "/v1/messages", body.encode(), {})
        assert status == 413
        assert "1000 bytes" in json.loads(answer)["error"]["message"]
        assert fake_anthropic.requests == []
    finally:
        small.stop()


def test_only_hop_by_hop_headers_are_dropped(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    fake_anthropic.script([text_reply("ok")])
    headers = {
        "x-api-key": FAKE_API_KEY,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "context-1m-2025-08-07",
        "Connection": "keep-alive, X-Private-Hop",
        "X-Private-Hop": "drop me",
        "Keep-Alive": "timeout=5",
        "TE": "trailers",
        "Proxy-Authorization": "Basic Zm9vOmJhcg==",
        "X-Custom": "kept",
    }
    status, _, _ = raw(proxy.proxy.port, "POST", "/v1/messages", json.dumps(BODY).encode(), headers)
    assert status == 200
    seen = fake_anthropic.requests[0].headers
    for name in ("x-private-hop", "keep-alive", "te", "proxy-authorization"):
        assert name not in seen
    for name in ("x-api-key", "anthropic-version", "anthropic-beta", "x-custom"):
        assert seen[name] == headers[next(k for k in headers if k.lower() == name)]
    proxy.stop()
    store = Store.open(proxy.db)
    (exchange,) = store.exchanges(store.proxied_sessions()[0])
    assert exchange.headers == {
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "context-1m-2025-08-07",
    }


def test_an_upstream_that_does_not_answer_is_a_502(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # bound, never listening: connections are refused
        gone = RunningProxy(f"http://127.0.0.1:{dead}", tmp_path / "p.db")
        try:
            with pytest.raises(anthropic.InternalServerError) as caught:
                client(gone.url).messages.create(**BODY)
            assert caught.value.status_code == 502
        finally:
            gone.stop()


def test_the_sdk_gets_its_answers_through_the_proxy(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    fake_anthropic.script([text_reply("plain"), text_reply("streamed")])
    sdk = client(proxy.url)
    assert sdk.messages.create(**BODY).content[0].text == "plain"  # type: ignore[union-attr]
    started = time.monotonic()
    with sdk.messages.stream(**BODY) as stream:
        assert "".join(stream.text_stream) == "streamed"
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_over_the_record_limit_is_forwarded_whole_and_stored_named(
    fake_anthropic: FakeAnthropicServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stream: bool,
) -> None:
    """With the recorder keeping at most 2,000 bytes of an answer, a 6,000-character answer
    reaches the client byte for byte (the same bytes as direct) and is stored without its
    body, named with its size: the length of the answer the client got."""
    proxy = RunningProxy(fake_anthropic.url, tmp_path / "capped.db", record_limit=2000)
    try:
        body = json.dumps({**BODY, "stream": stream}).encode()
        reply = text_reply("z" * 6000)
        direct, proxied = both_ways(fake_anthropic, proxy, [reply], body, monkeypatch)
    finally:
        proxy.stop()
    assert proxied[0] == direct[0] == 200
    assert proxied[2] == direct[2]
    assert len(direct[2]) > 6000
    store = Store.open(tmp_path / "capped.db")
    (exchange,) = store.exchanges(store.proxied_sessions()[0])
    assert exchange.response == {"_not_recorded": {"bytes": len(direct[2]), "limit": 2000}}
    assert exchange.usage is None
    assert exchange.outcome == "complete"
    assert list(proxy.recorder.failures) == []
