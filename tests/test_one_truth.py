"""One truth per figure (issue 37): every corpus file through every surface — ``import``,
``sessions``, ``show``, ``context``, ``report`` (each ``--json``), ``statusline`` and the
workbench — gives the same window, auto-compact point, context tokens and cost.

Each surface is read where a user reads it (the command's JSON, the status line's text, the
workbench's gauge), never from the function they share, so a surface that computed a figure
again would fail here. Two figures are also checked against the file itself, worked out by hand
(docstrings below), so agreeing on a wrong figure fails too.
"""

from __future__ import annotations

import html
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from contextlib import redirect_stdout
from copy import deepcopy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cli import statusline as statusline_command
from tests.cli_run import run_redirected as run

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus"
MAIN_FILES = sorted(
    p.name
    for p in CORPUS.iterdir()
    if p.suffix in (".jsonl", ".json", ".traj") and "__subagents__" not in p.name
)
FOLLOWED = {n for n in MAIN_FILES if n.endswith(".jsonl")}
"""What ``watch`` and ``statusline`` follow: Claude Code sessions and Codex rollouts."""


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def surfaces(name: str, tmp: Path) -> dict[str, dict[str, Any]]:
    """The four figures of ``name`` as each command-line surface prints them."""
    db = str(tmp / "one.db")
    code, out, err = run("import", str(CORPUS / name), "--db", db, "--json")
    assert code == 0, err
    imported = json.loads(out)
    sid = imported["session_id"]
    seen: dict[str, dict[str, Any]] = {"import": imported["figures"]}

    code, out, err = run("sessions", "--db", db, "--json")
    assert code == 0, err
    seen["sessions"] = next(s for s in json.loads(out) if s["id"] == sid)["figures"]
    code, out, err = run("show", str(sid), "--db", db, "--json")
    assert code == 0, err
    shown = json.loads(out)
    seen["show"] = shown["figures"]
    seen["show.plans_with"] = {"context_window": shown["plans_with"]["context_window"]}
    code, out, err = run("context", str(sid), "--db", db, "--json")
    assert code == 0, err
    context = json.loads(out)
    seen["context"] = context["figures"]
    # ctxscope's own strategies plan a recording in the window its figures print (the
    # what-ifs and the request `context` builds; `replay` and the workbench plan the same)
    seen["context.plan"] = {"context_window": context["context_window"]}
    if "recorded" in context:  # the recorded agent's own block says the same
        rec = context["recorded"]
        seen["context.recorded"] = {
            "context_window": rec["context_window"],
            "auto_compact_at": rec["auto_compact_at"],
            "context_tokens": rec["context_tokens"],
            "cost": rec["cost"],
        }
    code, out, err = run("export", str(sid), "--db", db, "--format", "html")
    assert code == 0, err
    page = dict(re.findall(r'<span class="muted">([^<]+)</span><b>([^<]*)</b>', out))
    seen["export.html"] = {"cost_text": page["cost at list price"], "calls": page["API calls"]}
    code, out, err = run("report", "--db", db, "--json", "--by", "session")
    assert code == 0, err
    line = next(s for s in json.loads(out)["sessions"] if s["id"] == sid)
    seen["report"] = {"cost": line["cost"]["total"], "requests": line["requests"]}
    return seen


Surfaces = Callable[[str], dict[str, dict[str, Any]]]


@pytest.fixture(scope="session")
def corpus_surfaces(tmp_path_factory: pytest.TempPathFactory) -> Surfaces:
    """:func:`surfaces` of a corpus file, run once per worker (the import and four commands
    on its database): the tests of the command line, the status line and ``watch`` each
    compare with the same figures, and only read them (each gets its own copy)."""
    seen: dict[str, dict[str, dict[str, Any]]] = {}

    def of(name: str) -> dict[str, dict[str, Any]]:
        if name not in seen:
            seen[name] = surfaces(name, tmp_path_factory.mktemp("one-truth"))
        return deepcopy(seen[name])

    return of


KEYS = ("context_window", "auto_compact_at", "context_tokens", "until_auto_compact", "cost")


