"""Every corpus file's cost against a hand calculation at list prices.

Each row below was worked out once, outside ctxscope, with a few lines of Python over the
file (``json`` only): the requests and tokens each kind and model, then the provider's
published price per million tokens. The code's figures come from importing the file; its
prices from genai-prices' data. Neither is used to make the expected values.

How the files were counted:

- Claude Code: each API response once (its ``message.id``; the file's records of one response
  all carry the same usage), input = ``input_tokens``, cache read = ``cache_read_input_tokens``,
  cache write = ``cache_creation_input_tokens``, split into 1-hour and 5-minute writes by
  ``cache_creation.ephemeral_1h_input_tokens`` where the record has it (none before 2.1.x:
  all 5-minute).
- Codex: each ``token_count`` event with ``info`` whose ``total_token_usage`` changed (a repeat
  is the same call written again), its ``last_token_usage``: input less
  ``cached_input_tokens``, cached, output (reasoning included in it); 0.147's
  ``cache_write_input_tokens`` is 0 in every count here.
- Gemini CLI: each ``gemini`` message's ``tokens``: input less ``cached``, cached, output +
  ``thoughts``; 14 messages carry ``tokens``, one all zeros (message 1), so 13 billed requests.
- OpenHands: each ``tool_call_metadata.model_response`` once (by ``id``), ``usage``:
  ``prompt_tokens`` less cache read and cache write, and each of those, ``completion_tokens``.
- Copilot CLI: ``outputTokens`` of each ``assistant.message`` (no input is recorded); the
  session's own are those without ``parentToolCallId``, its subagent's those with it.
- SWE-agent: the trajectory records no per-call usage, only ``info.model_stats``
  (``tokens_sent`` 52,861, ``tokens_received`` 326, 5 calls, ``instance_cost`` $0.53839).

List prices, USD per million tokens:

- Anthropic, platform.claude.com/docs/en/about-claude/pricing ("Model pricing"): Claude Opus
  4.5, 4.6 and 5: $5 input, $6.25 5-minute cache write, $10 1-hour write, $0.50 cache hit, $25
  output; Claude Sonnet 4.5 and 3.5: $3 / $3.75 / $6 / $0.30 / $15; Claude Fable 5: $10 input,
  $50 output; Claude Sonnet 5: $2 input, $10 output (its introductory price through August 31,
  2026; the session ran July 24).
- OpenAI, developers.openai.com/api/docs/pricing (standard, short context): gpt-5.5 $5 input,
  $0.50 cached input, $30 output; gpt-5.4 $2.50 / $0.25 / $15 (prompts under 272,000 tokens:
  the largest here is 29,567); gpt-5-codex $1.25 / $0.125 / $10; gpt-5.6-sol (its page,
  developers.openai.com/api/docs/models/gpt-5.6-sol: now $4 / $0.40 / $20, "a 20 % cut in the
  input and 33 % in the output price", made on 2026-08-21 by OpenAI's changelog): the
  teslamint sessions ran on 2026-08-14 and 16, before it, at $5 / $0.50 / $30 (ccusage
  20.0.24 prices them at today's $4 / $0.40 / $20: $0.107158 and $0.572031).
- Google, ai.google.dev/gemini-api/docs/pricing: gemini-2.5-pro, prompts up to 200k tokens (the
  largest here is 12,707): $1.25 input, $0.125 context cache, $10 output (thinking included).
- gpt-4-1106-preview (what SWE-agent's ``gpt4`` named in this run), OpenAI's price list of its
  time: $10 input, $30 output: 52,861 × 10 + 326 × 30 = $0.53839, the run's own figure.

ccusage 20.0.24 (``--offline``) agrees on every file it reads; see docs/importing.md
("Checked against").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.recordings.figures import session_figures
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.helpers import CORPUS, import_all

M = 1_000_000


@dataclass(frozen=True)
class Hand:
    """One session's billed calls as counted by hand, and their price."""

    requests: int
    model: str
    input: int
    cache_read: int
    write_5m: int
    write_1h: int
    output: int
    prices: tuple[float, float, float, float, float]
    """Per MTok: input, 5-minute write, 1-hour write, cache read, output."""

    @property
    def cost(self) -> float:
        i, w5, w1, r, o = self.prices
        return (
            self.input * i
            + self.write_5m * w5
            + self.write_1h * w1
            + self.cache_read * r
            + self.output * o
        ) / M


