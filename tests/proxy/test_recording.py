"""What the proxy stores: each Messages request exactly as sent and its answer (a stream
reassembled), linked into sessions by Claude Code's session id, each piece of a body stored
once; and ``show --json``'s ``requests[]`` built from them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.proxy.identity import client_session, is_compaction
from engine.proxy.report import request_report
from engine.settings.config import Settings
from engine.store import Store
from tests.cli_run import run_redirected
from tests.fakes.anthropic_server import FakeAnthropicServer, text_reply, tool_reply
from tests.postgres_server import PostgresServer
from tests.proxy import shapes
from tests.proxy.conftest import RunningProxy, client
from tests.proxy.shapes import REMINDER, request, user

SUBAGENT_SYSTEM = [
    {
        "type": "text",
        "text": "You are an agent for Claude Code, Anthropic's official CLI for Claude. Given "
        "the user's message, use the tools available to complete the task.",
    }
]
"""A subagent's own system prompt (Claude Code gives its Task agents one)."""

CREATED = {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 4000}
FIRST_USAGE = {
    "input_tokens": 20,
    "output_tokens": 50,
    "cache_creation_input_tokens": 5000,
    "cache_read_input_tokens": 0,
}


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    """The database the proxy records into: an SQLite file, or a PostgreSQL database."""
    return str(request.param)


@pytest.fixture
def proxy(
    backend: str,
    fake_anthropic: FakeAnthropicServer,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> Iterator[RunningProxy]:
    """The proxy of tests/proxy/conftest.py, recording into the ``backend``'s database."""
    server: PostgresServer | None = None
    db: Path | str = tmp_path / "proxy.db"
    if backend == "postgresql":
        server = request.getfixturevalue("postgres_server")
        db = server.create_database("proxy")
    running = RunningProxy(fake_anthropic.url, db)
    try:
        yield running
    finally:
        running.stop()
        if server is not None:
            server.drop_database(str(db))


def send(proxy: RunningProxy, body: dict[str, Any]) -> Any:
    """Send ``body`` with the SDK (streamed when it says so); the final message."""
    sdk = client(proxy.url)
    options = {k: v for k, v in body.items() if k != "stream"}
    if body.get("stream"):
        with sdk.messages.stream(**options) as stream:
            return stream.get_final_message()
    return sdk.messages.create(**options)


def conversation() -> list[dict[str, Any]]:
    """Three requests of one Claude Code conversation: a task, a tool result, a follow-up."""
    u1 = user(REMINDER, "Fix the failing test in a.py")
    a1 = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "a.py"}}
        ],
    }
    u2 = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "def f(): return 1"}
        ],
    }
    a2 = {"role": "assistant", "content": [{"type": "text", "text": "f returns 1; fixed."}]}
    u3 = user("Now run the tests")
    return [
        request([u1]),
        request([u1, a1, u2]),
        request([u1, a1, u2, a2, u3]),
    ]


@pytest.fixture
def recorded(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> tuple[list[dict[str, Any]], Store]:
    bodies = conversation()
    fake_anthropic.script(
        [
            tool_reply(
                ("toolu_01", "Read", {"file_path": "a.py"}),
                usage=FIRST_USAGE,
                cache_creation=CREATED,
                chunk_size=5,
            ),
            text_reply(
                "f returns 1; fixed.",
                usage={
                    "input_tokens": 30,
                    "output_tokens": 10,
                    "cache_read_input_tokens": 5000,
                    "cache_creation_input_tokens": 40,
                },
            ),
            text_reply(
                "All tests pass.",
                usage={
                    "input_tokens": 15,
                    "output_tokens": 8,
                    "cache_read_input_tokens": 5040,
                    "cache_creation_input_tokens": 25,
                },
            ),
        ]
    )
    for body in bodies:
        send(proxy, body)
    proxy.stop()
    return bodies, Store.open(proxy.db)


def test_a_conversation_is_one_session_with_every_request_exact(
    recorded: tuple[list[dict[str, Any]], Store], fake_anthropic: FakeAnthropicServer
) -> None:
    bodies, store = recorded
    (session_id,) = store.proxied_sessions()
    session = store.get_session(session_id)
    assert session.provider == "proxy"
    assert session.source == f"proxy:{shapes.SESSION}"
    exchanges = store.exchanges(session_id)
    assert [e.request for e in exchanges] == bodies
    # What the SDK sent is what the upstream got is what was stored.
    assert [r.body for r in fake_anthropic.requests] == [e.request for e in exchanges]
    assert [e.kind for e in exchanges] == ["main"] * 3
    assert len({e.thread for e in exchanges}) == 1
    first = exchanges[0]
    assert first.response is not None
    assert first.response["content"] == [
        {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "a.py"}}
    ]
    assert first.response["stop_reason"] == "tool_use"
    assert first.usage is not None
    assert first.usage.cache_creation_input_tokens == 5000
    assert first.usage.cache_creation_1h_input_tokens == 4000
    assert first.cache_creation == CREATED
    assert exchanges[2].usage is not None and exchanges[2].usage.cache_read_input_tokens == 5040