@pytest.mark.parametrize("name", MAIN_FILES)
def test_every_command_gives_the_same_figures(name: str, corpus_surfaces: Surfaces) -> None:
    seen = corpus_surfaces(name)
    first = seen["import"]
    for surface, figures in seen.items():
        for key in KEYS:
            if key in figures:
                assert figures[key] == first[key], (surface, key)
    assert seen["report"]["requests"] == first["requests"]
    # the HTML page prints the same calls and cost (it priced every call at the session's
    # one model before)
    cost = "–" if first["cost"] is None else f"${first['cost']:,.2f}"
    assert seen["export.html"] == {"cost_text": cost, "calls": f"{first['requests']:,}"}
    # no screen names a window its context does not fit in
    if first["context_tokens"] is not None:
        assert first["context_tokens"] <= first["context_window"]


def test_marot_figures_are_the_files_own(corpus_surfaces: Surfaces) -> None:
    """The corpus' Claude Code 2.1.39 session on claude-opus-4-6 (200,000 window): its last
    assistant record with usage (python over the jsonl) has input 3, cache read 77,272, cache
    write 59, output 85 → context 77,419; Claude Code compacts at 167,000 there (the file's own
    auto compaction fired at preTokens 167,094); its calls cost $11.853923 at list price
    (worked out by hand in tests/cli/test_recorded_figures.py)."""
    seen = corpus_surfaces("marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    figures = seen["import"]
    assert figures["context_tokens"] == 77_419
    assert figures["context_window"] == 200_000
    assert figures["auto_compact_at"] == 167_000
    assert figures["until_auto_compact"] == 167_000 - 77_419
    assert round(figures["cost"], 2) == 11.85


def test_codex_0_140_figures_are_the_files_own(corpus_surfaces: Surfaces) -> None:
    """The corpus' Codex 0.140.0 rollout on gpt-5.4 (EntityProcess/agentv): its last
    ``token_count`` (line 87, python over the jsonl) has input 29,162 (cached 22,400 of it),
    output 405 → context 29,567; every count records ``model_context_window`` 258,400, which
    is 95 % of the raw 272,000 (Codex's effective_context_window_percent); Codex compacts at
    90 % of the raw window, 244,800 → 215,233 left; its 10 calls cost $0.192179 at list price
    (worked out by hand in tests/engine/recordings/test_corpus_costs.py)."""
    seen = corpus_surfaces("EntityProcess__agentv__entire__a3_92ff332928_0_full.jsonl")
    figures = seen["import"]
    assert figures["context_tokens"] == 29_567
    assert figures["context_window"] == 272_000
    assert figures["auto_compact_at"] == 244_800
    assert figures["until_auto_compact"] == 244_800 - 29_567
    assert figures["requests"] == 10
    assert round(figures["cost"], 6) == 0.192179


def test_codex_0_147_figures_are_the_files_own(corpus_surfaces: Surfaces) -> None:
    """The corpus' Codex 0.147.0 MCP-server rollout on gpt-5.6-sol (teslamint/entirecontext):
    its last ``token_count`` (line 63) has input 62,510, output 2,682 → context 65,192; every
    count records ``model_context_window`` 353,400, 95 % of the raw 372,000; compaction at
    90 % of it, 334,800 → 269,608 left; its 10 calls cost $0.748699 at the list price of the
    day (test_corpus_costs.py)."""
    seen = corpus_surfaces(
        "teslamint__entirecontext__entire__P2_01M05FR2RHZ3ZR60MHZJ3273P2_0_full.jsonl"
    )
    figures = seen["import"]
    assert figures["context_tokens"] == 65_192
    assert figures["context_window"] == 372_000
    assert figures["auto_compact_at"] == 334_800
    assert figures["until_auto_compact"] == 334_800 - 65_192
    assert figures["requests"] == 10
    assert round(figures["cost"], 6) == 0.748699


def statusline(transcript: Path, db: Path, cache: Path) -> str:
    """``ctxscope statusline --wait`` as Claude Code runs it, the status JSON on stdin, run by
    its ``main`` in this process (the command as a process: tests/cli/test_statusline.py)."""
    status = {
        "hook_event_name": "Status",
        "session_id": "s",
        "transcript_path": str(transcript),
        "cwd": str(transcript.parent),
        "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
        "workspace": {"current_dir": str(transcript.parent)},
    }
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as env, redirect_stdout(out):
        env.setenv("XDG_CACHE_HOME", str(cache))
        env.setattr(sys, "stdin", io.StringIO(json.dumps(status)))
        assert statusline_command.main(["--db", str(db), "--wait"]) == 0
    return out.getvalue().strip()


@pytest.mark.parametrize("name", sorted(FOLLOWED))
def test_the_status_line_prints_the_same_figures(
    name: str, tmp_path: Path, corpus_surfaces: Surfaces
) -> None:
    figures = corpus_surfaces(name)["import"]
    copy = tmp_path / "session.jsonl"
    copy.write_bytes((CORPUS / name).read_bytes())
    line = statusline(copy, tmp_path / "followed.db", tmp_path / "cache")
    assert f"ctx {figures['context_tokens']:,}/{figures['context_window']:,}" in line
    if figures["until_auto_compact"] is not None:
        assert f"{figures['until_auto_compact']:,} to auto-compact" in line
    cost = figures["cost"]
    assert ("–" if cost is None else f"${cost:,.2f}") in line


# ------------------------------------------------------------- this month's shapes
SID = "6b1f0e2a-5c1d-4c77-9e61-2f3a8d0c1b2e"


def claude_code_session(model: str, contexts: list[tuple[int, int, int, int]]) -> str:
    """A Claude Code 2.1.2xx session file: a user turn, then one assistant answer per
    ``(input, cache read, cache write, output)``, each the answer to the user turn before it
    (the record shapes of the corpus' 2.1.39 file, with this month's version)."""
    lines = []
    parent = None
    for n, (i, r, w, o) in enumerate(contexts, 1):
        user = {
            "type": "user",
            "uuid": f"u{n}",
            "parentUuid": parent,
            "isSidechain": False,
            "sessionId": SID,
            "version": "2.1.219",
            "cwd": "/work/app",
            "timestamp": f"2026-11-20T10:{n:02d}:00.000Z",
            "message": {"role": "user", "content": f"step {n}: go on"},
        }
        answer = {
            "type": "assistant",
            "uuid": f"a{n}",
            "parentUuid": f"u{n}",
            "isSidechain": False,
            "sessionId": SID,
            "version": "2.1.219",
            "cwd": "/work/app",
            "timestamp": f"2026-11-20T10:{n:02d}:30.000Z",
            "requestId": f"req_{n}",
            "message": {
                "id": f"msg_{n:04d}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": f"done with step {n}"}],
                "stop_reason": "end_turn",
                "usage": {
                    "input_tokens": i,
                    "cache_read_input_tokens": r,
                    "cache_creation_input_tokens": w,
                    "output_tokens": o,
                },
            },
        }
        lines += [json.dumps(user), json.dumps(answer)]
        parent = f"a{n}"
    return "\n".join(lines) + "\n"


