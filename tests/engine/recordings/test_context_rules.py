"""Each recorded agent's window and auto-compact point, by its own rule
(:func:`engine.recordings.agents.context_rules_for_parsed` / ``_for_session``).

The figures are worked by hand from the agents' documented rules:

- Claude Code compacts at its window less 20,000 kept for the summary and a 13,000 buffer
  (``window − min(max output, 20,000) − 13,000``): 200,000 → 167,000; 1,000,000 → 967,000.
  ``CLAUDE_CODE_AUTO_COMPACT_WINDOW=400000`` caps the window it compacts in: 400,000 − 33,000
  = 367,000. The corpus' marot session (Claude Code 2.1.39, claude-opus-4-6) compacted on
  its own at preTokens 167,094, just past 167,000.
- Codex compacts at 90 % of its raw window: 272,000 × 0.9 = 244,800; newer Codex records
  95 % of the raw window as ``model_context_window``: 272,000 × 0.95 = 258,400.
- Gemini CLI compresses at 0.5 of its token limit 1,048,576: 524,288.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engine.models import Usage
from engine.recordings.agents import context_rules_for_parsed, context_rules_for_session
from engine.recordings.base import Item, Parsed
from engine.recordings.importing import ParsedFiles, import_parsed, parse_sessions
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.helpers import CORPUS

T0 = datetime(2026, 11, 1, tzinfo=UTC)
MAROT = CORPUS / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
CODEX = CORPUS / "yoavf__ai-sessions__codex-pomodor-timer.jsonl"


def claude(model: str, request: int = 50_000, pre: int | None = None) -> Parsed:
    """A Claude Code session on ``model``: one input, one answer whose request was
    ``request`` tokens; with ``pre`` a compaction recorded at that size before it."""
    items = [Item("user", 1, T0, text="go")]
    if pre is not None:
        items.append(Item("summary", 2, T0, text="summary", pre_tokens=pre))
    usage = Usage(input_tokens=10, cache_read_input_tokens=request - 10, output_tokens=5)
    items.append(Item("assistant", 3, T0, text="done", usage=usage, model=model))
    return Parsed(fmt="claude-code", items=items, title="go", model=model)


def home(tmp_path: Path, settings: dict[str, object] | None = None) -> dict[str, str]:
    """An environment whose HOME is ``tmp_path``, with a Claude Code settings.json."""
    if settings is not None:
        (tmp_path / ".claude").mkdir(parents=True, exist_ok=True)
        (tmp_path / ".claude" / "settings.json").write_text(json.dumps(settings))
    return {"HOME": str(tmp_path)}


def test_claude_opus_5_has_the_1m_window_and_compacts_at_967000(tmp_path: Path) -> None:
    """genai-prices lists claude-opus-5 with a 1,000,000 window at one price (no long-context
    tier): its standard window. 1,000,000 − 33,000 = 967,000."""
    rules = context_rules_for_parsed(claude("claude-opus-5"), Settings(), home(tmp_path))
    assert (rules.window, rules.auto_compact_at) == (1_000_000, 967_000)
    assert rules.window_source == "claude-opus-5's window in genai-prices"


def test_claude_sonnet_4_6_with_the_1m_suffix(tmp_path: Path) -> None:
    rules = context_rules_for_parsed(claude("claude-sonnet-4-6[1m]"), Settings(), home(tmp_path))
    assert (rules.window, rules.auto_compact_at) == (1_000_000, 967_000)
    assert rules.window_source == "the [1m] suffix of claude-sonnet-4-6[1m]"


def test_claude_sonnet_4_6_without_proof_is_a_200k_session(tmp_path: Path) -> None:
    """Its 1M window is priced as long context over 200,000 (opt-in): 200,000 / 167,000."""
    rules = context_rules_for_parsed(claude("claude-sonnet-4-6"), Settings(), home(tmp_path))
    assert (rules.window, rules.auto_compact_at) == (200_000, 167_000)


def test_a_call_over_200000_proves_the_1m_window(tmp_path: Path) -> None:
    """A request of 296,412 and its 5 output tokens: 296,417 in the window. A request of
    199,996 with its 5 output tokens (200,001) proves it too: the API refuses a call whose
    input and output do not fit in the window."""
    rules = context_rules_for_parsed(
        claude("claude-sonnet-4-6", request=296_412), Settings(), home(tmp_path)
    )
    assert (rules.window, rules.auto_compact_at) == (1_000_000, 967_000)
    assert "296,417" in rules.window_source
    just_over = claude("claude-sonnet-4-6", request=199_996)
    assert context_rules_for_parsed(just_over, Settings(), home(tmp_path)).window == 1_000_000
    just_in = claude("claude-sonnet-4-6", request=199_995)
    assert context_rules_for_parsed(just_in, Settings(), home(tmp_path)).window == 200_000


def test_a_compaction_at_998659_proves_the_1m_window(tmp_path: Path) -> None:
    """The issue's Opus session: an auto compaction at preTokens 998,659 (past 967,000: Claude
    Code checks before each request, and the last turn took it over)."""
    parsed = claude("claude-opus-4-6", request=120_000, pre=998_659)
    rules = context_rules_for_parsed(parsed, Settings(), home(tmp_path))
    assert (rules.window, rules.auto_compact_at) == (1_000_000, 967_000)
    assert "998,659" in rules.window_source


def test_the_auto_compact_window_variable_moves_the_trigger(tmp_path: Path) -> None:
    """400,000 − 33,000 = 367,000; the window stays 1,000,000."""
    env = home(tmp_path) | {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "400000"}
    rules = context_rules_for_parsed(claude("claude-opus-5"), Settings(), env)
    assert (rules.window, rules.auto_compact_at) == (1_000_000, 367_000)
    assert rules.trigger_source.startswith("CLAUDE_CODE_AUTO_COMPACT_WINDOW=400000")


def test_the_settings_file_moves_the_trigger(tmp_path: Path) -> None:
    """``autoCompactWindow`` 500,000 at the top; ``modelSettings`` for the model (300,000)
    comes first: 300,000 − 33,000 = 267,000. The environment variable still wins."""
    env = home(
        tmp_path,
        {
            "autoCompactWindow": 500_000,
            "modelSettings": {"claude-opus-5": {"autoCompactWindow": 300_000}},
        },
    )
    rules = context_rules_for_parsed(claude("claude-opus-5"), Settings(), env)
    assert rules.auto_compact_at == 267_000
    only_top = home(tmp_path / "b", {"autoCompactWindow": 500_000})
    assert (
        context_rules_for_parsed(claude("claude-opus-5"), Settings(), only_top).auto_compact_at
        == 467_000
    )
    env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = "2e5"
    assert (
        context_rules_for_parsed(claude("claude-opus-5"), Settings(), env).auto_compact_at
        == 167_000
    )


def test_a_compact_window_over_the_window_is_the_window(tmp_path: Path) -> None:
    """On a 200,000 model a 460,000 setting does nothing: 200,000 − 33,000 = 167,000."""
    env = home(tmp_path) | {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "460000"}
    rules = context_rules_for_parsed(claude("claude-haiku-4-5"), Settings(), env)
    assert (rules.window, rules.auto_compact_at) == (200_000, 167_000)


def test_disable_1m_returns_the_200000_window(tmp_path: Path) -> None:
    env = home(tmp_path) | {"CLAUDE_CODE_DISABLE_1M_CONTEXT": "1"}
    rules = context_rules_for_parsed(claude("claude-opus-5[1m]"), Settings(), env)
    assert (rules.window, rules.auto_compact_at) == (200_000, 167_000)
    from_settings = home(tmp_path / "s", {"env": {"CLAUDE_CODE_DISABLE_1M_CONTEXT": "1"}})
    assert (
        context_rules_for_parsed(claude("claude-opus-5"), Settings(), from_settings).window
        == 200_000
    )


def test_disable_auto_compact_leaves_no_trigger(tmp_path: Path) -> None:
    env = home(tmp_path, {"autoCompactEnabled": False})
    rules = context_rules_for_parsed(claude("claude-opus-5"), Settings(), env)
    assert rules.auto_compact_at is None
    assert rules.until(500_000) is None


def test_the_corpus_claude_code_files_are_200k_sessions(tmp_path: Path) -> None:
    """marot: claude-opus-4-6 (long context priced over 200,000), its largest request
    166,759 and its compaction at 167,094, neither over 200,000 (a python one-liner over its
    assistant ``usage`` and ``compactMetadata``); yoavf: claude-sonnet-4-5 (200,000 in
    genai-prices);
    moredip: claude-opus-4-5 (200,000)."""
    names = [
        MAROT.name,
        "yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl",
        "moredip__session-share__4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl",
    ]
    for name in names:
        (parsed,) = parse_sessions(CORPUS / name)
        rules = context_rules_for_parsed(parsed, Settings(), home(tmp_path))
        assert (rules.window, rules.auto_compact_at) == (200_000, 167_000), name


def test_codex_compacts_at_90_percent_of_its_raw_window(tmp_path: Path) -> None:
    """A rollout recording 258,400 (= 272,000 × 0.95) is read as the raw 272,000 and compacts
    at 244,800, not at 90 % of 258,400 (232,560)."""
    parsed = Parsed(fmt="codex", items=[], title="t", recorded={"context_window": 258_400})
    rules = context_rules_for_parsed(parsed, Settings(), {"HOME": str(tmp_path)})
    assert (rules.window, rules.auto_compact_at) == (272_000, 244_800)


def test_the_corpus_codex_rollout(tmp_path: Path) -> None:
    """Codex 0.47 recorded ``model_context_window`` 272000 itself (41 token counts, all
    272000: grep -o over the file): raw 272,000, trigger 244,800."""
    (parsed,) = parse_sessions(CODEX)
    rules = context_rules_for_parsed(parsed, Settings(), {"HOME": str(tmp_path)})
    assert (rules.window, rules.auto_compact_at) == (272_000, 244_800)


def test_codex_config_sets_the_limit(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text("model_auto_compact_token_limit = 200000\n")
    (parsed,) = parse_sessions(CODEX)
    rules = context_rules_for_parsed(parsed, Settings(), {"HOME": str(tmp_path)})
    assert (rules.window, rules.auto_compact_at) == (272_000, 200_000)
    assert "model_auto_compact_token_limit" in rules.trigger_source


def test_gemini_cli_compresses_at_half_its_limit(tmp_path: Path) -> None:
    (parsed,) = parse_sessions(CORPUS / "yoavf__ai-sessions__gemini-cli-pomodoro-timer.json")
    rules = context_rules_for_parsed(parsed, Settings(), {"HOME": str(tmp_path)})
    assert (rules.window, rules.auto_compact_at) == (1_048_576, 524_288)


def test_an_agent_without_a_trigger(tmp_path: Path) -> None:
    """OpenHands on claude-3-5-sonnet-20241022: 200,000 in genai-prices, no trigger."""
    (parsed,) = parse_sessions(CORPUS / "All-Hands-AI__OpenHands__basic_gui_mode.json")
    rules = context_rules_for_parsed(parsed, Settings(), {"HOME": str(tmp_path)})
    assert (rules.window, rules.auto_compact_at) == (200_000, None)


@pytest.mark.parametrize("path", [MAROT, CODEX])
def test_a_stored_session_has_the_rules_of_its_parse(
    store: Store, tmp_path: Path, path: Path
) -> None:
    """What the store keeps (model, usage, compactions, the recorded window, the recorded
    folder whose project settings the rules read) gives the same rules as the parse, for a
    session imported as ``import FILE`` stores it (in its recorded folder)."""
    (parsed,) = parse_sessions(path)
    env = {"HOME": str(tmp_path)}
    files = ParsedFiles([(path, parsed)])
    (report,) = import_parsed(store, files, "/ws", Settings(), recorded_cwd=True)
    stored = context_rules_for_session(store, report.session, Settings(), env)
    assert stored == context_rules_for_parsed(parsed, Settings(), env)


def test_the_project_settings_come_before_the_users(tmp_path: Path) -> None:
    """The session's folder (its ``cwd``) holds ``.claude/settings.json`` (300,000) and
    ``.claude/settings.local.json`` (250,000); the user's says 500,000. The local file wins:
    250,000 − 33,000 = 217,000; without it the project's: 300,000 − 33,000 = 267,000."""
    env = home(tmp_path / "home", {"autoCompactWindow": 500_000})
    project = tmp_path / "project" / ".claude"
    project.mkdir(parents=True)
    (project / "settings.json").write_text(json.dumps({"autoCompactWindow": 300_000}))
    (project / "settings.local.json").write_text(json.dumps({"autoCompactWindow": 250_000}))
    parsed = claude("claude-opus-5")
    parsed.cwd = str(tmp_path / "project")
    rules = context_rules_for_parsed(parsed, Settings(), env)
    assert rules.auto_compact_at == 217_000
    assert str(project / "settings.local.json") in rules.trigger_source
    (project / "settings.local.json").unlink()
    assert context_rules_for_parsed(parsed, Settings(), env).auto_compact_at == 267_000


