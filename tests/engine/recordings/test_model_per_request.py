"""Each request priced at the model that answered it.

A Claude Code file built here whose first assistant record is the API error Claude Code
writes itself (``model: "<synthetic>"``, ``isApiErrorMessage``), then two Opus 4.6 responses
and one Haiku 4.5 side call, on 2026-11-20 (list prices in genai-prices' data, the same as
Anthropic's price page: Opus 4.6 $5 input, $0.50 cache read, $25 output per million tokens;
Haiku 4.5 $1 input, $5 output; every request under 200,000 tokens, so no long-context tier):

- Opus A: input 2,000, cache read 100,000, output 1,000 → 0.010 + 0.050 + 0.025 = $0.085
- Opus B: input 1,000, cache read 120,000, output 2,000 → 0.005 + 0.060 + 0.050 = $0.115
- Haiku: input 10,000, output 500 → 0.010 + 0.0025 = $0.0125

In all $0.2125 (all at Opus it would be $0.2625; with the session's model taken from the
``<synthetic>`` record, unpriced).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.figures.prices import price_for
from engine.report.card import build_report
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.helpers import import_all


def rec(kind: str, uuid: str, parent: str | None, t: int, **f: Any) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "m0de1-per-request",
        "cwd": "/ws",
        "version": "2.1.119",
        "type": kind,
        "uuid": uuid,
        "timestamp": f"2026-11-20T12:00:{t:02d}.000Z",
        **f,
    }


def reply(uuid: str, parent: str, t: int, model: str, text: str, use: dict, **f: Any) -> dict:
    message = {
        "role": "assistant",
        "id": f"msg_{uuid}",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "usage": use,
    }
    return rec("assistant", uuid, parent, t, message=message, **f)


def ask(uuid: str, parent: str | None, t: int, text: str) -> dict[str, Any]:
    return rec("user", uuid, parent, t, message={"role": "user", "content": text})


ZERO = {"input_tokens": 0, "output_tokens": 0}
LINES = [
    ask("u1", None, 1, "Explain the retry loop"),
    reply("e1", "u1", 2, "<synthetic>", "API Error: 529 overloaded", ZERO, isApiErrorMessage=True),
    ask("u2", "e1", 3, "Try again please"),
    reply(
        "a1",
        "u2",
        4,
        "claude-opus-4-6",
        "It retries 3 times.",
        {"input_tokens": 2000, "cache_read_input_tokens": 100000, "output_tokens": 1000},
    ),
    ask("u3", "a1", 5, "Name this session"),
    reply(
        "h1",
        "u3",
        6,
        "claude-haiku-4-5",
        "Retry loop",
        {"input_tokens": 10000, "output_tokens": 500},
    ),
    ask("u4", "h1", 7, "And the backoff?"),
    reply(
        "a2",
        "u4",
        8,
        "claude-opus-4-6",
        "Exponential, base 2.",
        {"input_tokens": 1000, "cache_read_input_tokens": 120000, "output_tokens": 2000},
    ),
]


def test_each_request_is_priced_at_its_own_model(tmp_path: Path, store: Store) -> None:
    path = tmp_path / "m0de1-per-request.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in LINES))
    (one,) = import_all(store, path)
    sid = one.report.session.id
    assert sid is not None
    assert store.get_session(sid).model == "claude-opus-4-6"  # not "<synthetic>"
    assert [u.model for u in one.usages] == [
        "claude-opus-4-6",
        "claude-haiku-4-5",
        "claude-opus-4-6",
    ]
    report = build_report(store, Settings())
    (line,) = report.sessions
    assert line.figures.total_cost == pytest.approx(0.2125)
    assert sorted(line.models) == ["claude-haiku-4-5", "claude-opus-4-6"]
    assert line.models["claude-haiku-4-5"].total_cost == pytest.approx(0.0125)
    by_model = build_report(store, Settings(), by="model")
    assert by_model.groups["claude-opus-4-6"].total_cost == pytest.approx(0.2)


def test_the_session_page_prices_each_request_at_its_own_model(
    tmp_path: Path, store: Store
) -> None:
    """``export ID --format html``: $0.21 (0.2125), not the $0.26 of every call at Opus, and
    three calls (the ``<synthetic>`` error record is not one)."""
    from engine.report.session_page import session_html

    path = tmp_path / "m0de1-per-request.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in LINES))
    (one,) = import_all(store, path)
    page = session_html(store, one.report.session.id or 0, Settings())
    assert "cost at list price</span><b>$0.21</b>" in page
    assert "API calls</span><b>3</b>" in page
    assert "recorded by Claude Code 2.1.119" in page


def test_a_provider_prefix_is_priced_as_the_model() -> None:
    """``anthropic/claude-opus-4-6`` (OpenRouter's and LiteLLM's names) is not in
    genai-prices under that name; without the prefix it is: the same $0.085 as Opus A."""
    from engine.models import Usage

    use = Usage(input_tokens=2000, cache_read_input_tokens=100000, output_tokens=1000)
    prefixed = price_for(Settings(), "anthropic/claude-opus-4-6")
    assert prefixed.known
    assert prefixed.usage_cost(use) == pytest.approx(0.085)


def test_a_mini_swe_agent_run_keeps_its_model_usage_and_cost(tmp_path: Path, store: Store) -> None:
    """mini-swe-agent 1.x keeps the model (``info.config.model.model_name``), each call's
    LiteLLM usage (``extra.response.usage``) and its own cost (``info.model_stats``). Two calls
    to ``anthropic/claude-sonnet-4-5-20250929`` (list price $3 input, $0.30 cache read, $15
    output per million): 5,000 prompt + 200 completion → 0.015 + 0.003 = $0.018; 6,000 prompt
    of which 4,800 cached + 100 completion → 1,200 × 3 + 4,800 × 0.3 + 100 × 15 = $0.00654;
    $0.02454 in all, the run's own ``instance_cost`` too."""
    model = "anthropic/claude-sonnet-4-5-20250929"

    def said(text: str, prompt: int, cached: int, completion: int) -> dict[str, Any]:
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        response = {"model": "claude-sonnet-4-5-20250929", "usage": usage}
        return {"role": "assistant", "content": text, "extra": {"response": response}}

    run = {
        "trajectory_format": "mini-swe-agent-1",
        "info": {
            "exit_status": "Submitted",
            "model_stats": {"instance_cost": 0.02454, "api_calls": 2},
            "config": {"model": {"model_name": model}},
        },
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Fix add() in calc.py"},
            said("THOUGHT: look.\n\n```bash\ncat calc.py\n```", 5000, 0, 200),
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\nx\n</output>"},
            said("Done, submitting.", 6000, 4800, 100),
        ],
    }
    path = tmp_path / "fix.traj.json"
    path.write_text(json.dumps(run))
    (one,) = import_all(store, path)
    sid = one.report.session.id
    assert sid is not None
    assert store.get_session(sid).model == model
    assert one.report.recorded["recorded_cost"] == 0.02454
    assert [(u.usage.input_tokens, u.usage.cache_read_input_tokens) for u in one.usages] == [
        (5000, 0),
        (1200, 4800),
    ]
    (line,) = build_report(store, Settings()).sessions
    assert line.figures.total_cost == pytest.approx(0.02454)