def codex_rollout(recorded_window: int, last: tuple[int, int, int]) -> str:
    """A Codex 0.142 rollout: the recorded ``model_context_window`` is what this version
    writes (95 % of the model's raw window), ``last`` the last call's input, cached input and
    output."""
    i, cached, o = last
    usage = {
        "input_tokens": i,
        "cached_input_tokens": cached,
        "output_tokens": o,
        "reasoning_output_tokens": 0,
        "total_tokens": i + o,
    }
    records = [
        {
            "type": "session_meta",
            "payload": {
                "id": "019b0000-0000-7000-8000-000000000142",
                "timestamp": "2026-11-20T10:00:00.000Z",
                "cwd": "/work/app",
                "originator": "codex_cli_rs",
                "cli_version": "0.142.0",
                "source": "cli",
            },
        },
        {"type": "turn_context", "payload": {"cwd": "/work/app", "model": "gpt-5-codex"}},
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "refactor the parser"}],
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Refactored."}],
            },
        },
        {
            "type": "event_msg",
            "payload": {
                "type": "token_count",
                "info": {
                    "total_token_usage": usage,
                    "last_token_usage": usage,
                    "model_context_window": recorded_window,
                },
            },
        },
    ]
    stamp = "2026-11-20T10:00:{:02d}.000Z"
    return "\n".join(json.dumps({"timestamp": stamp.format(n), **r}) for n, r in enumerate(records))


def imported_figures(text: str, name: str, tmp: Path) -> dict[str, dict[str, Any]]:
    folder = tmp / "files"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    global CORPUS
    saved, CORPUS = CORPUS, folder
    try:
        return surfaces(name, tmp)
    finally:
        CORPUS = saved


