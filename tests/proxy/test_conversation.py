"""A proxied session is a conversation: its requests and answers built into rounds, messages,
tool results, usage and compactions, so ``sessions``, ``show``, ``export`` and ``replay`` read
it as they read an imported session (docs/proxy.md, "A proxied session is a conversation").

Every request goes through the real SDK, the proxy and the fake Messages API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.proxy.recorder import Recorder
from engine.store import Store
from tests.cli_run import run
from tests.fakes.anthropic_server import FakeAnthropicServer, text_reply, tool_reply
from tests.proxy import shapes
from tests.proxy.conftest import RunningProxy, client
from tests.proxy.shapes import REMINDER, request, user

READ = {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "a.py"}}
U1 = user(REMINDER, "Fix the failing test in a.py")
A1 = {"role": "assistant", "content": [READ]}
U2 = {
    "role": "user",
    "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "def f(): return 1"}],
}
A2 = {"role": "assistant", "content": [{"type": "text", "text": "f returns 1; fixed."}]}
U3 = user("Now run the tests")
USAGES = [
    {"input_tokens": 20, "output_tokens": 50, "cache_read_input_tokens": 0,
     "cache_creation_input_tokens": 5000},
    {"input_tokens": 30, "output_tokens": 10, "cache_read_input_tokens": 5000,
     "cache_creation_input_tokens": 40},
    {"input_tokens": 15, "output_tokens": 8, "cache_read_input_tokens": 5040,
     "cache_creation_input_tokens": 25},
]  # fmt: skip


def send(proxy: RunningProxy, body: dict[str, Any]) -> Any:
    sdk = client(proxy.url)
    options = {k: v for k, v in body.items() if k != "stream"}
    with sdk.messages.stream(**options) as stream:
        return stream.get_final_message()


def three_requests(fake: FakeAnthropicServer, proxy: RunningProxy) -> None:
    """A task, its tool call and result, an answer, a follow-up answered: three requests."""
    fake.script(
        [
            tool_reply(("toolu_01", "Read", {"file_path": "a.py"}), usage=USAGES[0]),
            text_reply("f returns 1; fixed.", usage=USAGES[1]),
            text_reply("All tests pass.", usage=USAGES[2]),
        ]
    )
    for messages in ([U1], [U1, A1, U2], [U1, A1, U2, A2, U3]):
        send(proxy, request(messages))


def test_the_requests_become_rounds_messages_and_usage(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """Two user inputs are two rounds; the tool call, its result and each answer are the
    messages of the conversation, the reminder left out; each answer carries the usage of the
    request it answered (the three USAGES, in order)."""
    three_requests(fake_anthropic, proxy)
    proxy.stop()
    store = Store.open(proxy.db)
    (sid,) = store.proxied_sessions()
    rounds = store.rounds(sid)
    assert [r.index for r in rounds] == [1, 2]
    history = store.history(sid).messages
    assert [(m.role, m.content if m.role != "tool" else "") for m in history] == [
        ("user", "Fix the failing test in a.py"),
        ("assistant", ""),
        ("tool", ""),
        ("assistant", "f returns 1; fixed."),
        ("user", "Now run the tests"),
        ("assistant", "All tests pass."),
    ]
    assert history[1].tool_calls[0].name == "Read"
    assert history[2].meta.tool_use_id == "toolu_01"
    (observation,) = store.observations(sid)
    assert observation.text == "def f(): return 1"
    usages = store.usages(sid)
    assert [u.usage.model_dump(include=set(USAGES[0])) for u in usages] == USAGES
    assert [(u.round_index, u.step) for u in usages] == [(1, 1), (1, 2), (2, 1)]


def test_sessions_show_export_and_replay_read_it(
    fake_anthropic: FakeAnthropicServer,
    proxy: RunningProxy,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`sessions` counts its rounds and messages and prices it; `show` prints the
    conversation; `export` writes it as Anthropic JSON lines; the session opens by Claude
    Code's own session id too."""
    three_requests(fake_anthropic, proxy)
    proxy.stop()
    db = str(proxy.db)
    code, out, _ = run(capsys, "sessions", "--json", "--db", db)
    assert code == 0
    (row,) = json.loads(out)
    assert (row["rounds"], row["messages"], row["compactions"]) == (2, 6, 0)
    # Sonnet 4.6 at list price ($3 in, $15 out per MTok; cache write 1.25x, read 0.1x), the
    # three usages above summed: in 65, out 68, read 10,040, write 5,065.
    expected = (65 * 3 + 68 * 15 + 10_040 * 0.3 + 5_065 * 3.75) / 1e6
    assert row["cost"] == pytest.approx(expected, abs=1e-6)
    code, out, _ = run(capsys, "export", str(row["id"]), "--db", db)
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["role"] for line in lines] == ["user", "assistant", "user", "assistant"] * 1 + [
        "user",
        "assistant",
    ]
    assert lines[2]["content"][0]["tool_use_id"] == "toolu_01"
    code, by_agent_id, _ = run(capsys, "show", shapes.SESSION, "--json", "--db", db)
    assert code == 0
    shown = json.loads(by_agent_id)
    assert shown["session"]["id"] == row["id"]
    assert len(shown["history"]) == 6 and len(shown["requests"]) == 3
    code, out, err = run(capsys, "replay", str(row["id"]), "--json", "--db", db)
    assert code == 0, err
    (recorded, *strategies) = json.loads(out)["strategies"]
    # As recorded: three steps, each request's input side (input + cache read + write):
    # 5,020 + 5,070 + 5,080.
    assert (recorded["strategy"], recorded["steps"], recorded["total_input"]) == (
        "as-recorded",
        3,
        15_170,
    )
    assert len(strategies) == 6 and all(s["steps"] == 3 for s in strategies)
    code, out, err = run(capsys, "report", "--json", "--by", "agent", "--db", db)
    assert code == 0, err
    report = json.loads(out)
    assert report["totals"]["requests"] == 3
    assert report["totals"]["tokens"]["cache_read"] == 10_040
    assert [(g["key"], g["sessions"]) for g in report["groups"]] == [("proxy", 1)]


