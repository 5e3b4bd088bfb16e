"""The fake Messages API itself: a client that resets its connection is dropped quietly.

The SDK closes pooled keep-alive connections when a test's provider goes away; a reset that
arrived while the server waited for the next request printed socketserver's 20-line
``ConnectionResetError`` traceback into the test log, failing nothing. The real API's front
end drops such a connection without a word, and so does the fake.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import urllib.request

import pytest

from tests.fakes.anthropic_server import FakeAnthropicServer, text_reply

BODY = json.dumps({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]})


def _post(connection: socket.socket, port: int) -> bytes:
    """One keep-alive POST on ``connection``; its response, read to the end of its body."""
    request = (
        f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(BODY)}\r\n\r\n{BODY}"
    )
    connection.sendall(request.encode())
    data = b""
    while b"\r\n\r\n" not in data:
        data += connection.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += connection.recv(4096)
    return head + b"\r\n\r\n" + body


def test_a_reset_between_requests_is_dropped_quietly_and_the_server_goes_on(
    fake_anthropic: FakeAnthropicServer, capfd: pytest.CaptureFixture[str]
) -> None:
    fake_anthropic.script([text_reply("first"), text_reply("second")])
    done = threading.Event()
    httpd = fake_anthropic._httpd
    shutdown_request = httpd.shutdown_request

    def finished(request: socket.socket) -> None:  # socketserver's last step for a connection
        shutdown_request(request)
        done.set()

    httpd.shutdown_request = finished  # type: ignore[method-assign]
    port = int(fake_anthropic.url.rsplit(":", 1)[1])
    connection = socket.create_connection(("127.0.0.1", port))
    assert b'"text": "first"' in _post(connection, port)
    # SO_LINGER with a zero timeout: close() sends a reset instead of a clean FIN
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()
    assert done.wait(5), "the server never finished the reset connection"

    request = urllib.request.Request(
        f"{fake_anthropic.url}/v1/messages", data=BODY.encode(), method="POST"
    )
    request.add_header("content-type", "application/json")
    with urllib.request.urlopen(request, timeout=5) as response:
        assert json.load(response)["content"] == [{"type": "text", "text": "second"}]
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ConnectionResetError" not in err, err