def agree(seen: dict[str, dict[str, Any]]) -> dict[str, Any]:
    first = seen["import"]
    for surface, figures in seen.items():
        for key in KEYS:
            if key in figures:
                assert figures[key] == first[key], (surface, key)
    return first


def test_an_opus_5_session_on_the_1m_window(tmp_path: Path) -> None:
    """claude-opus-5 with requests of 320,000 and 554,446 tokens (the issue's 277 % of
    200,000): the 1M window, and Claude Code's rule on it — the window less 20,000 kept for
    the summary and a 13,000 buffer (docs/watch.md): 1,000,000 − 33,000 = 967,000; the last
    call 6 + 550,000 + 4,000 + 440 = 554,446 → 412,554 left, 55.4 % of the window."""
    text = claude_code_session(
        "claude-opus-5",
        [(10, 150_000, 2_000, 300), (8, 318_000, 1_500, 500), (6, 550_000, 4_000, 440)],
    )
    first = agree(imported_figures(text, f"{SID}.jsonl", tmp_path))
    assert first["context_window"] == 1_000_000
    assert first["auto_compact_at"] == 967_000
    assert first["context_tokens"] == 554_446
    assert first["until_auto_compact"] == 412_554
    assert first["percent"] == 55.4


def test_the_what_if_of_an_opus_5_session_plans_in_its_1m_window(
    corpus_surfaces: Surfaces, tmp_path: Path
) -> None:
    """The corpus' Claude Code 2.1.219 session on claude-opus-5 ran on the 1M window (its
    compaction's ``preTokens`` is 998,659, more than 200,000 holds). ``context`` used to plan
    ctxscope's what-if in its own default of 200,000 beside it — "threshold 160,000 of
    200,000 … fires" on a session at 23 % of its window. Now it plans in 1,000,000, at seed
    000's 0.8 of it: 800,000 (``threshold = 0.8 * config.context_window``), and says the
    layered strategy would not fire; ``show`` says it plans in that window (it said the
    200,000 stored at import)."""
    name = "JanDeDobbeleer__oh-my-posh__entire__10_906611becd_0_full.jsonl"
    assert corpus_surfaces(name)["context.plan"]["context_window"] == 1_000_000
    db = str(tmp_path / "m.db")
    assert run("import", str(CORPUS / name), "--db", db)[0] == 0
    code, out, err = run("context", "1", "--db", db)
    assert code == 0, err
    assert "(threshold 800,000 of 1,000,000)" in out
    assert "< 800,000: does not fire" in out
    code, out, err = run("show", "1", "--db", db)
    assert code == 0, err
    assert "plans with window 1,000,000 · threshold_ratio 0.8" in out


