"""The request path on asyncio Protocols (engine/proxy/relay.py, issue 44): what it does by
hand that aiohttp's server and client did before — HTTP/1.1 framing on both sides (a
chunked request, pipelined requests, ``Expect: 100-continue``, an HTTP/1.0 client given a
chunked stream), kept-alive upstream connections, and TLS to the upstream, verified."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engine.proxy.server import Proxy, ProxyConfig, running
from engine.store import Store
from tests.fakes.anthropic_server import FAKE_API_KEY, FakeAnthropicServer, text_reply
from tests.proxy.conftest import RunningProxy, client
from tests.proxy.test_passthrough import BODY, raw

JSON_BODY = json.dumps(BODY).encode()


def exchange(sock: socket.socket, until: bytes, count: int = 1) -> bytes:
    """Read from ``sock`` until ``until`` has been seen ``count`` times (or it closes)."""
    got = b""
    while got.count(until) < count:
        piece = sock.recv(65536)
        if not piece:
            break
        got += piece
    return got


def head(port: int, extra: str = "", length: int | None = len(JSON_BODY)) -> bytes:
    sized = f"Content-Length: {length}\r\n" if length is not None else ""
    return (
        f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-api-key: {FAKE_API_KEY}\r\n"
        f"Content-Type: application/json\r\n{sized}{extra}\r\n"
    ).encode()


def test_a_chunked_request_goes_upstream_whole_with_its_length(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """The client sends its body in three chunks; the upstream (which reads a Content-Length
    only) gets the same bytes, and the request is stored."""
    fake_anthropic.script([text_reply("ok")])
    port = proxy.proxy.port
    pieces = [JSON_BODY[:10], JSON_BODY[10:50], JSON_BODY[50:]]
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head(port, "Transfer-Encoding: chunked\r\n", length=None) + chunked)
        answer = exchange(sock, b'"end_turn"')
    assert answer.startswith(b"HTTP/1.1 200")
    (sent,) = fake_anthropic.requests
    assert sent.raw == JSON_BODY
    assert sent.headers["content-length"] == str(len(JSON_BODY))
    assert "transfer-encoding" not in sent.headers
    proxy.stop()
    store = Store.open(proxy.db)
    assert len(store.exchanges(store.proxied_sessions()[0])) == 1


def test_pipelined_requests_are_answered_in_order(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """Three requests written at once on one connection: three answers, in the order asked."""
    fake_anthropic.script([text_reply("first"), text_reply("second"), text_reply("third")])
    port = proxy.proxy.port
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall((head(port) + JSON_BODY) * 3)
        answers = exchange(sock, b'"end_turn"', count=3)
    assert answers.count(b"HTTP/1.1 200") == 3
    order = [answers.find(word) for word in (b'"first"', b'"second"', b'"third"')]
    assert -1 not in order and order == sorted(order)


def test_a_pipelined_request_whose_body_comes_later_is_answered(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """A second request written behind the first with half its body: the proxy keeps reading
    while it answers the first (it stops reading only while two whole requests wait), so the
    rest of the body, sent after the first answer, gets the second answer."""
    fake_anthropic.script([text_reply("first"), text_reply("second")])
    port = proxy.proxy.port
    half = len(JSON_BODY) // 2
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head(port) + JSON_BODY + head(port) + JSON_BODY[:half])
        first = exchange(sock, b'"end_turn"')
        sock.sendall(JSON_BODY[half:])
        second = exchange(sock, b'"end_turn"')
    assert b'"first"' in first and first.startswith(b"HTTP/1.1 200")
    assert b'"second"' in second and second.startswith(b"HTTP/1.1 200")


def test_expect_100_continue_is_answered_before_the_body(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """curl's way with a large body: the headers, a wait for ``100 Continue``, then the body.
    The proxy says 100 itself and does not pass ``Expect`` on."""
    fake_anthropic.script([text_reply("ok")])
    port = proxy.proxy.port
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head(port, "Expect: 100-continue\r\n"))
        assert exchange(sock, b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(JSON_BODY)
        answer = exchange(sock, b'"end_turn"')
    assert answer.startswith(b"HTTP/1.1 200")
    assert "expect" not in fake_anthropic.requests[0].headers


def test_an_http_10_client_gets_a_stream_without_chunks(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """HTTP/1.0 has no chunks: the stream comes as its events, ended by the proxy closing the
    connection; the events are the ones the SDK gets (the last one ``message_stop``)."""
    fake_anthropic.script([text_reply("old client")])
    port = proxy.proxy.port
    body = json.dumps({**BODY, "stream": True}).encode()
    request = (
        head(port)
        .replace(b"HTTP/1.1", b"HTTP/1.0")
        .replace(str(len(JSON_BODY)).encode(), str(len(body)).encode())
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request + body)
        answer = exchange(sock, b"never", count=1)  # read to the close
    head_bytes, _, events = answer.partition(b"\r\n\r\n")
    assert b"transfer-encoding" not in head_bytes.lower()
    assert events.startswith(b"event: message_start")
    assert events.rstrip().endswith(b'"type": "message_stop"}')


def test_the_upstream_connection_is_kept_alive_between_requests(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """Five requests from five client connections go up one kept-alive connection: after
    them the proxy holds one idle connection, to the upstream's port."""
    fake_anthropic.script([text_reply("ok")] * 5)
    for _ in range(5):
        status, _, _ = raw(proxy.proxy.port, "POST", "/v1/messages", JSON_BODY, {})
        assert status == 200
    upstream_port = int(fake_anthropic.url.rsplit(":", 1)[1])
    idle = proxy.proxy.pool.idle
    peers = [c.transport.get_extra_info("peername")[1] for c in idle if c.transport]
    assert peers == [upstream_port]
    assert len(fake_anthropic.requests) == 5


