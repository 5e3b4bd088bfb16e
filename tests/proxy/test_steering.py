"""The steering rules (engine/proxy/steering.py) on request sequences shaped as Claude Code
sends them: each request repeats the one before and adds the answer and the next input, the
last block marked for the cache. What must hold: nothing the cache holds (above the frozen
floor) changes but by a rewrite made before and carried identically; the agent's own body is
never changed; a rule that fails sends the request as it came."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from engine.proxy.identity import without_cache_control
from engine.proxy.steer_check import run, steps_of
from engine.proxy.steering import PIN_ASK, PIN_HEADING, SteerConfig, Steerer, parse_rules
from engine.recordings.importing import import_session
from engine.settings.config import Settings
from engine.store import Store

FILE = "".join(
    f"line {i}: def handler_{i}(request): return respond(request, {i})\n" for i in range(30)
)
"""A tool result long enough to be worth a reference (about 600 tokens)."""
FIVE = {"type": "ephemeral"}


def call(n: int) -> dict[str, Any]:
    return {"role": "assistant", "content": [
        {"type": "tool_use", "id": f"toolu_{n:02d}", "name": "Read", "input": {"file_path": "a.py"}}
    ]}  # fmt: skip


def result(n: int, text: str) -> dict[str, Any]:
    return {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"toolu_{n:02d}", "content": text}
    ]}  # fmt: skip


def body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    sent = copy.deepcopy(messages)
    sent[-1]["content"][-1]["cache_control"] = FIVE
    return {"model": "claude-sonnet-4-6", "system": "You are a coding agent.", "messages": sent}


def conversation(results: list[str]) -> list[dict[str, Any]]:
    """One request per tool call: the task, then call n and its result, for each text."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "Fix a.py"}]}
    ]
    out = []
    for n, text in enumerate(results, start=1):
        messages += [call(n), result(n, text)]
        out.append(body(messages))
    return out


def plain(messages: list[Any]) -> str:
    return json.dumps(without_cache_control(messages))


def test_rules_by_name() -> None:
    assert parse_rules("dups,stale") == ("dups", "stale")
    assert parse_rules("all") == ("dups", "stale", "pins")
    with pytest.raises(
        ValueError, match="unknown steering rule nope: choose from dups, stale, pins or all"
    ):
        parse_rules("dups,nope")


def test_a_repeated_result_below_the_floor_becomes_a_reference_and_stays_one() -> None:
    """Request 2 repeats request 1 (three messages, its last one marked) and adds call 2,
    whose result is request 1's result again: below the floor (3), it becomes a reference;
    request 3 carries the same reference, so the cached prefix still matches."""
    requests = conversation([FILE, FILE, "short"])
    agent = copy.deepcopy(requests)
    steerer = Steerer(SteerConfig(("dups",)))
    first = steerer.steer(requests[0], 0)
    assert first.body is None  # nothing to do: the request goes as the agent sent it
    second = steerer.steer(requests[1], 10)
    assert second.floor == 3
    assert second.body is not None
    replaced = second.body["messages"][4]["content"][0]["content"]
    assert replaced.startswith(
        "[ctxscope: this result is identical to the result of tool call toolu_01"
    )
    (rewrite,) = second.rewrites
    assert (rewrite.rule, rewrite.at, rewrite.first) == ("dups", "messages[4].content[0]", True)
    assert rewrite.tokens_before > 500 > rewrite.tokens_after
    third = steerer.steer(requests[2], 20)
    assert third.floor == 5 and third.body is not None
    assert plain(third.body["messages"][:5]) == plain(second.body["messages"][:5])
    assert [r.first for r in third.rewrites] == [False]
    assert requests == agent  # the agent's bodies are never changed


def test_a_repeat_above_the_floor_is_left_alone() -> None:
    """A steerer that meets the conversation when both copies are already cached (the
    previous request held them): nothing above the floor is touched."""
    requests = conversation([FILE, FILE, "short"])
    steerer = Steerer(SteerConfig(("stale",)))  # no dups: the pair goes out as sent
    steerer.steer(requests[1], 0)
    steerer.config = SteerConfig(("dups",))
    later = steerer.steer(requests[2], 10)
    assert later.floor == 5 and later.body is None


def test_stale_results_are_cleared_when_the_cache_expired_anyway() -> None:
    """Twelve reads, stale after 10 turns, the rule expecting no more requests (horizon 0):
    while the cache is alive nothing is cleared; 301 s after the last request (the 5-minute
    entry gone) the results of calls 1 and 2 — more than 10 turns old — are cleared."""
    texts = [FILE.replace("line", f"row{n}") for n in range(13)]
    requests = conversation(texts)
    steerer = Steerer(SteerConfig(("stale",), stale_turns=10, horizon=0))
    at = 0.0
    for request in requests[:12]:
        steered = steerer.steer(request, at)
        assert steered.body is None
        at += 10
    late = steerer.steer(requests[12], at + 291)
    assert late.floor == 0 and late.body is not None
    assert [r.tool_use_id for r in late.rewrites] == ["toolu_01", "toolu_02"]
    assert late.body["messages"][2]["content"][0]["content"].startswith("[ctxscope: an old tool")