OPUS = (5, 6.25, 10, 0.50, 25)
SONNET_4_5 = (3, 3.75, 6, 0.30, 15)
GPT_5_5 = (5, 0, 0, 0.50, 30)
GPT_5_4 = (2.50, 0, 0, 0.25, 15)
GPT_5_6_SOL_JULY = (5, 0, 0, 0.50, 30)
"""gpt-5.6-sol from its launch (2026-07-09) to the price cut of 2026-08-21."""
GPT_5_CODEX = (1.25, 0, 0, 0.125, 10)
GEMINI_2_5_PRO = (1.25, 0, 0, 0.125, 10)
FABLE_5 = (10, 12.50, 20, 1, 50)
SONNET_5 = (2, 2.50, 4, 0.20, 10)
SONNET_5_5 = (2, 2.50, 4, 0.10, 10)
"""Claude Sonnet 5.5 (genai-prices, citing Anthropic's pricing page): cache hits 0.05x input."""

HAND: dict[str, Hand] = {
    "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl": Hand(
        152, "claude-opus-4-6", 180, 14_771_617, 0, 349_474, 38_899, OPUS
    ),  # $11.853924 (0.0009 + 7.3858085 + 3.49474 + 0.972475)
    "moredip__session-share__4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl": Hand(
        2, "claude-opus-4-5-20251101", 18, 32_772, 6_682, 0, 4, OPUS
    ),  # $0.058339
    "moredip__session-share__4b2030ed__subagents__agent-a2018e5.jsonl": Hand(
        2, "claude-opus-4-5-20251101", 4, 11_560, 12_675, 0, 8, OPUS
    ),  # $0.085219
    "yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl": Hand(
        40, "claude-sonnet-4-5-20250929", 265, 1_295_467, 55_442, 0, 12_700, SONNET_4_5
    ),  # $0.787843
    "JanDeDobbeleer__oh-my-posh__entire__10_906611becd_0_full.jsonl": Hand(
        250, "claude-opus-5", 473, 37_535_603, 0, 737_624, 89_129, OPUS
    ),  # $28.374631 (0.002365 + 18.7678015 + 7.37624 + 2.228225)
    "JanDeDobbeleer__oh-my-posh__entire__28_0a344253d3_0_full.jsonl": Hand(
        208, "claude-opus-5", 3_409, 36_290_407, 0, 616_064, 218_001, OPUS
    ),  # $29.772914 (0.017045 + 18.1452035 + 6.16064 + 5.450025)
    "yoavf__ai-sessions__codex-pomodor-timer.jsonl": Hand(
        21, "gpt-5-codex", 33_995, 181_760, 0, 0, 14_976, GPT_5_CODEX
    ),  # $0.214974
    "entireio__cli__entire__1c_f96d1dbe7e_3_raw_transcript.jsonl": Hand(
        2, "gpt-5.5", 30_854, 30_464, 0, 0, 2_205, GPT_5_5
    ),  # $0.235652 (0.15427 + 0.015232 + 0.06615); Entire's metadata.json: the same tokens
    "EntityProcess__agentv__entire__a3_92ff332928_0_full.jsonl": Hand(
        10, "gpt-5.4", 36_058, 230_656, 0, 0, 2_958, GPT_5_4
    ),  # $0.192179 (0.090145 + 0.057664 + 0.04437); Entire's metadata.json: the same tokens
    "teslamint__entirecontext__entire__X5_01M05RN3X2Z7NSB62J6F0RH4X5_0_full.jsonl": Hand(
        1, "gpt-5.6-sol", 24_519, 15_104, 0, 0, 152, GPT_5_6_SOL_JULY
    ),  # $0.134707 (0.122595 + 0.007552 + 0.00456); Entire's metadata.json: the same tokens
    "teslamint__entirecontext__entire__P2_01M05FR2RHZ3ZR60MHZJ3273P2_0_full.jsonl": Hand(
        10, "gpt-5.6-sol", 67_799, 415_488, 0, 0, 6_732, GPT_5_6_SOL_JULY
    ),  # $0.748699 (0.338995 + 0.207744 + 0.20196); Entire's metadata.json: the same tokens
    "teslamint__entirecontext__entire__SN_01M0FWRPX72AX3CYC2HMV1W2SN_0_full.jsonl": Hand(
        1, "claude-opus-4-6", 2, 23_583, 0, 28_866, 248, OPUS
    ),  # $0.3066615 (0.00001 + 0.28866 + 0.0117915 + 0.0062); Entire's metadata.json: the same
    "KuzniAI__opencode-entire-plugin__entire__K0_01M3Q4WPN518QH04367X86D6K0_0_full.jsonl": Hand(
        4, "claude-sonnet-5-5", 8, 119_030, 0, 10_013, 1_332, SONNET_5_5
    ),  # $0.065291 (0.000016 + 0.040052 + 0.011903 + 0.01332); Entire's metadata.json: the same
    "yoavf__ai-sessions__gemini-cli-pomodoro-timer.json": Hand(
        13, "gemini-2.5-pro", 34_028, 86_702, 0, 0, 6_223, GEMINI_2_5_PRO
    ),  # $0.115603
    "All-Hands-AI__OpenHands__basic_gui_mode.json": Hand(
        4, "claude-3-5-sonnet-20241022", 22, 11_793, 5_482, 0, 2_024, SONNET_4_5
    ),  # $0.054521
    "polecatspeaks__StarCar__entire__70_f01dc53f44_0_full.jsonl": Hand(
        57, "claude-fable-5", 0, 0, 0, 0, 44_596, FABLE_5
    ),  # $2.2298: output only, the file records no input
}
COPILOT_SUBAGENT = Hand(2, "claude-sonnet-5", 0, 0, 0, 0, 652, SONNET_5)
"""The Copilot file's background subagent (``task`` call toolu_01838…): 133 + 519 output."""


