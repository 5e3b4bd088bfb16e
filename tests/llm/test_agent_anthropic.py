"""The loop, the store and the Anthropic provider together: ``ctxscope ask`` against the
local fake Messages API (the command run in this process, as tests/cli_run.py runs it)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from engine.store import Store
from tests.cli_run import run_redirected
from tests.fakes.anthropic_server import (
    FakeAnthropicServer,
    error_reply,
    prompt_too_long_reply,
    text_reply,
    tool_reply,
)


def ask(
    server: FakeAnthropicServer, db: Path, workspace: Path, text: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    """``ctxscope ask TEXT --json`` against ``server``, run by the CLI's ``main`` in this
    process (a process start costs ~2.7 s of CPU; how the command starts and ends as a process
    is tested in tests/cli and tests/security)."""
    argv = ["ask", text, "--db", str(db), "--workspace", str(workspace), "--json", *extra]
    with pytest.MonkeyPatch.context() as env:
        for name, value in {
            **server.env(),
            "CTXSCOPE_MAX_RETRIES": "2",
            "CTXSCOPE_RETRY_BASE_DELAY": "0.01",
            "CTXSCOPE_KEEP_ROUNDS": "1",
        }.items():
            env.setenv(name, value)
        code, out, err = run_redirected(*argv)
    return subprocess.CompletedProcess(["ctxscope", *argv], code, out, err)


def events(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_round_with_parallel_tools_and_cached_usage(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("alpha\nTODO beta\n")
    db = tmp_path / "a.db"
    fake_anthropic.script(
        [
            tool_reply(
                ("toolu_a", "Read", {"file_path": "README.md"}),
                ("toolu_b", "Grep", {"pattern": "TODO", "path": "."}),
                text="Thought: read and search.",
                usage={
                    "input_tokens": 900,
                    "output_tokens": 40,
                    "cache_creation_input_tokens": 2100,
                },
            ),
            text_reply(
                "README has one TODO.",
                usage={"input_tokens": 300, "output_tokens": 12, "cache_read_input_tokens": 2100},
            ),
        ]
    )
    proc = ask(fake_anthropic, db, ws, "look at @README.md")
    assert proc.returncode == 0, proc.stderr
    result = events(proc)[-1]
    assert result["answer"] == "README has one TODO." and result["provider"] == "anthropic"

    sent = fake_anthropic.requests
    assert len(sent) == 2
    # cache breakpoints: on the stable prefix only (tools, L1 system), never in messages
    body = sent[0].body
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in json.dumps(body["messages"])
    # the second step sent the full observations of both tools
    results = [b for b in sent[1].body["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["toolu_a", "toolu_b"]
    assert "TODO beta" in json.dumps(results[0]["content"])

    store = Store.open(db)
    usage = store.usages(result["session_id"])
    assert [
        (u.usage.cache_creation_input_tokens, u.usage.cache_read_input_tokens) for u in usage
    ] == [(2100, 0), (0, 2100)]
    assert usage[1].usage.input_side == 2400 and usage[1].local_estimate
    msgs = store.history(result["session_id"]).messages
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "tool", "assistant"]
    store.close()


def test_prompt_too_long_compacts_and_retries(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    db = tmp_path / "b.db"
    fake_anthropic.script([text_reply("first"), text_reply("second")])
    first = events(ask(fake_anthropic, db, ws, "one"))[-1]
    sid = str(first["session_id"])
    assert events(ask(fake_anthropic, db, ws, "two", "--session", sid))[-1]["answer"] == "second"

    summary = (
        "## 📌 Archived Session Summary\n*(Contains context from a to b)*\n\n"
        "### 🎯 Objectives & Status\n* **Original Goal**: one"
    )
    fake_anthropic.script([prompt_too_long_reply(), text_reply(summary), text_reply("fits")])
    proc = ask(fake_anthropic, db, ws, "three", "--session", sid)
    assert proc.returncode == 0, proc.stderr
    evs = events(proc)
    finished = [e for e in evs if e["type"] == "compaction_finished"]
    assert finished and finished[0]["compaction"]["trigger"] == "emergency"
    assert evs[-1]["answer"] == "fits"
    # the summary call is a separate, non-streaming request with the summary prompt
    summary_call = fake_anthropic.requests[-2]
    assert not summary_call.stream and "Archived Session Summary" in json.dumps(
        summary_call.body["system"]
    )
    store = Store.open(db)
    # the model's summary, with the note naming its archived segment (searchable by Recall)
    [segment] = store.segments(int(sid))
    assert store.history(int(sid)).summaries[0].content == (
        f"{summary}\n\n*(Raw messages archived as segment #{segment.id}; "
        "the Recall tool searches them.)*"
    )
    # keep_rounds=1: round 1 goes, round 2 (the keep zone) and the round in progress stay
    assert [r.archived for r in store.rounds(int(sid))] == [True, False, False]
    store.close()


def test_auth_error_is_one_clear_failure(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_anthropic.script([error_reply(401)])
    proc = ask(fake_anthropic, tmp_path / "c.db", ws, "hello")
    assert proc.returncode == 1
    evs = events(proc)
    errors = [e for e in evs if e["type"] == "error"]
    assert len(errors) == 1 and errors[0]["kind"] == "auth"
    assert "ANTHROPIC_API_KEY" in errors[0]["message"]
    assert evs[-1]["status"] == "error"
    assert len(fake_anthropic.requests) == 1


def test_overloaded_retries_are_visible(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_anthropic.script([error_reply(529), error_reply(529), text_reply("finally")])
    proc = ask(fake_anthropic, tmp_path / "d.db", ws, "hello")
    assert proc.returncode == 0, proc.stderr
    evs = events(proc)
    waits = [e for e in evs if e["type"] == "retry_waiting"]
    assert [w["attempt"] for w in waits] == [1, 2]
    assert evs[-1]["answer"] == "finally"