def test_a_chunked_body_over_the_limit_is_refused(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    """Without a Content-Length the limit is found while reading: 413 once 1000 bytes are
    passed, nothing forwarded."""
    small = RunningProxy(fake_anthropic.url, tmp_path / "p.db", max_body=1000)
    try:
        port = small.proxy.port
        chunk = b"x" * 600
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(head(port, "Transfer-Encoding: chunked\r\n", length=None))
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk) * 2)
            answer = exchange(sock, b"never")
        assert answer.startswith(b"HTTP/1.1 413")
        assert fake_anthropic.requests == []
    finally:
        small.stop()


def _self_signed(folder: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def tls_upstream(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A TLS server on 127.0.0.1 with a self-signed certificate for ``localhost``, answering
    every POST with the Host it was sent and the length of the body; its port and cert."""
    cert, key = _self_signed(tmp_path)

    class Echo(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            got = self.rfile.read(int(self.headers["content-length"]))
            data = json.dumps({"host": self.headers["host"], "bytes": len(got)}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], cert
    finally:
        server.shutdown()
        server.server_close()


def test_tls_to_the_upstream_is_verified(
    tls_upstream: tuple[int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trusted (its certificate in ``SSL_CERT_FILE``), the upstream answers through the proxy
    with the Host ``localhost:PORT``; not trusted, the proxy answers 502 naming the failed
    verification, and sends nothing."""
    port, cert = tls_upstream
    upstream = f"https://localhost:{port}"
    with running(Proxy(ProxyConfig(upstream=upstream, port=0))) as proxy:
        status, _, answer = raw(proxy.port, "POST", "/v1/x", b"{}", {})
    assert status == 502
    assert "CERTIFICATE_VERIFY_FAILED" in json.loads(answer)["error"]["message"]
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    with running(Proxy(ProxyConfig(upstream=upstream, port=0))) as proxy:
        status, _, answer = raw(proxy.port, "POST", "/v1/x", b'{"a": 1}', {})
    assert status == 200
    assert json.loads(answer) == {"host": f"localhost:{port}", "bytes": 8}


def test_the_sdk_streams_through_a_kept_alive_connection(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """The SDK's own client (httpx, kept alive): a message, a stream, a message, each whole."""
    fake_anthropic.script([text_reply("one"), text_reply("two"), text_reply("three")])
    sdk = client(proxy.url)
    assert sdk.messages.create(**BODY).content[0].text == "one"  # type: ignore[union-attr,arg-type]
    with sdk.messages.stream(**BODY) as stream:  # type: ignore[arg-type]
        assert "".join(stream.text_stream) == "two"
    assert sdk.messages.create(**BODY).content[0].text == "three"  # type: ignore[union-attr,arg-type]


def test_http_client_keeps_one_connection_for_many_requests(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """http.client on one connection: each answer has its length, the connection stays
    open for the next."""
    fake_anthropic.script([text_reply(f"n{i}") for i in range(3)])
    con = http.client.HTTPConnection("127.0.0.1", proxy.proxy.port, timeout=10)
    headers = {"content-type": "application/json", "x-api-key": FAKE_API_KEY}
    texts = []
    for _ in range(3):
        con.request("POST", "/v1/messages", body=JSON_BODY, headers=headers)
        answer = con.getresponse()
        texts.append(json.loads(answer.read())["content"][0]["text"])
        sock = con.sock
    assert texts == ["n0", "n1", "n2"]
    assert con.sock is sock is not None
    con.close()


@pytest.fixture
def raw_upstream() -> Iterator[tuple[str, list[bytes]]]:
    """An upstream that answers each connection's first request with the bytes given (a
    list holding one answer, set by the test), then closes: its URL and that list."""
    answer: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                got = b""
                while b"\r\n\r\n" not in got:
                    got += conn.recv(65536)
                head, _, body = got.partition(b"\r\n\r\n")
                length = int(next(
                    line.split(b":")[1] for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ))  # fmt: skip
                while len(body) < length:
                    body += conn.recv(65536)
                conn.sendall(answer[0])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", answer
    finally:
        stop.set()
        thread.join()
        listener.close()


def test_an_answer_ended_by_closing_its_connection_is_whole(
    raw_upstream: tuple[str, list[bytes]], tmp_path: Path
) -> None:
    """An answer with neither a length nor chunks ends when the upstream closes: the client
    gets all of it, ended the same way, and it is stored complete."""
    url, answer = raw_upstream
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-fake",
               "content": [{"type": "text", "text": "closed"}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 3, "output_tokens": 1}}  # fmt: skip
    answer.append(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
        + json.dumps(message).encode()
    )
    proxy = RunningProxy(url, tmp_path / "p.db")
    try:
        status, headers, body = raw(proxy.proxy.port, "POST", "/v1/messages", JSON_BODY, {})
    finally:
        proxy.stop()
    assert status == 200 and "connection" not in headers
    assert json.loads(body) == message
    store = Store.open(tmp_path / "p.db")
    (stored,) = store.exchanges(store.proxied_sessions()[0])
    assert (stored.outcome, stored.response) == ("complete", message)


def test_an_interim_answer_is_not_passed_on(
    raw_upstream: tuple[str, list[bytes]], tmp_path: Path
) -> None:
    """A ``103 Early Hints`` before the answer: the client gets the 200 alone (http.client
    would take the 103 for the answer), its body whole."""
    url, answer = raw_upstream
    answer.append(
        b"HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n"
        b'{"ok": true}'
    )
    with running(Proxy(ProxyConfig(upstream=url, port=0))) as proxy:
        status, headers, body = raw(proxy.port, "POST", "/v1/x", b"{}", {})
    assert status == 200, body
    assert "link" not in headers
    assert body == b'{"ok": true}'


def test_a_client_that_reads_slowly_holds_the_upstream_back(
    raw_upstream: tuple[str, list[bytes]],
) -> None:
    """An 8 MiB answer to a client that does not read yet: the proxy stops reading the
    upstream (it holds at most its buffers' worth, not the answer); once the client reads,
    every byte comes."""
    url, answer = raw_upstream
    size = 8 << 20
    answer.append(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size + b"z" * size)
    with running(Proxy(ProxyConfig(upstream=url, port=0))) as proxy:
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.sendall(head(proxy.port, length=2).replace(b"/v1/messages", b"/v1/x") + b"{}")
        deadline = time.monotonic() + 5
        paused = False
        while not paused and time.monotonic() < deadline:
            time.sleep(0.02)
            (client,) = proxy.connections.open if proxy.connections else ()
            upstream = client.call.upstream if client.call else None
            paused = (
                upstream is not None
                and upstream.transport is not None
                and (not upstream.transport.is_reading())
            )
        assert paused
        got = exchange(sock, b"\r\n\r\n")
        while len(got.partition(b"\r\n\r\n")[2]) < size:
            piece = sock.recv(1 << 20)
            assert piece, "closed before the whole answer"
            got += piece
        sock.close()
    assert got.startswith(b"HTTP/1.1 200")
    assert got.partition(b"\r\n\r\n")[2] == b"z" * size
