"""``ctxscope run -- CMD`` and ``ctxscope proxy`` as a user starts them (subprocesses)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cli.proxy import child_env
from engine.store import Store
from tests.fakes.anthropic_server import FAKE_API_KEY, FakeAnthropicServer, text_reply
from tests.proxy.conftest import client

CHILD = """
import anthropic, json, os, sys
answer = anthropic.Anthropic(max_retries=0).messages.create(
    model="claude-sonnet-4-6", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
)
print(json.dumps({
    "text": answer.content[0].text,
    "base_url": os.environ["ANTHROPIC_BASE_URL"],
    "first_party": os.environ.get("_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL"),
}))
sys.exit(3)
"""


def env() -> dict[str, str]:
    return {**os.environ, "ANTHROPIC_API_KEY": FAKE_API_KEY, "PYTHONPATH": str(Path.cwd())}


def ctxscope(*args: str, db: Path) -> list[str]:
    return [sys.executable, "-m", "cli.main", *args[:1], "--db", str(db), *args[1:]]


def test_run_points_the_command_at_the_proxy_and_returns_its_exit_code(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    fake_anthropic.script([text_reply("through the proxy")])
    db = tmp_path / "run.db"
    done = subprocess.run(
        ctxscope(
            "run",
            "--jsonl",
            "--upstream",
            fake_anthropic.url,
            "--",
            sys.executable,
            "-c",
            CHILD,
            db=db,
        ),
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    # The proxy's line and the command's, in whichever order their processes wrote them.
    lines = [json.loads(text) for text in done.stdout.splitlines()]
    (child,) = [line for line in lines if "base_url" in line]
    (line,) = [line for line in lines if "session_id" in line]
    assert child["text"] == "through the proxy"
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", child["base_url"])
    assert child["first_party"] is None  # the upstream is not Anthropic's own
    assert (line["kind"], line["status"], line["messages"]) == ("main", 200, 1)
    store = Store.open(db)
    (exchange,) = store.exchanges(store.proxied_sessions()[0])
    assert exchange.request["messages"] == [{"role": "user", "content": "hi"}]
    # When the command has ended, run names the session it recorded (no agent session id:
    # the SDK sends no metadata), and the session holds the conversation: "hi", answered.
    assert "ctxscope: recorded session 1: `ctxscope show 1`, `ctxscope --resume 1`" in (
        done.stderr.splitlines()
    )
    assert [(m.role, m.content) for m in store.history(1).messages] == [
        ("user", "hi"),
        ("assistant", "through the proxy"),
    ]


def test_claude_code_keeps_its_1m_window_behind_the_proxy_to_anthropic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL", raising=False)
    first_party = child_env("http://127.0.0.1:1", "https://api.anthropic.com")
    assert first_party["_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL"] == "1"
    assert first_party["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:1"
    gateway = child_env("http://127.0.0.1:1", "https://llm-gateway.example.com")
    assert "_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL" not in gateway


def test_proxy_records_until_ctrl_c_and_stops_cleanly(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    fake_anthropic.script([text_reply("one"), text_reply("two")])
    db = tmp_path / "proxy.db"
    process = subprocess.Popen(
        ctxscope("proxy", "--port", "0", "--jsonl", "--upstream", fake_anthropic.url, db=db),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    try:
        assert process.stderr is not None and process.stdout is not None
        banner = process.stderr.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+", banner)
        assert url, banner
        sdk = client(url.group(0))
        for _ in range(2):
            sdk.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=5,
                messages=[{"role": "user", "content": "hi"}],
            )
        lines = [json.loads(process.stdout.readline()) for _ in range(2)]
        assert [line["id"] for line in lines] == [1, 2]
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
    store = Store.open(db)
    exchanges = store.exchanges(store.proxied_sessions()[0])
    assert [e.response["content"][0]["text"] for e in exchanges if e.response] == ["one", "two"]


def test_bad_upstream_and_missing_command_are_usage_errors(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    bad = subprocess.run(
        ctxscope("proxy", "--upstream", "ftp://example.com", db=db),
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert bad.returncode == 2
    assert "is not an http(s) URL" in bad.stderr
    empty = subprocess.run(
        ctxscope("run", db=db), capture_output=True, text=True, env=env(), timeout=60
    )
    assert empty.returncode == 2
    assert "run needs a command" in empty.stderr
    missing = subprocess.run(
        ctxscope("run", "--", str(tmp_path / "no-such-program"), db=db),
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert missing.returncode == 1
    assert missing.stderr.startswith("ctxscope: cannot run ")
    assert "No such file or directory" in missing.stderr


def test_run_passes_sigterm_on_to_the_command_and_stores_what_it_sent(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    """The command asks once, says so, then waits; SIGTERM to ``ctxscope run`` ends it (its
    exit code: 128 + 15), and the request it sent is stored."""
    fake_anthropic.script([text_reply("before the end")])
    waiting = CHILD.replace("sys.exit(3)", "sys.stdout.flush()\nimport time\ntime.sleep(60)")
    db = tmp_path / "term.db"
    process = subprocess.Popen(
        ctxscope(
            "run", "--upstream", fake_anthropic.url, "--", sys.executable, "-c", waiting, db=db
        ),
        stdout=subprocess.PIPE,
        text=True,
        env=env(),
    )
    try:
        assert process.stdout is not None
        assert json.loads(process.stdout.readline())["text"] == "before the end"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
    store = Store.open(db)
    (exchange,) = store.exchanges(store.proxied_sessions()[0])
    assert exchange.response is not None and exchange.outcome == "complete"


def test_a_port_in_use_is_one_line_and_no_banner(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            ctxscope("proxy", "--port", str(port), db=tmp_path / "x.db"),
            capture_output=True,
            text=True,
            env=env(),
            timeout=60,
        )
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()  # one line, no banner, no warning after it
    assert line.startswith(f"ctxscope: cannot listen on 127.0.0.1:{port}: ")
    assert "address already in use" in line


def start_proxy(upstream: str, db: Path) -> tuple[subprocess.Popen[str], str]:
    """``ctxscope proxy`` on a free port, and its URL (from its banner)."""
    process = subprocess.Popen(
        ctxscope("proxy", "--port", "0", "--jsonl", "--upstream", upstream, db=db),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    assert process.stderr is not None
    banner = process.stderr.readline()
    url = re.search(r"http://127\.0\.0\.1:\d+", banner)
    assert url, banner
    return process, url.group(0)


def test_a_request_in_flight_at_sigterm_is_answered_and_stored(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    """SIGTERM while the upstream is still answering (it waits 1.5 s): the proxy lets the
    request end, the client gets its answer, and the recorder's process stores it before the
    proxy exits (with 0)."""
    fake_anthropic.script([text_reply("late answer", delay=1.5)])
    db = tmp_path / "inflight.db"
    process, url = start_proxy(fake_anthropic.url, db)
    answers: list[str] = []
    try:

        def ask() -> None:
            answer = client(url).messages.create(
                model="claude-sonnet-4-6",
                max_tokens=5,
                messages=[{"role": "user", "content": "hi"}],
            )
            answers.append(answer.content[0].text)  # type: ignore[union-attr]

        asking = threading.Thread(target=ask)
        asking.start()
        wait_until(lambda: len(fake_anthropic.requests) == 1)  # at the upstream: in flight
        process.send_signal(signal.SIGTERM)
        asking.join(timeout=30)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
    assert answers == ["late answer"]
    store = Store.open(db)
    (exchange,) = store.exchanges(store.proxied_sessions()[0])
    assert exchange.outcome == "complete"
    assert exchange.response is not None
    assert exchange.response["content"][0]["text"] == "late answer"


def test_what_the_recorder_was_handed_is_stored_when_the_proxy_is_killed(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    """SIGKILL to the proxy (no chance to close) right after an answer: the recorder's process
    stores what it was handed, sees the proxy gone, and ends."""
    fake_anthropic.script([text_reply("one"), text_reply("two")])
    db = tmp_path / "killed.db"
    process, url = start_proxy(fake_anthropic.url, db)
    try:
        sdk = client(url)
        for _ in range(2):
            sdk.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=5,
                messages=[{"role": "user", "content": "hi"}],
            )
    finally:
        process.kill()
        process.wait(timeout=30)

    def stored() -> list[str]:
        if not db.exists():
            return []
        store = Store.open(db, read_only=True)
        try:
            sessions = store.proxied_sessions()
            exchanges = store.exchanges(sessions[0]) if sessions else []
            return [e.response["content"][0]["text"] for e in exchanges if e.response]
        finally:
            store.close()

    wait_until(lambda: stored() == ["one", "two"])


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait for ``condition`` to hold (checked every 20 ms), failing after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the state waited for never came"
        time.sleep(0.02)