def test_a_compaction_call_and_the_continued_conversation(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """Claude Code's compaction: its summary call, then the conversation continued from the
    summary. The part before is archived under the summary as a recorded compaction, whose
    stats carry the call's usage; the continued part is the live history."""
    uid = shapes.JSON_USER_ID
    compact = user(
        "Your task is to create a detailed summary of the conversation so far, paying close "
        "attention to the user's explicit requests and your previous actions."
    )
    summary = (
        "This session is being continued from a previous conversation that ran out of "
        "context. Summary: a.py's f was fixed."
    )
    call_usage = {"input_tokens": 900, "output_tokens": 120, "cache_read_input_tokens": 0,
                  "cache_creation_input_tokens": 0}  # fmt: skip
    fake_anthropic.script(
        [
            text_reply("Fixed f.", usage=USAGES[0]),
            text_reply("Summary: a.py's f was fixed.", usage=call_usage),
            text_reply("Tests pass.", usage=USAGES[2]),
        ]
    )
    done = {"role": "assistant", "content": [{"type": "text", "text": "Fixed f."}]}
    send(proxy, request([U1], user_id=uid))
    send(proxy, request([U1, done, compact], user_id=uid))
    send(proxy, request([user(summary, "Now run the tests")], user_id=uid))
    proxy.stop()
    store = Store.open(proxy.db)
    (sid,) = store.proxied_sessions()
    (compaction,) = store.compactions(sid)
    assert compaction.stats["recorded"] is True
    assert compaction.stats["usage"]["output_tokens"] == 120
    assert compaction.stats["recorded_pre_tokens"] == 900
    assert compaction.messages_compacted == 2  # the task and its answer
    (active,) = [s for s in store.summaries(sid) if s.active]
    assert active.content == summary
    # The user's next words, sent in the summary's message, open the next round.
    live = store.history(sid).messages
    assert [(m.role, m.content) for m in live] == [
        ("user", "Now run the tests"),
        ("assistant", "Tests pass."),
    ]


def test_a_new_proxy_process_builds_the_session_again_whole(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy, tmp_path: Path
) -> None:
    """A second proxy (the agent resumed later) recording into the same database: the first
    request it stores builds the conversation again from every stored request, so nothing
    is written twice (six messages, then eight after one more exchange)."""
    three_requests(fake_anthropic, proxy)
    proxy.stop()
    again = RunningProxy(fake_anthropic.url, proxy.db)
    try:
        fake_anthropic.script([text_reply("Committed.", usage=USAGES[2])])
        a3 = {"role": "assistant", "content": [{"type": "text", "text": "All tests pass."}]}
        send(again, request([U1, A1, U2, A2, U3, a3, user("Commit it")]))
    finally:
        again.stop()
    store = Store.open(proxy.db)
    (sid,) = store.proxied_sessions()
    assert [m.content for m in store.history(sid).messages][-3:] == [
        "All tests pass.",
        "Commit it",
        "Committed.",
    ]
    assert len(store.history(sid).messages) == 8
    assert [r.index for r in store.rounds(sid)] == [1, 2, 3]


def test_a_conversation_that_cannot_be_built_is_said_and_the_request_kept(
    tmp_path: Path,
) -> None:
    """The request is stored even when its conversation cannot be built (here it opens with
    the assistant: no user input to open a round with); the failure is named."""
    from engine.exchanges import Exchange

    recorder = Recorder(tmp_path / "r.db")
    exchange = Exchange(request=request([A2]), thread="t")
    store = Store.open(tmp_path / "r.db")
    stored = store.add_exchange(exchange, source="proxy:x")
    recorder._build(store, stored)
    sid = stored.session_id or 0
    assert store.exchange_count(sid) == 1
    assert store.rounds(sid) == []
    assert list(recorder.failures) == [
        f"session {sid}: conversation not built: message 1: the conversation must start with a "
        "user input"
    ]
    recorder.close()


def test_a_pin_on_a_proxied_session_is_made_in_place_and_outlives_a_rebuild(
    fake_anthropic: FakeAnthropicServer,
    proxy: RunningProxy,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`ctxscope pin ID N` on a proxied session pins its message itself (no fork: the pin
    steers the agent's next compaction); when a later request writes its round again, the
    pin is still there."""
    fake_anthropic.script([text_reply("Looking.", usage=USAGES[0]), text_reply("Done.")])
    look = {"role": "assistant", "content": [{"type": "text", "text": "Looking."}]}
    send(proxy, request([U1]))
    proxy.stop()  # stored: the pin below sees the rows
    store = Store.open(proxy.db)
    (sid,) = store.proxied_sessions()
    first = store.history(sid).messages[0]
    code, out, err = run(capsys, "pin", str(sid), str(first.id), "--db", str(proxy.db))
    assert code == 0, err
    assert "pinned message" in out
    assert store.list_sessions()[0].session.id == sid  # no fork was made
    again = RunningProxy(fake_anthropic.url, proxy.db)
    try:
        send(again, request([U1, look, user("go on")]))
    finally:
        again.stop()
    pinned = [m.content for m in store.history(sid).messages if m.pinned]
    assert pinned == ["Fix the failing test in a.py"]


def test_a_subagents_requests_are_its_child_sessions_conversation(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy
) -> None:
    """Under one Claude Code session id, a request with tools but another first message and
    system prompt (a Task agent's) is a child session, built into its own conversation."""
    uid = shapes.JSON_USER_ID
    agent_system = [{"type": "text", "text": "You are an agent for Claude Code. Search."}]
    fake_anthropic.script([text_reply("Main answer."), text_reply("Found parse() in p.py.")])
    send(proxy, request([U1], user_id=uid))
    send(proxy, request([user("Search the code for parse()")], user_id=uid, system=agent_system))
    proxy.stop()
    store = Store.open(proxy.db)
    main, child = store.proxied_sessions()
    assert store.get_session(child).parent_session_id == main
    assert [(m.role, m.content) for m in store.history(child).messages] == [
        ("user", "Search the code for parse()"),
        ("assistant", "Found parse() in p.py."),
    ]
    assert [m.content for m in store.history(main).messages] == [
        "Fix the failing test in a.py",
        "Main answer.",
    ]


def test_requests_rebuilt_from_a_corpus_session_give_back_its_conversation(
    tmp_path: Path,
) -> None:
    """The pomodoro session imported by the Claude Code reader, then its 40 requests (as
    steer-check rebuilds them) stored as proxied requests, each answered by the assistant
    message that follows it: built into a conversation, they give back the imported
    messages — role and text (a tool message: its call and its result's full text), in
    order — up to the last request (the last three records, the user's own shell command
    after the last answer, were in no request), and one usage record per request. (The tool
    messages' compressed forms differ: the import knew Claude Code's structured results.)"""
    from datetime import UTC, datetime, timedelta

    from engine.exchanges import Exchange
    from engine.proxy.conversation import build
    from engine.proxy.steer_check import imported_steps
    from engine.recordings.importing import import_session
    from engine.settings.config import Settings

    store = Store.open(tmp_path / "c.db")
    corpus = Path("tests/data/corpus/yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl")
    imported = import_session(store, corpus, str(tmp_path), settings=Settings()).session.id
    assert imported is not None
    steps = imported_steps(store, imported)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    tools = [{"name": "Read", "input_schema": {"type": "object"}}]
    for k, step in enumerate(steps):
        n = len(step.body["messages"])
        following = steps[k + 1].body["messages"] if k + 1 < len(steps) else []
        answer = following[n]["content"] if len(following) > n else [{"type": "text", "text": "."}]
        exchange = Exchange(
            request={**step.body, "tools": tools},
            thread="t",
            status=200,
            response={"type": "message", "role": "assistant", "content": answer},
            usage=step.recorded,
            created_at=start + timedelta(seconds=step.at),
        )
        store.add_exchange(exchange, source="proxy:corpus")
    proxied = store.proxy_session("proxy:corpus")
    assert proxied is not None
    build(store, proxied, Settings())

    def said(session_id: int) -> list[tuple[str, str]]:
        full = {o.tool_use_id: o.text for o in store.observations(session_id)}
        return [
            (m.role, full[m.meta.tool_use_id or ""] if m.role == "tool" else m.content)
            for m in store.history(session_id).messages
        ]

    theirs, ours = said(imported), said(proxied)
    assert len(theirs) == 83 and len(ours) == 80
    assert ours[:79] == theirs[:79]
    assert len(store.usages(proxied)) == len(store.usages(imported)) == 40
