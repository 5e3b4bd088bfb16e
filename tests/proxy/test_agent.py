"""A session the proxy records from Claude Code is Claude Code's: its recorded agent is
``claude-code``, so its window, auto-compact point and countdown follow Claude Code's rule on
every surface (``context``, ``show``, ``sessions``), as an imported session's do.

What Claude Code sends (captured by others with mitmproxy, in public issues and pull
requests): ``User-Agent: claude-cli/<version> (external, cli)`` (``sdk-cli``,
``claude-vscode`` for other entry points), ``anthropic-beta: claude-code-20250219,…``, and a
system prompt whose identity block reads "You are Claude Code, Anthropic's official CLI for
Claude." (tests/proxy/shapes.py).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from engine.proxy.identity import agent_of_request
from engine.store import Store
from engine.store.schema import MIGRATIONS
from tests.cli_run import run
from tests.fakes.anthropic_server import FakeAnthropicServer, text_reply
from tests.proxy import shapes
from tests.proxy.conftest import RunningProxy, client

CLAUDE_HEADERS = {
    "User-Agent": "claude-cli/2.1.92 (external, cli)",
    "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
    "x-app": "cli",
}
USAGE = {
    "input_tokens": 10,
    "cache_read_input_tokens": 120_000,
    "cache_creation_input_tokens": 2_000,
    "output_tokens": 500,
}
"""The one call's usage: its context is 10 + 120,000 + 2,000 + 500 = 122,510 tokens."""


@pytest.mark.parametrize(
    ("headers", "system", "expected"),
    [
        ({"user-agent": "claude-cli/2.1.92 (external, sdk-cli)"}, None, ("claude-code", "2.1.92")),
        ({"user-agent": "claude-cli/2.0.0 (external, claude-vscode)"}, None,
         ("claude-code", "2.0.0")),
        ({"anthropic-beta": "oauth-2025-04-20, claude-code-20250219"}, None, ("claude-code", "")),
        ({"user-agent": "Anthropic/Python 0.82.0"}, shapes.SYSTEM, ("claude-code", "")),
        ({"user-agent": "Anthropic/Python 0.82.0"}, "You are a helpful assistant.", ("", "")),
        ({"anthropic-beta": "context-1m-2025-08-07"}, None, ("", "")),
    ],
)  # fmt: skip
def test_claude_code_is_told_by_its_user_agent_beta_or_system_prompt(
    headers: dict[str, str], system: Any, expected: tuple[str, str]
) -> None:
    body: dict[str, Any] = {"messages": []}
    if system is not None:
        body["system"] = system
    assert agent_of_request(headers, body) == expected


