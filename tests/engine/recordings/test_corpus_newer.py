"""The corpus' newest real recordings (tests/data/corpus/README.md) imported, against counts
worked out once over each file with Python's ``json`` alone and written here as literals.

Claude Code 2.1.237 (teslamint/entirecontext, Entire 0.10.1 checkpoint ref ``SN/…``): a
``claude -p`` run of one prompt and one call, the newest CLI in the corpus, with the record kinds
that CLI writes before its first call (``atis-latch``; ``auto_mode`` and
``total_tokens_reminder`` attachments).

Claude Code 2.1.284 (KuzniAI/opencode-entire-plugin, Entire 0.11.3 checkpoint
``01M3Q4WPN518QH04367X86D6K0``, read from the search index): claude-sonnet-5-5 from the desktop
app, two prompts, four responses, attachments that carry the reminder text they ``rendered`` and
two ``prompt_snapshot`` records (the system prompt, then the tools), one response's second call
written after the first call's result, and the last call cut by the commit.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from engine.recordings.figures import session_figures
from engine.recordings.importing import parse_sessions
from engine.settings.config import Settings
from engine.store import Store
from tests.cli_run import run_redirected as run
from tests.engine.recordings.helpers import CORPUS, import_all

TESLAMINT_2_1_237 = (
    CORPUS / "teslamint__entirecontext__entire__SN_01M0FWRPX72AX3CYC2HMV1W2SN_0_full.jsonl"
)
KUZNI_2_1_284 = (
    CORPUS / "KuzniAI__opencode-entire-plugin__entire__K0_01M3Q4WPN518QH04367X86D6K0_0_full.jsonl"
)


def test_claude_code_2_1_237_one_prompt_one_call(store: Store) -> None:
    """By hand (``json`` over the 21 lines, once): ``type`` attachment 13, queue-operation 2,
    last-prompt 2, assistant 2, user 1, atis-latch 1; every record with a ``version`` says
    2.1.237 (``entrypoint`` sdk-cli). The one ``user`` record (line 8) is the prompt, a string of
    1,010 characters. The two ``assistant`` records (line 17 a ``thinking`` block, line 18 the
    ``text`` answer) share ``message.id`` msg_011CeEEuqvEtUdokGRmi7VtR: one response, no
    ``tool_use``. Its usage (the same on both records): input 2, cache_creation 28,866 (all
    ``ephemeral_1h``), cache_read 23,583, output 248; so the context of the session's one call
    is 2 + 23,583 + 28,866 + 248 = 52,699. Entire's ``metadata.json`` beside the file: input 2,
    cache write 28,866, cache read 23,583, output 248, ``api_call_count`` 1."""
    (one,) = import_all(store, TESLAMINT_2_1_237)
    report = one.report
    assert report.agent_version == "2.1.237"
    assert report.warnings == []
    assert Counter(m.role for m in one.messages) == Counter(user=1, assistant=1)
    [prompt] = one.role("user")
    assert len(prompt.content) == 1_010
    assert prompt.content.startswith("You are a futures analyst grounded in Kent Beck's")
    [answer] = one.role("assistant")
    assert answer.tool_calls == []
    assert answer.content.startswith('{"verdict":"neutral"')
    assert {m.meta.round for m in one.messages} == {1}
    [call] = one.usages
    assert call.model == "claude-opus-4-6"
    assert (
        call.usage.input_tokens,
        call.usage.cache_creation_input_tokens,
        call.usage.cache_creation_1h_input_tokens,
        call.usage.cache_read_input_tokens,
        call.usage.output_tokens,
    ) == (2, 28_866, 28_866, 23_583, 248)
    sid = report.session.id
    assert sid is not None
    assert store.compactions(sid) == []


def test_claude_code_2_1_237_kinds_not_read_are_named(store: Store) -> None:
    """By hand: the ``attachment`` records are lines 3, 4, 6, 19, 20 (``hook_success``), 5
    (``hook_system_message``), 7 (``hook_additional_context``), 9 (``deferred_tools_delta``), 10
    (``agent_listing_delta``), 11 (``mcp_instructions_delta``), 12 (``skill_listing``), 13
    (``auto_mode``) and 14 (``total_tokens_reminder``: ``<total_tokens>15000000 tokens
    left</total_tokens>``); the one ``atis-latch`` record is line 16 (``{"type": "atis-latch",
    "atis": "", "sessionId": …}``); ``queue-operation`` lines 1-2 (enqueue, dequeue of the prompt),
    ``last-prompt`` lines 15 and 21. None of them is a message or a usage."""
    (one,) = import_all(store, TESLAMINT_2_1_237)
    report = one.report
    assert report.not_read.as_json()["kinds"] == {
        "atis-latch": {"count": 1, "lines": [16]},
        "attachment": {"count": 13, "lines": [3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 19, 20]},
    }
    assert (report.skipped["queue-operation"], report.skipped["last-prompt"]) == (2, 2)


def test_claude_code_2_1_237_figures(store: Store) -> None:
    """The figures every surface prints, from the counts above: 1 request; context 52,699 (the
    one call's input + cache read + cache write + output); no compaction. The window: the file
    records none and its model has no ``[1m]`` suffix, so Claude Code's own 200,000 (Anthropic's
    models page: Opus 4.6's 1M context is opt-in). Cost at Claude Opus 4.6's list price per MTok
    ($5 input, $10 one-hour cache write, $0.50 cache read, $25 output): 2 × 5 + 28,866 × 10 +
    23,583 × 0.5 + 248 × 25 = 10 + 288,660 + 11,791.5 + 6,200 = 306,661.5 / 1M = $0.3066615."""
    (one,) = import_all(store, TESLAMINT_2_1_237)
    figures = session_figures(store, one.report.session, Settings())
    assert (figures.agent, figures.model, figures.requests) == ("Claude Code", "claude-opus-4-6", 1)
    assert figures.context_tokens == 52_699
    assert figures.window == 200_000
    assert figures.compactions == 0
    assert (
        figures.tokens.input,
        figures.tokens.cache_read,
        figures.tokens.cache_write,
        figures.tokens.output,
    ) == (2, 23_583, 28_866, 248)
    assert figures.cost is not None and round(figures.cost, 7) == 0.3066615


def test_claude_code_2_1_284_two_prompts_four_responses(store: Store) -> None:
    """By hand (``json`` over the 57 lines, once): ``type`` attachment 22, user 6, assistant 6,
    queue-operation 4, custom-title 4, agent-name 4, atis-latch 4, last-prompt 3,
    file-history-snapshot 2, file-history-delta 1, system 1 (``stop_hook_summary``); every
    record with a ``version`` says 2.1.284 (``entrypoint`` claude-desktop). Typed prompts: line 5
    ("Update AGENTS.md with anything that is required from a bun project so it does not node
    instead") and line 48 ("commit this"). Assistant records by ``message.id``: …of5t54 lines
    26 (``Read``) and 28 (``Bash``), …YLiTMP lines 37 (``Edit``) and 38 (``Bash``), …A64T4r
    line 44 (text, ``end_turn``), …8fLNTo line 57 (``Bash``): 4 responses, 5 ``tool_use``.
    ``tool_result`` blocks: lines 27, 29, 40, 41 - none for line 57's call (the file ends
    there). Line 28's ``parentUuid`` is line 27, the first call's result, and lines 40 and 41
    hang off lines 37 and 38: two branches, so line 40 is not on the chain from the last
    record. Usage per response (input, cache write, all one-hour, cache read, output): (2,
    5,201, 25,035, 147), (2, 1,043, 30,236, 631), (2, 813, 31,279, 388), (2, 2,956, 32,480,
    166); Entire's ``metadata.json``: input 8, cache write 10,013, cache read 119,030, output
    1,332, ``api_call_count`` 4."""
    (one,) = import_all(store, KUZNI_2_1_284)
    report = one.report
    assert report.agent_version == "2.1.284"
    assert report.warnings == []
    assert [m.content for m in one.role("user")] == [
        "Update AGENTS.md with anything that is required from a bun project so it does not node"
        " instead",
        "commit this",
    ]
    assert Counter(m.role for m in one.messages) == Counter(user=2, assistant=4, tool=5)
    assert [[c.name for c in m.tool_calls] for m in one.role("assistant")] == [
        ["Read", "Bash"],
        ["Edit", "Bash"],
        [],
        ["Bash"],
    ]
    assert [m.meta.round for m in one.role("assistant")] == [1, 1, 1, 2]
    # four results recorded (line 40's off the chain too), the fifth never written
    assert report.missing_results == 1
    assert [m.meta.interrupted for m in one.role("tool")] == [False] * 4 + [True]
    assert [m.model for m in one.usages] == ["claude-sonnet-5-5"] * 4
    assert [
        (
            u.usage.input_tokens,
            u.usage.cache_creation_1h_input_tokens,
            u.usage.cache_read_input_tokens,
            u.usage.output_tokens,
        )
        for u in one.usages
    ] == [
        (2, 5_201, 25_035, 147),
        (2, 1_043, 30_236, 631),
        (2, 813, 31_279, 388),
        (2, 2_956, 32_480, 166),
    ]


def test_claude_code_2_1_284_kinds_not_read_are_named(store: Store) -> None:
    """By hand: the 22 ``attachment`` records are lines 3 (``hook_success``), 4
    (``hook_system_message``), 6 (``environment``), 7 (``model``: "You are powered by the model
    named Sonnet 5.5"), 8 and 49 (``deferred_tools_delta``), 9 (``agent_listing_delta``), 10
    (``skill_listing``), 11, 31, 42 and 50 (``total_tokens_reminder``), 16 (``instructions``:
    AGENTS.md), 17 (``session_context``), 18 (``date``), 19 (``credential_org``), 20
    (``remote_session_change``), 21 and 30 (``prompt_snapshot``: the system prompt; line 30 the
    tools too, 109,251 bytes), 36, 43 and 56 (``deferred_tools_record``). ``atis-latch``: lines
    15, 25, 35 and 54, the same bytes each time; ``file-history-delta``: line 39. The two
    ``prompt_snapshot`` records are read (the prompt and tools the requests carried:
    test_claude_code_2_1_284_holds_the_prompt_and_tools_it_sent); the other 20 are named."""
    (one,) = import_all(store, KUZNI_2_1_284)
    not_read = one.report.not_read.as_json()
    assert not_read["kinds"] == {
        "atis-latch": {"count": 1, "lines": [15]},
        "attachment": {
            "count": 20,
            "lines": [
                3,
                4,
                6,
                7,
                8,
                9,
                10,
                11,
                16,
                17,
                18,
                19,
                20,
                31,
                36,
                42,
                43,
                49,
                50,
                56,
            ],
        },
        "file-history-delta": {"count": 1, "lines": [39]},
    }
    assert not_read["lines"]["repeats an earlier line"]["lines"] == [25, 35, 54]


def test_claude_code_2_1_284_figures(store: Store) -> None:
    """From the counts above: 4 requests; the context of the last call (line 57) 2 + 32,480 +
    2,956 + 166 = 35,604; no compaction. The window: the file records none; genai-prices gives
    claude-sonnet-5-5 a ``context_window`` of 1,000,000, flat-priced (no long-context tier), so
    1,000,000. Cost at Claude Sonnet 5.5's list price per MTok ($2 input, $4 one-hour cache
    write, $0.10 cache read, $10 output): 8 × 2 + 10,013 × 4 + 119,030 × 0.1 + 1,332 × 10 = 16 +
    40,052 + 11,903 + 13,320 = 65,291 / 1M = $0.065291."""
    (one,) = import_all(store, KUZNI_2_1_284)
    figures = session_figures(store, one.report.session, Settings())
    assert (figures.model, figures.requests, figures.compactions) == ("claude-sonnet-5-5", 4, 0)
    assert figures.context_tokens == 35_604
    assert figures.window == 1_000_000
    assert (
        figures.tokens.input,
        figures.tokens.cache_read,
        figures.tokens.cache_write,
        figures.tokens.output,
    ) == (8, 119_030, 10_013, 1_332)
    assert figures.cost is not None and round(figures.cost, 6) == 0.065291


def test_claude_code_2_1_284_holds_the_prompt_and_tools_it_sent(tmp_path: Path) -> None:
    """Line 30's ``prompt_snapshot`` (by hand, ``json`` over the line): ``cliPrefix`` "You are
    Claude Code, Anthropic's official CLI for Claude, running within the Claude Agent SDK.",
    13 ``systemPrompt`` blocks (9,283 characters; line 21 holds the same 13 and no tools), and
    14 tools, each with a ``schema`` (the API's form, its ``name`` the tool's). The import keeps
    them with the first message (15 system blocks would double line 21's: only one snapshot,
    the one with the tools); ``context`` shows the tools apart in L1, counted locally
    (cl100k_base over each schema as compact JSON, the file's own bytes, worked out here), the
    rest of the hidden prefix (first prompt 30,238 − transcript 26 = 30,212, the figures
    ``context`` printed before) as the system prompt and the rest."""
    from engine.messages.tokens import encoding as cl100k  # tiktoken's, from the bundled file

    (parsed,) = parse_sessions(KUZNI_2_1_284)
    system = [e for e in parsed.hidden if e["role"] == "system"]
    tools = [e for e in parsed.hidden if e["role"] == "tool"]
    assert {e["line"] for e in parsed.hidden} == {30}
    assert len(system) == 14 and system[0]["text"] == (
        "You are Claude Code, Anthropic's official CLI for Claude, running within the Claude "
        "Agent SDK."
    )
    assert sum(len(e["text"]) for e in system[1:]) == 9_283
    assert [e["name"] for e in tools] == [
        "Agent", "Artifact", "AskUserQuestion", "Bash", "Edit", "ListAgents", "Read",
        "ReportFindings", "ScheduleWakeup", "SendUserFile", "Skill", "SuggestSkills",
        "ToolSearch", "Write",
    ]  # fmt: skip
    record = json.loads(KUZNI_2_1_284.read_text(encoding="utf-8").splitlines()[29])
    encoding = cl100k()
    tool_tokens = sum(
        len(
            encoding.encode_ordinary(
                json.dumps(t["schema"], ensure_ascii=False, separators=(",", ":"))
            )
        )
        for t in record["attachment"]["tools"]
    )
    db = str(tmp_path / "s.db")
    assert run("import", str(KUZNI_2_1_284), "--db", db)[0] == 0
    code, out, err = run("context", "1", "--json", "--db", db)
    assert code == 0, err
    data = json.loads(out)
    layers = {layer["name"]: layer["tokens"] for layer in data["layers"]}
    assert layers["L1 tools"] == tool_tokens
    assert layers["L1 system"] == 30_212 - tool_tokens
    assert data["recorded"]["prompt"]["line"] == 30
    assert data["recorded"]["prompt"]["tools"] == [e["name"] for e in tools]
    code, out, err = run("context", "1", "--db", db)
    assert code == 0, err
    assert f"Claude Code's tools (as recorded) {tool_tokens:,} (14 tools)" in out
    # kept with the first message: the system prompt's blocks whole, the tools named and
    # counted (their ~100 KB of definitions not stored again for every session)
    stored = Store.open(db)
    first = stored.first_message(1)
    stored.close()
    assert first is not None and first.meta.origin is not None
    kept = first.meta.origin["hidden_prefix"]
    assert [e["text"] for e in kept if e["role"] == "system"] == [e["text"] for e in system]
    assert [("text" in e, e["name"]) for e in kept if e["role"] == "tool"] == [
        (False, e["name"]) for e in tools
    ]
