"""``--steer`` in flight: the proxy rewrites a request only where a rule says so, stores the
rewrite beside the agent's own body, never alters an answer, and a request no rule touches
(or one a rule fails on) goes out as the very bytes that came. The fake API charges requests
by its own prompt-cache model (strict prefix matching at each cache_control, lifetimes)."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.proxy.recorder import Recorder
from engine.proxy.server import Proxy, ProxyConfig, ProxyThread
from engine.proxy.steer_live import LiveSteering, sent_body
from engine.store import Store
from tests.fakes.anthropic_server import (
    FAKE_API_KEY,
    FakeAnthropicServer,
    FakePromptCache,
    text_reply,
)
from tests.proxy import shapes
from tests.proxy.conftest import client
from tests.proxy.test_steering import FILE, call, result

TOOLS = shapes.TOOLS


class Steered:
    """A proxy with steering, recording into ``db``."""

    def __init__(self, upstream: str, db: Path, steering: LiveSteering | None) -> None:
        self.db = db
        self.proxy = Proxy(ProxyConfig(upstream=upstream, port=0), Recorder(db), steering)
        self.thread = ProxyThread(self.proxy).start()
        self.stopped = False

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.thread.stop()


@pytest.fixture
def steered(fake_anthropic: FakeAnthropicServer, tmp_path: Path) -> Iterator[Steered]:
    running = Steered(fake_anthropic.url, tmp_path / "s.db", LiveSteering(("dups", "stale")))
    try:
        yield running
    finally:
        running.stop()


def post(url: str, raw: bytes) -> dict[str, Any]:
    request = urllib.request.Request(
        url + "/v1/messages",
        data=raw,
        headers={"content-type": "application/json", "x-api-key": FAKE_API_KEY,
                 "anthropic-version": "2023-06-01"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as answer:
        loaded: dict[str, Any] = json.loads(answer.read())
        return loaded


def requests(results: list[str]) -> list[dict[str, Any]]:
    """Claude Code-shaped requests (tools, system, session id), one per tool call."""
    task = shapes.user("Fix a.py")
    messages: list[dict[str, Any]] = [task]
    out = []
    for n, text in enumerate(results, start=1):
        messages += [call(n), result(n, text)]
        body = shapes.request(messages)
        del body["stream"], body["thinking"]
        body["max_tokens"] = 1024
        out.append(body)
    return out


ODD_BYTES = (
    b'{ "model" : "claude-sonnet-4-6",\n  "max_tokens": 5, "tools": [{"name": "Read", '
    b'"description": "Reads", "input_schema": {"type": "object"}}],\n'
    b'  "messages": [ {"role": "user", "content": "caf\\u00e9"} ] }'
)
"""A body with whitespace and an escape no serialiser would write back the same way."""


def test_a_request_no_rule_changes_goes_as_the_bytes_that_came(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    """Steering off, and steering on with nothing to change: the upstream gets the bytes."""
    fake_anthropic.script([text_reply("ok"), text_reply("ok")])
    for steering in (None, LiveSteering(("dups", "stale", "pins"))):
        running = Steered(fake_anthropic.url, tmp_path / f"{steering is None}.db", steering)
        try:
            post(running.proxy.url, ODD_BYTES)
        finally:
            running.stop()
    assert [r.raw for r in fake_anthropic.requests] == [ODD_BYTES, ODD_BYTES]


def test_a_repeated_result_is_replaced_stored_and_the_cache_still_matches(
    fake_anthropic: FakeAnthropicServer, steered: Steered
) -> None:
    """Three requests through the SDK: the second repeats the first's file read (a reference
    goes instead, below the floor), the third carries that reference again. The fake's cache
    reads, on the third request, everything the second sent up to its last marker: the
    rewrite broke nothing. The store holds the agent's bodies and, beside them, the rewrites,
    from which the sent body comes back exactly; the answers are the fake's, unaltered."""
    fake_anthropic.cache = FakePromptCache(min_tokens=100)
    bodies = requests([FILE, FILE, "ok, noted"])
    answers = [f"answer {n}" for n in range(3)]
    fake_anthropic.script([text_reply(a) for a in answers])
    sdk = client(steered.proxy.url)
    got = [sdk.messages.create(**body).content[0].text for body in bodies]
    steered.stop()
    assert got == answers
    sent = [r.body for r in fake_anthropic.requests]
    assert sent[0] == bodies[0]
    reference = sent[1]["messages"][4]["content"][0]["content"]
    assert reference.startswith("[ctxscope: this result is identical to the result of tool call")
    assert sent[2]["messages"][4] == sent[1]["messages"][4] | {"content": [
        {k: v for k, v in sent[1]["messages"][4]["content"][0].items() if k != "cache_control"}
    ]}  # fmt: skip
    # What request 2 sent, up to and including its last (marked) block, is read back whole.
    second = sum(tokens for _, tokens, _ in FakePromptCache.blocks(sent[1]))
    store = Store.open(steered.db)
    (sid,) = store.proxied_sessions()
    exchanges = store.exchanges(sid)
    assert [e.request for e in exchanges] == bodies  # the agent's own, as it sent them
    assert exchanges[0].steering is not None and exchanges[0].steering["rewrites"] == []
    assert [sent_body(e.request, e.steering) for e in exchanges] == sent
    (rewrite,) = exchanges[1].steering["rewrites"]  # type: ignore[index]
    assert (rewrite["rule"], rewrite["at"], rewrite["first"]) == (
        "dups", "messages[4].content[0]", True
    )  # fmt: skip
    assert rewrite["tokens_before"] > 500 > rewrite["tokens_after"]
    assert exchanges[2].usage is not None
    assert exchanges[2].usage.cache_read_input_tokens == second