def test_the_context_1m_beta_gives_the_1m_window(tmp_path: Path) -> None:
    """``ANTHROPIC_BETAS=context-1m-2025-08-07`` on claude-sonnet-4-6 (200,000 otherwise)."""
    env = home(tmp_path) | {"ANTHROPIC_BETAS": "context-1m-2025-08-07"}
    rules = context_rules_for_parsed(claude("claude-sonnet-4-6"), Settings(), env)
    assert (rules.window, rules.auto_compact_at) == (1_000_000, 967_000)
    recorded = claude("claude-sonnet-4-6")
    recorded.recorded["betas"] = ["context-1m-2025-08-07"]
    assert context_rules_for_parsed(recorded, Settings(), home(tmp_path)).window == 1_000_000


def test_the_percent_override_only_lowers_the_point(tmp_path: Path) -> None:
    """``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=50`` on the 1M window: 50 % of (1,000,000 − 20,000)
    = 490,000, under 967,000. At 99 %: 970,200 is over 967,000, which stays."""
    env = home(tmp_path) | {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}
    assert (
        context_rules_for_parsed(claude("claude-opus-5"), Settings(), env).auto_compact_at
        == 490_000
    )
    env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] = "99"
    assert (
        context_rules_for_parsed(claude("claude-opus-5"), Settings(), env).auto_compact_at
        == 967_000
    )
    env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] = "0.5"  # newer versions' fraction: the same 50 %
    assert (
        context_rules_for_parsed(claude("claude-opus-5"), Settings(), env).auto_compact_at
        == 490_000
    )
    env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] = "150"  # over 100: ignored, as Claude Code does
    assert (
        context_rules_for_parsed(claude("claude-opus-5"), Settings(), env).auto_compact_at
        == 967_000
    )