def test_pins_reach_the_compaction_call_and_stay_verbatim_after_it() -> None:
    pinned = "Never touch the migrations folder."
    steerer = Steerer(SteerConfig(("pins",), pins=lambda: [pinned]))
    task = {"role": "user", "content": [{"type": "text", "text": "Fix a.py"}]}
    answer = {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    ask = {"role": "user", "content": [{"type": "text", "text": "Your task is to create a "
           "detailed summary of the conversation so far."}]}  # fmt: skip
    call = steerer.steer(body([task, answer, ask]), 0)
    assert call.body is not None
    added = call.body["messages"][-1]["content"][-1]["text"]
    assert added.startswith(PIN_ASK) and f"<pinned>\n{pinned}\n</pinned>" in added
    summary = {"role": "user", "content": [{"type": "text", "text": "This session is being "
               "continued from a previous conversation. Summary: fixed a.py."}]}  # fmt: skip
    after = steerer.steer(body([summary]), 5)
    assert after.body is not None
    kept = after.body["messages"][0]["content"][-1]["text"]
    assert kept.startswith(PIN_HEADING) and pinned in kept
    later = steerer.steer(body([summary, answer, task]), 10)
    assert later.body is not None
    assert later.body["messages"][0] == after.body["messages"][0] | {
        "content": [summary["content"][0], after.body["messages"][0]["content"][-1]]
    }


def test_a_rule_that_fails_sends_the_request_as_it_came() -> None:
    def broken() -> list[str]:
        raise OSError("the pins could not be read")

    steerer = Steerer(SteerConfig(("pins",), pins=broken))
    ask = {"role": "user", "content": [{"type": "text", "text": "Your task is to create a "
           "detailed summary of the conversation so far."}]}  # fmt: skip
    request = body([ask])
    steered = steerer.steer(request, 0)
    assert steered.body is None
    assert steered.failed == "OSError: the pins could not be read"


CORPUS = Path("tests/data/corpus/yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl")


def test_on_a_corpus_session_no_block_above_the_floor_changes(tmp_path: Path) -> None:
    """Every request of the Claude Code pomodoro session (40, rebuilt from its recording) under
    every rule, stale after 3 turns and expecting many more requests (so the rule clears
    often): on each, what lies above the frozen floor is exactly what the request before sent
    there, and the system prompt is the agent's. The floor is below what the cache held only
    where the stale rule chose to write the prefix again (its first rewrites are there)."""
    store = Store.open(tmp_path / "c.db")
    sid = import_session(store, CORPUS, str(tmp_path), settings=Settings()).session.id
    assert sid is not None
    steps = steps_of(store, sid)
    assert len(steps) == 40
    steerer = Steerer(SteerConfig(("dups", "stale", "pins"), stale_turns=3, horizon=100))
    previous: list[Any] = []
    rewritten = 0
    for step in steps:
        steered = steerer.steer(step.body, step.at)
        assert not steered.failed
        sent = steered.body or step.body
        rewritten += sum(r.first for r in steered.rewrites)
        floor = steered.floor
        assert plain(sent["messages"][:floor]) == plain(previous[:floor])
        if floor < steered.held:
            assert any(r.rule == "stale" and r.first for r in steered.rewrites)
        assert sent["system"] == step.body["system"]
        previous = sent["messages"]
    assert rewritten > 0  # the rules did change requests, below the floor


def test_steer_check_runs_the_sequence_each_way(tmp_path: Path) -> None:
    """Passing through, the modelled cache reads and writes add up to the requests' local
    size; the dups rule finds nothing worth a reference in this session (its only repeated
    result, 11 times, is TodoWrite's 160-character confirmation: under 50 tokens), so its
    row is the pass-through's."""
    store = Store.open(tmp_path / "c.db")
    sid = import_session(store, CORPUS, str(tmp_path), settings=Settings()).session.id
    assert sid is not None
    steps = steps_of(store, sid)
    base = run(steps, Settings(), ())
    dups = run(steps, Settings(), ("dups",))
    assert base.requests == dups.requests == 40
    assert (dups.cache_read, dups.cache_write_5m, dups.cost) == (
        base.cache_read,
        base.cache_write_5m,
        base.cost,
    )
    assert dups.rewrites == {}


def test_steer_check_prints_the_table_and_says_when_a_rule_loses_money(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`steer-check` on the imported pomodoro session: the API's own figures first (the
    recorded cost is what `sessions` says the session cost), then pass-through and each rule.
    With the stale rule expecting as many more requests as it has seen (--horizon 1), it
    clears results whose rewrite costs more than it saves: the table says it loses money."""
    from tests.cli_run import run as cli

    db = str(tmp_path / "c.db")
    code, _, err = cli(capsys, "import", str(CORPUS), "--db", db)
    assert code == 0, err
    code, out, _ = cli(capsys, "sessions", "--json", "--db", db)
    (session,) = json.loads(out)
    code, out, err = cli(capsys, "steer-check", str(session["id"]), "--json", "--db", db)
    assert code == 0, err
    result = json.loads(out)
    assert result["requests"] == 40
    assert result["recorded"]["cost"] == pytest.approx(session["cost"], abs=1e-4)
    names = [row["name"] for row in result["rows"]]
    assert names == ["pass-through", "dups", "stale", "pins", "dups,stale,pins"]
    assert not any(row.get("loses_money") for row in result["rows"])
    code, text, _ = cli(
        capsys, "steer-check", str(session["id"]), "--rules", "stale", "--horizon", "1",
        "--db", db,
    )  # fmt: skip
    assert code == 0
    assert "stale loses money on this session: $" in text