def test_a_rule_that_fails_sends_the_request_as_it_came_and_says_so(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    def broken(_client: str) -> list[str]:
        raise OSError("pins unreadable")

    fake_anthropic.script([text_reply("ok")])
    running = Steered(
        fake_anthropic.url, tmp_path / "f.db", LiveSteering(("pins",), pins_of=broken)
    )
    compact = shapes.request([shapes.user("Your task is to create a detailed summary of the "
                                          "conversation so far.")])  # fmt: skip
    del compact["stream"], compact["thinking"]
    raw = json.dumps(compact).encode()
    try:
        post(running.proxy.url, raw)
    finally:
        running.stop()
    assert fake_anthropic.requests[0].raw == raw
    store = Store.open(tmp_path / "f.db")
    (exchange,) = store.exchanges(store.proxied_sessions()[0])
    assert exchange.steering is not None
    assert exchange.steering["failed"] == "OSError: pins unreadable"


def test_steer_takes_known_rules_only(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli_run import run

    code, _, err = run(capsys, "run", "--steer", "dups,compress", "--", "true")
    assert code == 2
    assert "unknown steering rule compress: choose from dups, stale, pins or all" in err


def test_diff_shows_a_rewrite_beside_what_the_agent_sent(
    fake_anthropic: FakeAnthropicServer, steered: Steered, capsys: pytest.CaptureFixture[str]
) -> None:
    """`show --diff N` on a steered request: the rewrite as a diff of the agent's result
    against the reference sent, and the tokens it took out."""
    from tests.cli_run import run

    bodies = requests([FILE, FILE])
    fake_anthropic.script([text_reply("a"), text_reply("b")])
    sdk = client(steered.proxy.url)
    for body in bodies:
        sdk.messages.create(**body)
    steered.stop()
    store = Store.open(steered.db)
    (sid,) = store.proxied_sessions()
    second = store.exchanges(sid)[1]
    code, out, err = run(
        capsys, "show", str(sid), "--diff", str(second.id), "--db", str(steered.db)
    )
    assert code == 0, err
    assert "steering: 1 rewrite(s) before sending" in out
    assert "messages[4].content[0] dups (made here):" in out
    assert "-line 0: def handler_0(request): return respond(request, 0)" in out
    reference = "the result of tool call toolu_01 above; not repeated]"
    assert "+[ctxscope: this result is identical to " + reference in out


def _users(store: Store) -> list[tuple[int, Any]]:
    """The first proxied session's user messages, once its conversation is built."""
    sessions = store.proxied_sessions()
    if not sessions:
        return []
    return [(sessions[0], m) for m in store.history(sessions[0]).messages if m.role == "user"]


def test_pins_reach_the_agents_compaction_call_through_the_proxy(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    """A message pinned in the proxied session (as `ctxscope pin` does) is handed to the
    agent's own compaction call, and kept verbatim in the continued conversation's first
    message; the stored bodies stay the agent's."""
    from engine.proxy.steering import PIN_ASK, PIN_HEADING

    db = tmp_path / "p.db"
    recorder = Recorder(db)
    proxy = Proxy(
        ProxyConfig(upstream=fake_anthropic.url, port=0),
        recorder,
        LiveSteering(("pins",), pins_of=recorder.pins_of),
    )
    thread = ProxyThread(proxy).start()
    uid = shapes.JSON_USER_ID
    task = shapes.user("Never touch the migrations folder. Fix a.py")
    done = {"role": "assistant", "content": [{"type": "text", "text": "Fixed."}]}
    ask = shapes.user("Your task is to create a detailed summary of the conversation so far.")
    summary = shapes.user("This session is being continued from a previous conversation. "
                          "Summary: a.py fixed.", "Go on")  # fmt: skip
    bodies = [
        shapes.request([task], user_id=uid),
        shapes.request([task, done, ask], user_id=uid),
        shapes.request([summary], user_id=uid),
    ]
    for body in bodies:
        del body["stream"], body["thinking"]
        body["max_tokens"] = 1024
    fake_anthropic.script([text_reply("Fixed."), text_reply("Summary: a.py fixed."),
                           text_reply("Going on.")])  # fmt: skip
    sdk = client(proxy.url)
    try:
        sdk.messages.create(**bodies[0])
        store = Store.open(db)
        # The recorder stores on its own thread: wait for the conversation to be built.
        deadline = time.monotonic() + 30
        while not (built := _users(store)) and time.monotonic() < deadline:
            time.sleep(0.02)
        sid, first = built[0]
        store.pin(sid, [first.id or 0])
        store.close()
        sdk.messages.create(**bodies[1])
        sdk.messages.create(**bodies[2])
    finally:
        thread.stop()
    sent = [r.body for r in fake_anthropic.requests]
    asked = sent[1]["messages"][-1]["content"][-1]["text"]
    assert asked.startswith(PIN_ASK)
    assert "<pinned>\nNever touch the migrations folder. Fix a.py\n</pinned>" in asked
    kept = sent[2]["messages"][0]["content"][-1]["text"]
    assert kept.startswith(PIN_HEADING) and "Never touch the migrations folder." in kept
    store = Store.open(db)
    assert [e.request for e in store.exchanges(sid)] == bodies


def test_stale_results_are_cleared_only_when_the_fakes_cache_expired(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    """Thirteen Claude Code-shaped requests of distinct reads, ten seconds apart, then a
    fourteenth 400 s later (the 5-minute entry of the conversation gone). Sent twice, each
    time to a fresh strict cache in the fake: passed through, and with `--steer stale`
    (stale after 10 turns, expecting no more requests, so it clears only when the cache is
    written again anyway). The fake's usage is the same for
    the first thirteen; on the fourteenth the steered request writes less, by what was
    cleared (the results of calls 1 to 3, more than 10 turns old)."""
    texts = [FILE.replace("line", f"row{n}") for n in range(14)]
    bodies = requests(texts)
    for body in bodies:  # the conversation's marker at 5 minutes (the system's stay 1 hour)
        body["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    times = [10.0 * n for n in range(13)] + [120.0 + 400.0]
    usages: list[list[Any]] = []
    for steer in (False, True):
        cache = FakePromptCache(min_tokens=1024)
        fake_anthropic.cache = cache
        clock = lambda cache=cache: cache.now  # noqa: E731
        steering = LiveSteering(("stale",), stale_turns=10, horizon=0, clock=clock)
        running = Steered(fake_anthropic.url, tmp_path / f"{steer}.db", steering if steer else None)
        fake_anthropic.script([text_reply("ok") for _ in bodies])
        sdk = client(running.proxy.url)
        try:
            for body, at in zip(bodies, times, strict=True):
                cache.now = at
                sdk.messages.create(**body)
        finally:
            running.stop()
        store = Store.open(tmp_path / f"{steer}.db")
        usages.append([e.usage for e in store.exchanges(store.proxied_sessions()[0])])
    plain, steered = usages
    assert plain[:13] == steered[:13]
    assert plain[13] is not None and steered[13] is not None
    # Nothing is read: the conversation's entry expired, and the 1-hour system prefix is
    # under the 1,024-token minimum (so never cached).
    assert steered[13].cache_read_input_tokens == plain[13].cache_read_input_tokens == 0
    sent = [r.body for r in fake_anthropic.requests[-14:]]
    cleared = [
        b["content"]
        for m in sent[13]["messages"]
        for b in m["content"]
        if b.get("type") == "tool_result" and b["content"].startswith("[ctxscope: an old")
    ]
    assert len(cleared) == 3
    saved = plain[13].cache_creation_input_tokens - steered[13].cache_creation_input_tokens
    originals = [result(n, texts[n - 1])["content"][0] for n in (1, 2, 3)]
    notice = {"type": "tool_result", "tool_use_id": "toolu_01", "content": cleared[0]}
    # The fake counts a block as a quarter of its JSON's characters, with where it sits.
    expected = sum(
        len("user0" + json.dumps(o, sort_keys=True)) // 4
        - len("user0" + json.dumps({**notice, "tool_use_id": o["tool_use_id"]}, sort_keys=True))
        // 4
        for o in originals
    )
    assert saved == expected


def test_steer_check_on_a_proxied_session_replays_its_requests_as_sent(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    """A proxied session's sequence is its requests as stored: three here; the row of what
    the API reported is the fake's usage summed; dups would replace the repeated read."""
    from engine.proxy.steer_check import steer_check
    from engine.settings.config import Settings

    fake_anthropic.cache = FakePromptCache(min_tokens=100)
    bodies = requests([FILE, FILE, "ok"])
    fake_anthropic.script([text_reply("ok") for _ in bodies])
    running = Steered(fake_anthropic.url, tmp_path / "c.db", None)
    sdk = client(running.proxy.url)
    try:
        for body in bodies:
            sdk.messages.create(**body)
    finally:
        running.stop()
    store = Store.open(tmp_path / "c.db")
    (sid,) = store.proxied_sessions()
    result = steer_check(store, sid, Settings(), ("dups",))
    assert result["requests"] == 3
    usages = [e.usage for e in store.exchanges(sid)]
    assert result["recorded"]["cache_read"] == sum(u.cache_read_input_tokens for u in usages if u)
    base, dups = result["rows"]
    assert dups["rewrites"] == {"dups": 1}
    assert dups["removed_tokens"]["dups"] > 400  # a 1.8 KB read for a one-line reference
