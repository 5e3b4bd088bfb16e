"""``ctxscope show ID --request N`` prints the request exactly as sent, ``--diff N`` the text
it changed since the request before (docs/proxy.md, "The request, as sent"). The requests go
through the real SDK, the proxy and the fake Messages API."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.store import Store
from tests.cli_run import run
from tests.fakes.anthropic_server import FAKE_API_KEY, FakeAnthropicServer, text_reply
from tests.proxy import shapes
from tests.proxy.conftest import RunningProxy
from tests.proxy.shapes import REMINDER, request, user
from tests.proxy.test_conversation import send

INSTRUCTIONS = "You are an interactive CLI tool.\nUse the tools available to you.\nBe brief."


def record(fake: FakeAnthropicServer, proxy: RunningProxy) -> tuple[list[dict[str, Any]], int]:
    """Three requests: a task; the task answered and a follow-up; then the system prompt's
    middle line changed and the follow-up edited (a rewind) — the bodies and the session."""
    system = [*shapes.SYSTEM[:2], {"type": "text", "text": INSTRUCTIONS}]
    u1 = user(REMINDER, "Fix the parser")
    a1 = {"role": "assistant", "content": [{"type": "text", "text": "Fixed."}]}
    bodies = [
        request([u1], system=system),
        request([u1, a1, user("Now add a test")], system=system),
        request(
            [u1, a1, user("Now add two tests")],
            system=[*system[:2], {"type": "text", "text": INSTRUCTIONS.replace("Use", "Prefer")}],
        ),
    ]
    fake.script([text_reply("ok") for _ in bodies])
    for body in bodies:
        send(proxy, body)
    proxy.stop()
    store = Store.open(proxy.db)
    (sid,) = store.proxied_sessions()
    store.close()
    return bodies, sid


def test_request_n_is_the_body_as_sent_with_every_cache_marker(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies, sid = record(fake_anthropic, proxy)
    db = str(proxy.db)
    code, out, err = run(capsys, "show", str(sid), "--request", "2", "--json", "--db", db)
    assert code == 0, err
    shown = json.loads(out)
    # The body the fake API received, value for value.
    assert shown["body"] == fake_anthropic.requests[1].body == bodies[1]
    # The one kept header, as the SDK sent it (the key it sent beside it is not kept).
    sent = {k.lower(): v for k, v in fake_anthropic.requests[1].headers.items()}
    assert shown["headers"] == {"anthropic-version": sent["anthropic-version"]}
    code, text, _ = run(capsys, "show", str(sid), "--request", "2", "--db", db)
    assert code == 0
    # Two markers: the identity line's (1 hour) and the last message's last block's.
    assert text.count('"cache_control"') == 2
    assert '"text": "Now add a test"' in text
    assert FAKE_API_KEY not in text and FAKE_API_KEY not in out
    code, _, err = run(capsys, "show", str(sid), "--request", "9", "--db", db)
    assert code == 1
    assert "no request #9 in this session (its requests: #1, #2, #3)" in err


def test_diff_n_names_the_changed_lines_and_the_edited_message(
    fake_anthropic: FakeAnthropicServer, proxy: RunningProxy, capsys: pytest.CaptureFixture[str]
) -> None:
    _, sid = record(fake_anthropic, proxy)
    db = str(proxy.db)
    code, out, err = run(capsys, "show", str(sid), "--diff", "3", "--json", "--db", db)
    assert code == 0, err
    diff = json.loads(out)
    assert diff["compared_with"] == 2
    (system,) = diff["system"]
    assert (system["at"], system["change"]) == ("system[2]", "changed")
    changed = [line for line in system["lines"] if line[:1] in "+-" and line[:3] not in "+++---"]
    assert changed == ["-Use the tools available to you.", "+Prefer the tools available to you."]
    (message,) = diff["messages"]
    assert (message["at"], message["change"]) == ("messages[2]", "edited")
    assert "-Now add a test" in message["lines"] and "+Now add two tests" in message["lines"]
    assert diff["tools"] == [] and diff["appended"] == []
    code, text, _ = run(capsys, "show", str(sid), "--diff", "2", "--db", db)
    assert code == 0
    # Request 2 against 1: nothing changed, two messages appended, the marker moved.
    assert "nothing sent before changed (cache markers aside)" in text
    assert "messages[1] appended:" in text and "messages[2] appended:" in text
    assert "cache markers: system[1], messages[0][1] → system[1], messages[2][0]" in text