def test_every_corpus_file_has_a_row() -> None:
    files = {p.name for p in CORPUS.iterdir() if p.name != "README.md"}
    assert files == {*HAND, "SWE-agent__SWE-agent__swe-agent__test-repo-i1.traj"}


def figures_of(store: Store, path: Path) -> list[tuple[str | None, object]]:
    """The file's session, then its subagents, each with its figures."""
    (one,) = import_all(store, path)
    sessions = [one.report.session, *(c.session for c in one.report.children)]
    return [(s.agent_id, session_figures(store, s, Settings())) for s in sessions]


def check(hand: Hand, figures: object) -> None:
    assert figures.requests == hand.requests  # type: ignore[attr-defined]
    assert figures.models == (hand.model,)  # type: ignore[attr-defined]
    tokens = figures.tokens  # type: ignore[attr-defined]
    assert (tokens.input, tokens.cache_read, tokens.cache_write, tokens.output) == (
        hand.input,
        hand.cache_read,
        hand.write_5m + hand.write_1h,
        hand.output,
    )
    assert figures.unpriced_requests == 0  # type: ignore[attr-defined]
    assert figures.cost == pytest.approx(hand.cost, abs=1e-6)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(HAND), ids=lambda n: n[:40])
def test_the_cost_is_the_hand_calculation(store: Store, name: str) -> None:
    first, *rest = figures_of(store, CORPUS / name)
    check(HAND[name], first[1])
    if name.startswith("polecatspeaks"):
        ((agent, sub),) = rest
        assert agent == "toolu_01838NQjBeRWEtQvqP6L5B5o"
        check(COPILOT_SUBAGENT, sub)


def test_a_trajectory_without_per_call_usage_keeps_its_own_cost(store: Store) -> None:
    """SWE-agent records only the run's totals: ctxscope prices no call (it has none to
    price, and the file names no model) and keeps the run's own $0.53839, which is the
    hand calculation at gpt-4-1106-preview's list price (module docstring)."""
    (one,) = import_all(store, CORPUS / "SWE-agent__SWE-agent__swe-agent__test-repo-i1.traj")
    figures = session_figures(store, one.report.session, Settings())
    assert figures.requests == 0 and figures.cost is None
    assert one.report.recorded["recorded_cost"] == pytest.approx((52_861 * 10 + 326 * 30) / M)