def test_each_piece_of_a_body_is_stored_once(
    recorded: tuple[list[dict[str, Any]], Store],
) -> None:
    """The distinct system blocks, tools and messages of the three bodies, counted here from
    the bodies themselves, are exactly the blobs stored: no request stores its prefix again."""
    bodies, store = recorded
    distinct = {
        json.dumps(piece)
        for body in bodies
        for key in ("system", "tools", "messages")
        for piece in body[key]
    }
    assert store.exchange_blob_count() == len(distinct) == 13  # 3 system, 3 tools, 7 messages


def show(*argv: str) -> str:
    """What ``ctxscope show ARGS`` prints, run by the CLI's main in this process (a python
    start costs ~1-2 s of CPU; nothing here is about the process)."""
    code, out, err = run_redirected("show", *argv)
    assert code == 0, err
    return out


def test_show_json_gives_the_requests_with_their_diffs_and_cost(
    recorded: tuple[list[dict[str, Any]], Store], proxy: RunningProxy
) -> None:
    _, store = recorded
    (session_id,) = store.proxied_sessions()
    store.close()
    requests = json.loads(show(str(session_id), "--json", "--db", str(proxy.db)))["requests"]
    assert [r["appended"] for r in requests] == [1, 2, 2]
    assert [r["kept"] for r in requests] == [0, 1, 3]
    assert [r["appended_kinds"] for r in requests] == [
        ["user text text"],
        ["assistant tool_use", "user tool_result"],
        ["assistant text", "user text"],
    ]
    assert [r["removed"] for r in requests] == [0, 0, 0]
    assert [r["cache_break"] for r in requests] == [None, None, None]
    # The layers add up to the input the API reported: input + cache read + cache write.
    assert [sum(x["tokens"] for x in r["layers"]) for r in requests] == [5020, 5070, 5080]
    assert [x["name"] for x in requests[0]["layers"]] == ["tools", "system", "history", "input"]
    assert requests[0]["layers"][2]["tokens"] == 0  # the first request has no history
    # Sonnet 4.6 list prices: $3 input, $15 output per MTok; a 5-minute cache write 1.25x
    # input, a 1-hour one 2x, a cache read 0.1x (Anthropic's pricing page).
    first = (20 * 3 + 1000 * 3 * 1.25 + 4000 * 3 * 2 + 50 * 15) / 1e6
    second = (30 * 3 + 40 * 3 * 1.25 + 5000 * 3 * 0.1 + 10 * 15) / 1e6
    assert requests[0]["cost"] == pytest.approx(first)
    assert requests[1]["running_cost"] == pytest.approx(first + second)
    text = show(str(session_id), "--db", str(proxy.db))
    assert "3 proxied requests:" in text
    assert "in 5,020 (tools" in text