def figures_everywhere(db: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The figures of the one conversation in ``db`` as ``context``, ``show`` and
    ``sessions`` print them (``--json``), checked to agree; and the session's id."""
    store = Store.open(db, read_only=True)
    (sid,) = store.proxied_sessions()
    store.close()
    code, out, err = run(capsys, "context", str(sid), "--db", str(db), "--json")
    assert code == 0, err
    context = json.loads(out)["figures"]
    code, out, err = run(capsys, "show", str(sid), "--db", str(db), "--json")
    assert code == 0, err
    show = json.loads(out)["figures"]
    code, out, err = run(capsys, "sessions", "--db", str(db), "--json")
    assert code == 0, err
    listed = next(s for s in json.loads(out) if s["id"] == sid)["figures"]
    keys = ("context_window", "auto_compact_at", "context_tokens", "until_auto_compact")
    for seen in (show, listed):
        assert {k: seen[k] for k in keys} == {k: context[k] for k in keys}
    return {"sid": sid, **{k: context[k] for k in keys}}


def record_one(upstream: FakeAnthropicServer, db: Path, headers: dict[str, str]) -> None:
    upstream.script([text_reply("done", usage=USAGE)])
    proxy = RunningProxy(upstream.url, db)
    try:
        body = shapes.request([shapes.user("Fix the parser")])
        body.update(stream=False, max_tokens=1000)  # the SDK wants a stream above ~21k
        client(proxy.url, default_headers=headers).messages.create(**body)
    finally:
        proxy.stop()


def test_a_proxied_claude_code_session_has_claude_codes_window_and_trigger(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """claude-sonnet-4-6 under Claude Code: a 200,000 window (its 1M is an opt-in long
    context), auto-compact at 200,000 − 33,000 = 167,000, and after a call whose context is
    122,510 tokens, 167,000 − 122,510 = 44,490 left — the same on all three surfaces."""
    db = tmp_path / "proxy.db"
    record_one(fake_anthropic, db, CLAUDE_HEADERS)
    figures = figures_everywhere(db, capsys)
    assert figures["context_window"] == 200_000
    assert figures["auto_compact_at"] == 167_000
    assert figures["context_tokens"] == 122_510
    assert figures["until_auto_compact"] == 44_490
    store = Store.open(db, read_only=True)
    session = store.get_session(figures["sid"])
    store.close()
    assert (session.agent, session.agent_version) == ("claude-code", "2.1.92")


@pytest.mark.parametrize(
    ("beta", "window", "at", "left", "words"),
    [
        (",context-1m-2025-08-07", 1_000_000, 967_000, 844_490,
         "the context-1m-2025-08-07 beta in its latest request's anthropic-beta"),
        ("", 200_000, 167_000, 44_490, "Claude Code's 200,000 window"),
    ],
)  # fmt: skip
def test_the_context_1m_beta_a_request_sent_gives_the_1m_window(
    fake_anthropic: FakeAnthropicServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    beta: str,
    window: int,
    at: int,
    left: int,
    words: str,
) -> None:
    """Claude Code asks for claude-sonnet-4-6's 1M window with the ``context-1m-2025-08-07``
    beta in ``anthropic-beta`` (Anthropic's "Context windows" page: the 1M window is a beta
    opt-in for Sonnet 4.6 / Opus 4.6 through that header). With it: 1,000,000, auto-compact at
    1,000,000 − 33,000 = 967,000, 967,000 − 122,510 = 844,490 left; without it, the same model
    is gauged against its 200,000 (167,000; 44,490 left). The same on ``context``, ``show`` and
    ``sessions``, and ``context`` names the header as the window's source."""
    db = tmp_path / "proxy.db"
    headers = {**CLAUDE_HEADERS, "anthropic-beta": CLAUDE_HEADERS["anthropic-beta"] + beta}
    record_one(fake_anthropic, db, headers)
    figures = figures_everywhere(db, capsys)
    assert (figures["context_window"], figures["auto_compact_at"]) == (window, at)
    assert figures["until_auto_compact"] == left
    code, out, err = run(capsys, "context", str(figures["sid"]), "--db", str(db), "--json")
    assert code == 0, err
    assert words in json.loads(out)["figures"]["window_source"]


def test_another_clients_session_keeps_no_agent_and_no_trigger(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same request from a client that is not Claude Code (the SDK's own User-Agent, no
    Claude Code beta, its own system prompt): no recorded agent, so no agent's trigger."""
    db = tmp_path / "other.db"
    fake_anthropic.script([text_reply("done", usage=USAGE)])
    proxy = RunningProxy(fake_anthropic.url, db)
    try:
        body = shapes.request([shapes.user("Fix the parser")], system=[])
        body.update(stream=False, max_tokens=1000, system="You are a helpful assistant.")
        client(proxy.url).messages.create(**body)
    finally:
        proxy.stop()
    figures = figures_everywhere(db, capsys)
    assert figures["auto_compact_at"] is None
    assert figures["context_tokens"] == 122_510
    store = Store.open(db, read_only=True)
    assert store.get_session(figures["sid"]).agent == ""
    store.close()


def test_proxied_sessions_stored_before_get_claude_code_by_its_beta(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    """A database at schema 21 with two proxied sessions and no recorded agent: the one whose
    request named the ``claude-code-20250219`` beta (stored with the request) becomes Claude
    Code's; the other client's keeps none."""
    db = tmp_path / "old.db"
    record_one(fake_anthropic, db, CLAUDE_HEADERS)
    fake_anthropic.script([text_reply("done", usage=USAGE)])
    proxy = RunningProxy(fake_anthropic.url, db)
    try:
        client(proxy.url).messages.create(
            model="claude-sonnet-4-6",
            max_tokens=10,
            system="You are a helpful assistant.",
            messages=[{"role": "user", "content": "hi"}],
        )
    finally:
        proxy.stop()
    before = next(v for v, step in MIGRATIONS.items() if step.__name__ == "_proxied_agents")
    con = sqlite3.connect(db)
    con.execute("UPDATE session_row SET recorded_agent = NULL, recorded_agent_version = NULL")
    con.execute(f"PRAGMA user_version = {before}")
    con.commit()
    con.close()
    store = Store.open(db)
    agents = {
        store.get_session(sid).source: store.get_session(sid).agent
        for sid in store.proxied_sessions()
    }
    store.close()
    claude = f"proxy:{shapes.SESSION}"
    assert agents.pop(claude) == "claude-code"
    assert list(agents.values()) == [""]  # the other client's session
