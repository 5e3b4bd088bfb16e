"""The OpenAI Responses API through the proxy (Codex's wire protocol): passed through
unchanged, recorded as a session keyed by ``prompt_cache_key``, its input chained like
messages, its usage read (cached input as cache reads), its compaction call marked."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

from engine.proxy.report import request_report
from engine.settings.config import Settings
from engine.store import Store
from tests.proxy.conftest import RunningProxy
from tests.proxy.responses_fake import USAGE, FakeResponsesServer, events

CONVERSATION = "019a8f2e-5b7c-7d3e-9f1a-2b3c4d5e6f70"


def item(role: str, text: str) -> dict[str, Any]:
    kind = "input_text" if role == "user" else "output_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def body(inputs: list[dict[str, Any]], stream: bool = True) -> dict[str, Any]:
    return {
        "model": "gpt-5-codex",
        "instructions": "You are Codex, a coding agent.",
        "input": inputs,
        "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}],
        "prompt_cache_key": CONVERSATION,
        "stream": stream,
    }


def post(port: int, path: str, payload: dict[str, Any]) -> tuple[int, bytes]:
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        data = json.dumps(payload).encode()
        con.request(
            "POST",
            path,
            body=data,
            headers={
                "content-type": "application/json",
                "authorization": "Bearer sk-openai-secret",
            },
        )
        response = con.getresponse()
        return response.status, response.read()
    finally:
        con.close()


def test_a_codex_conversation_is_passed_through_and_recorded(tmp_path: Path) -> None:
    first = body([item("user", "Fix the parser")])
    second = body(
        [*first["input"], item("assistant", "Patched the parser."), item("user", "Test it")]
    )
    compact = {k: v for k, v in second.items() if k not in ("stream", "tools")}
    with FakeResponsesServer() as upstream:
        direct = post(int(upstream.url.rsplit(":", 1)[1]), "/v1/responses", first)
        proxy = RunningProxy(upstream.url, tmp_path / "p.db")
        try:
            answers = [
                post(proxy.proxy.port, "/v1/responses", first),
                post(proxy.proxy.port, "/v1/responses", second),
                post(proxy.proxy.port, "/v1/responses/compact", compact),
                post(proxy.proxy.port, "/v1/responses", {"model": "gpt-5-codex"}),
            ]
        finally:
            proxy.stop()
        sent = [b for _, b in upstream.requests[1:]]
    assert answers[0] == direct  # the same bytes as the upstream's own answer
    assert b"event: response.completed" in answers[1][1]
    assert answers[3][0] == 400
    assert sent == [first, second, compact, {"model": "gpt-5-codex"}]
    store = Store.open(tmp_path / "p.db")
    sessions = store.proxied_sessions()
    exchanges = store.exchanges(sessions[0])
    assert store.get_session(sessions[0]).source == f"proxy:{CONVERSATION}"
    assert [e.request for e in exchanges] == [first, second, compact]
    assert [e.kind for e in exchanges] == ["main", "main", "compaction"]
    completed = list(events("Patched the parser."))[-1]["response"]
    assert exchanges[0].response == completed
    usage = exchanges[0].usage
    assert usage is not None
    # input_tokens 1,200 of which 1,000 cached: 200 uncached input, 1,000 cache reads.
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens) == (
        200,
        USAGE["input_tokens_details"]["cached_tokens"],  # type: ignore[index]
        30,
    )
    report = request_report(exchanges, Settings())
    assert [(r["kept"], r["appended"]) for r in report[:2]] == [(0, 1), (1, 2)]
    assert [r["cost"] for r in report] == [None, None, None]  # no OpenAI prices in ctxscope
    assert sum(x["tokens"] for x in report[0]["layers"]) == 1200
    data = b"".join(f.read_bytes() for f in tmp_path.glob("p.db*"))
    assert b"sk-openai-secret" not in data