def test_where_the_cached_prefix_broke_and_why(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """A changed reminder in the first message, then a reordered tool list, then a changed
    system block: each named as where the cache broke."""
    u1 = user(REMINDER, "Fix it")
    changed = user(REMINDER.replace("make test", "pytest"), "Fix it")
    a1 = {"role": "assistant", "content": [{"type": "text", "text": "On it."}]}
    bodies = [
        request([u1]),
        request([changed, a1, user("go on")]),
        request([changed, a1, user("go on")], tools=list(reversed(shapes.TOOLS))),
        request(
            [changed, a1, user("go on")],
            tools=list(reversed(shapes.TOOLS)),
            system=[*shapes.SYSTEM[:2], {"type": "text", "text": "Other instructions."}],
        ),
    ]
    fake_anthropic.script([text_reply("ok") for _ in bodies])
    for body in bodies:
        send(proxy, body)
    proxy.stop()
    store = Store.open(proxy.db)
    report = request_report(store.exchanges(store.proxied_sessions()[0]), Settings())
    breaks = [r["cache_break"] for r in report]
    assert breaks[0] is None
    assert breaks[1] == {"where": "messages[0]", "why": "a system reminder in message 0 changed"}
    assert breaks[2] == {"where": "tools", "why": "the tool list was reordered"}
    assert breaks[3] == {"where": "system[2]", "why": "system block 2 changed"}


def test_compaction_subagent_and_side_calls_are_linked(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """Under one Claude Code session id (the JSON shape): the conversation, its compaction
    call, the conversation continued from the summary, a subagent's conversation (tools,
    another first message) and a side call without tools."""
    u1 = user(REMINDER, "Refactor the parser")
    a1 = {"role": "assistant", "content": [{"type": "text", "text": "Done with step one."}]}
    compact = user(
        "Your task is to create a detailed summary of the conversation so far, paying close "
        "attention to the user's explicit requests and your previous actions."
    )
    resumed = user(
        "This session is being continued from a previous conversation that ran out of "
        "context. The summary below covers the earlier portion of the conversation.",
        "Continue",
    )
    uid = shapes.JSON_USER_ID
    bodies = [
        request([u1], user_id=uid),
        request([u1, a1, compact], user_id=uid, tools=[]),
        request([resumed], user_id=uid),
        request([user("Search the code for parse()")], user_id=uid, system=SUBAGENT_SYSTEM),
        request([user("Write a 5-word title for: Refactor the parser")], user_id=uid, tools=[]),
    ]
    for body in bodies:
        if not body["tools"]:
            del body["tools"]
    fake_anthropic.script([text_reply("ok") for _ in bodies])
    for body in bodies:
        send(proxy, body)
    proxy.stop()
    store = Store.open(proxy.db)
    sessions = store.proxied_sessions()
    assert len(sessions) == 3
    main = store.get_session(sessions[0])
    kinds = [e.kind for e in store.exchanges(main.id or 0)]
    assert kinds == ["main", "compaction", "main"]
    children = [store.get_session(s) for s in sessions[1:]]
    assert [c.parent_session_id for c in children] == [main.id, main.id]
    assert [store.exchanges(c.id or 0)[0].kind for c in children] == ["subagent", "side"]
    report = request_report(store.exchanges(main.id or 0), Settings())
    assert report[2]["cache_break"]["why"] == "a compaction replaced the history with its summary"


def test_claude_codes_session_id_in_both_shapes() -> None:
    for user_id in (shapes.LEGACY_USER_ID, shapes.JSON_USER_ID):
        assert client_session({"metadata": {"user_id": user_id}}) == shapes.SESSION
    assert client_session({"metadata": {"user_id": "someone"}}) is None
    assert client_session({}) is None
    assert is_compaction(
        request([user("Your task is to create a detailed summary of the conversation so far.")])
    )
    assert not is_compaction(request([user("Summarise the parser module")]))


def test_a_stream_cut_by_the_upstream_is_stored_incomplete(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    fake_anthropic.script([text_reply("a long answer cut short", cut_after=3)])
    with pytest.raises(Exception):  # noqa: B017, PT011 - the SDK's own error for a cut stream
        send(proxy, request([user("hi")]))
    proxy.stop()
    store = Store.open(proxy.db)
    (exchange,) = store.exchanges(store.proxied_sessions()[0])
    assert exchange.outcome == "incomplete"
    assert exchange.response is not None and exchange.response["stop_reason"] is None


def test_show_what_ifs_puts_the_recorded_row_beside_each_strategy(
    recorded: tuple[list[dict[str, Any]], Store], proxy: RunningProxy
) -> None:
    """The as-recorded row is the three requests' own usage (summed here from the scripted
    figures); each of the six strategies replays the conversation's three answers."""
    _, store = recorded
    (session_id,) = store.proxied_sessions()
    store.close()
    shown = show(str(session_id), "--json", "--what-ifs", "--db", str(proxy.db))
    rows = json.loads(shown)["what_ifs"]
    recorded_row = rows[0]
    assert recorded_row["strategy"] == "as recorded"
    inputs = [20 + 5000, 30 + 5000 + 40, 15 + 5040 + 25]  # uncached + cache read + cache write
    assert recorded_row["total_input"] == sum(inputs)
    assert recorded_row["peak"] == max(inputs)
    assert (recorded_row["cache_read"], recorded_row["cache_write"]) == (10040, 5065)
    third = (15 * 3 + 25 * 3 * 1.25 + 5040 * 3 * 0.1 + 8 * 15) / 1e6
    first = (20 * 3 + 1000 * 3 * 1.25 + 4000 * 3 * 2 + 50 * 15) / 1e6
    second = (30 * 3 + 40 * 3 * 1.25 + 5000 * 3 * 0.1 + 10 * 15) / 1e6
    assert recorded_row["cost"] == pytest.approx(first + second + third, abs=1e-4)
    strategies = rows[1:]
    assert sorted(r["strategy"] for r in strategies) == sorted(
        ["layered", "reset-hint", "mock-user", "message-window", "head-middle-tail", "masking"]
    )
    assert {r["steps"] for r in strategies} == {3}  # the three recorded answers
    assert all(r["total_input"] > 0 for r in strategies)


@pytest.mark.parametrize(
    ("breakdown", "why"),
    [
        (
            {"ephemeral_5m_input_tokens": 3000},
            "the cache expired (600 s since the previous request)",
        ),
        ({"ephemeral_1h_input_tokens": 3000}, "no cache read although the prefix is the same"),
    ],
)
def test_an_expired_cache_is_told_from_a_broken_prefix(breakdown: dict[str, int], why: str) -> None:
    """The same request ten minutes later reads nothing from the cache: past a 5-minute
    entry's life, within a 1-hour one's."""
    from datetime import UTC, datetime, timedelta

    from engine.exchanges import Exchange
    from engine.models import Usage

    body = request([user("hi")])
    start = datetime(2026, 11, 27, 3, 0, tzinfo=UTC)
    first = Exchange(
        id=1, request=body, model="claude-sonnet-4-6", created_at=start,
        usage=Usage(input_tokens=5, cache_creation_input_tokens=3000), cache_creation=breakdown,
    )  # fmt: skip
    again = Exchange(
        id=2, request=body, model="claude-sonnet-4-6", created_at=start + timedelta(minutes=10),
        usage=Usage(input_tokens=5, cache_creation_input_tokens=3000),
    )  # fmt: skip
    report = request_report([first, again], Settings())
    assert report[1]["cache_break"] == {"where": "tools", "why": why}