def test_a_gemini_chat_prices_its_flash_calls_at_flash(tmp_path: Path, store: Store) -> None:
    """A Gemini CLI chat whose second answer came from Flash (each ``gemini`` message names
    its ``model``). List prices (genai-prices, as Google's page): 2.5 Pro $1.25 input, $10
    output; 2.5 Flash $0.30 input, $2.50 output, per million. Pro: 100,000 input + 2,000
    output (thoughts 500 of them) → 0.125 + 0.020 = $0.145; Flash: 40,000 input + 1,000
    output → 0.012 + 0.0025 = $0.0145; $0.1595 in all (all at Pro: $0.145 + 0.05 + 0.01 =
    $0.205)."""

    def answer(n: int, model: str, inp: int, out: int, thoughts: int) -> dict[str, Any]:
        tokens = {"input": inp, "output": out, "cached": 0, "thoughts": thoughts, "tool": 0}
        return {
            "id": f"g{n}",
            "timestamp": f"2026-11-20T12:0{n}:00.000Z",
            "type": "gemini",
            "content": f"answer {n}",
            "model": model,
            "tokens": tokens | {"total": inp + out + thoughts},
        }

    chat = {
        "sessionId": "9f1c2d3e-gem",
        "projectHash": "abc",
        "startTime": "2026-11-20T12:00:00.000Z",
        "lastUpdated": "2026-11-20T12:05:00.000Z",
        "messages": [
            {"id": "u1", "timestamp": "2026-11-20T12:00:30.000Z", "type": "user", "content": "Hi"},
            answer(1, "gemini-2.5-pro", 100000, 1500, 500),
            {"id": "u2", "timestamp": "2026-11-20T12:02:00.000Z", "type": "user", "content": "Go"},
            answer(3, "gemini-2.5-flash", 40000, 1000, 0),
        ],
    }
    path = tmp_path / "session-2026-11-20T12-00-abc.json"
    path.write_text(json.dumps(chat))
    (one,) = import_all(store, path)
    assert [u.model for u in one.usages] == ["gemini-2.5-pro", "gemini-2.5-flash"]
    (line,) = build_report(store, Settings()).sessions
    assert line.figures.total_cost == pytest.approx(0.1595)


def test_a_swe_agent_run_keeps_its_model_and_cost(tmp_path: Path) -> None:
    """The corpus SWE-agent trajectory with the ``replay_config`` SWE-agent 1.x writes beside
    ``info`` (a JSON string: ``agent.model.name``): its model is the session's, and its own
    ``model_stats`` (``instance_cost`` 0.53839, 5 ``api_calls``, as the file says) kept."""
    from engine.recordings.importing import parse_sessions
    from tests.engine.recordings.corpus import CORPUS

    run = json.loads((CORPUS / "SWE-agent__SWE-agent__swe-agent__test-repo-i1.traj").read_text())
    run["replay_config"] = json.dumps({"agent": {"model": {"name": "claude-sonnet-4-20250514"}}})
    path = tmp_path / "run.traj"
    path.write_text(json.dumps(run))
    (parsed,) = parse_sessions(path)
    assert parsed.model == "claude-sonnet-4-20250514"
    assert (parsed.recorded["recorded_cost"], parsed.recorded["api_calls"]) == (0.53839, 5)