def test_a_copilot_session_plans_from_the_context_its_figures_print(tmp_path: Path) -> None:
    """Copilot CLI records each response's output and no input: the figures' context is
    ctxscope's count of the last request (the import's estimate) + its recorded output, said
    as such. The layered what-if read the recorded input, 0, and measured "0 < 800,000"; it
    now plans from the same count: 58,089 − the last response's outputTokens, 437 (the file's
    last ``assistant.message``: a one-liner over ``data.outputTokens``) = 57,652."""
    name = "polecatspeaks__StarCar__entire__70_f01dc53f44_0_full.jsonl"
    db = str(tmp_path / "c.db")
    assert run("import", str(CORPUS / name), "--db", db)[0] == 0
    code, out, err = run("context", "1", "--db", db, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["figures"]["context_tokens"] == 58_089
    assert data["budget"]["last_usage"] == 58_089 - 437
    code, out, err = run("context", "1", "--db", db)
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.endswith("(its last API call's input counted by ctxscope: the agent records none)")
    assert "Copilot CLI's own auto-compact point is not known" in out


def test_a_trajectory_without_calls_says_so(tmp_path: Path) -> None:
    """The corpus' SWE-agent trajectory records no model and no per-call usage (its
    ``history`` entries carry none; the import stores 0 usage records): ``context`` says no
    call's usage was recorded, where it said "recorded by SWE-agent ():" and "(its last API
    call as recorded)" beside a context of –. Not "no API call recorded": the file's
    ``info.model_stats`` counts 5 ``api_calls``, in total only. The window is the default,
    said as such in its ``window_source`` (the watch_context_window setting, 200,000)."""
    db = str(tmp_path / "s.db")
    name = "SWE-agent__SWE-agent__swe-agent__test-repo-i1.traj"
    assert run("import", str(CORPUS / name), "--db", db)[0] == 0
    code, out, err = run("context", "1", "--db", db)
    assert code == 0, err
    assert out.splitlines()[0] == (
        "recorded by SWE-agent: context – / 200,000 · auto-compact point not known "
        "(no call's usage recorded)"
    )
    # the run's own totals, its info.model_stats: total_cost 0.53839, tokens_sent 52,861,
    # tokens_received 326, api_calls 5; said as its own, beside ctxscope's "–"
    totals = (
        "SWE-agent's own totals (no call recorded one by one): 5 calls, 52,861 tokens sent, "
        "326 received, $0.54"
    )
    assert out.splitlines()[1] == totals
    code, out, err = run("show", "1", "--db", db)
    assert code == 0, err
    assert totals in out.splitlines()
    code, out, err = run("show", "1", "--json", "--db", db)
    assert code == 0, err
    assert json.loads(out)["recorded_totals"] == {
        "api_calls": 5,
        "tokens_sent": 52_861,
        "tokens_received": 326,
        "recorded_cost": 0.53839,
    }
    page = tmp_path / "s.html"
    assert run("export", "1", "--format", "html", "-o", str(page), "--db", db)[0] == 0
    assert html.escape(totals) in page.read_text()


def test_a_trajectory_without_times_shows_none(tmp_path: Path) -> None:
    """The corpus' SWE-agent trajectory has no time in any entry (its ``history`` and
    ``trajectory`` entries carry none; ``info`` neither): every surface said the import's
    time was the run's ("2026-11-29 11:24", "12 min ago"). ``sessions`` shows "–",
    ``sessions --json`` null with ``times_recorded`` false, the page says so; a Claude Code
    recording keeps its own (marot's first prompt, line 5, is at 2026-02-11T20:36:45.618Z)."""
    db = str(tmp_path / "s.db")
    name = "SWE-agent__SWE-agent__swe-agent__test-repo-i1.traj"
    assert run("import", str(CORPUS / name), "--db", db)[0] == 0
    marot = "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    assert run("import", str(CORPUS / marot), "--db", db)[0] == 0
    code, out, err = run("sessions", "--json", "--db", db)
    assert code == 0, err
    listed = {s["id"]: s for s in json.loads(out)}
    assert (listed[1]["started_at"], listed[1]["last_at"]) == (None, None)
    assert listed[1]["figures"]["times_recorded"] is False
    assert listed[2]["started_at"] == "2026-02-11T20:36:45.618000+00:00"
    assert listed[2]["figures"]["times_recorded"] is True
    code, out, err = run("sessions", "--db", db)
    assert code == 0, err
    (row,) = [line for line in out.splitlines() if "SWE-agent" in line]
    assert row.split()[1:3] == ["–", "–"]
    (row,) = [line for line in out.splitlines() if "Claude Code" in line]
    assert row.split()[1:3] == ["2026-02-11", "20:36"]
    page = tmp_path / "s.html"
    assert run("export", "1", "--format", "html", "-o", str(page), "--db", db)[0] == 0
    text = page.read_text()
    assert "strategy layered · its times not recorded" in text
    assert re.findall(r'<span class="muted">(message \d+)</span>', text)[:1] == ["message 1"]
    assert f"{datetime.now(UTC):%Y-%m-%d}" not in text  # the import's day, shown nowhere
    # the exports: no time for its messages; marot's keep theirs
    code, out, err = run("export", "1", "--format", "markdown", "--db", db)
    assert code == 0, err
    heads = [line for line in out.splitlines() if line.startswith("**User**")]
    assert heads[:2] == ["**User**", "**User** (demonstration)"]
    code, out, err = run("export", "1", "--db", db)
    assert code == 0, err
    assert all("timestamp" not in json.loads(line) for line in out.splitlines())
    code, out, err = run("export", "2", "--db", db)
    assert code == 0, err
    assert all("timestamp" in json.loads(line) for line in out.splitlines())
    # the report card's sessions alike
    code, out, err = run("report", "--json", "--db", db)
    assert code == 0, err
    started = {s["id"]: s["started_at"] for s in json.loads(out)["sessions"]}
    assert started == {1: None, 2: "2026-02-11 20:36:45.618000+00:00"}


def test_sonnet_4_6_with_the_1m_context(tmp_path: Path) -> None:
    """claude-sonnet-4-6 sent a 250,010-token request: only the 1M window holds it."""
    text = claude_code_session("claude-sonnet-4-6", [(10, 248_000, 2_000, 120)])
    first = agree(imported_figures(text, f"{SID}.jsonl", tmp_path))
    assert first["context_window"] == 1_000_000
    assert first["auto_compact_at"] == 967_000
    assert first["context_tokens"] == 250_130


def test_the_auto_compact_window_moves_the_countdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CLAUDE_CODE_AUTO_COMPACT_WINDOW=400000 in the user's environment: Claude Code counts
    its trigger in a 400,000 window, 400,000 − 33,000 = 367,000; the last call 300,000 → 67,000
    left — on every surface, the status line too."""
    monkeypatch.setenv("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "400000")
    text = claude_code_session("claude-opus-5", [(5, 210_000, 1_000, 200), (0, 299_000, 900, 100)])
    first = agree(imported_figures(text, f"{SID}.jsonl", tmp_path))
    assert first["context_window"] == 1_000_000
    assert first["auto_compact_at"] == 367_000
    assert first["until_auto_compact"] == 67_000
    copy = tmp_path / "followed.jsonl"
    copy.write_text(text)
    line = statusline(copy, tmp_path / "followed.db", tmp_path / "cache")
    assert "ctx 300,000/1,000,000 30.0% · 67,000 to auto-compact" in line


def test_codex_compacts_at_90_percent_of_its_raw_window(tmp_path: Path) -> None:
    """Codex 0.142 records model_context_window 258,400 for gpt-5-codex: 95 % of its raw
    272,000 window; it compacts at 90 % of the raw window, 244,800. The last call sent 200,000
    (cached 150,000 of it) and wrote 1,000: 201,000 of 272,000, 43,800 left."""
    text = codex_rollout(258_400, (200_000, 150_000, 1_000))
    first = agree(imported_figures(text, "rollout-2026-11-20T10-00-00-019b.jsonl", tmp_path))
    assert first["context_window"] == 272_000
    assert first["auto_compact_at"] == 244_800
    assert first["context_tokens"] == 201_000
    assert first["until_auto_compact"] == 43_800


def watched_figures(transcript: Path, db: Path) -> dict[str, Any]:
    """``ctxscope watch FILE --jsonl``'s figures once it has read the whole file: the first
    update line (a file already written is read in one look), its ``figures``."""
    import queue
    import threading

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli.workbench",
            "watch",
            str(transcript),
            "--jsonl",
            "--db",
            str(db),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CTXSCOPE_WATCH_POLL_INTERVAL": "0.05"},
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    try:
        while True:
            line = lines.get(timeout=120)
            assert line, "watch ended before an update"
            data = json.loads(line)
            if data.get("event") != "notice" and "figures" in data:
                # the line's own state says what its figures say (one truth on one line;
                # where no call was recorded the figures have no context and the line its
                # local estimate)
                figures = dict(data["figures"])
                if figures["context_tokens"] is not None:
                    assert data["context_tokens"] == figures["context_tokens"]
                if figures["until_auto_compact"] is not None:  # None: no trigger of its own
                    assert data["until_compact"] == figures["until_auto_compact"]
                assert data["context_window"] == figures["context_window"]
                return figures
    finally:  # how watch ends is tested in tests/engine/recordings/test_watch.py
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("name", sorted(FOLLOWED))
def test_watch_jsonl_prints_the_same_figures(
    name: str, tmp_path: Path, corpus_surfaces: Surfaces
) -> None:
    """A file watched (``watch --jsonl``, stored as it is read) and the same file imported:
    the same window, auto-compact point, context and cost."""
    imported = corpus_surfaces(name)["import"]
    copy = tmp_path / "session.jsonl"
    copy.write_bytes((CORPUS / name).read_bytes())
    watched = watched_figures(copy, tmp_path / "watched.db")
    for key in (*KEYS, "model", "agent", "requests"):
        assert watched[key] == imported[key], key
