"""The corpus' newest real recordings (tests/data/corpus/README.md) imported, against counts
worked out once over each file with Python's ``json`` alone and written here as literals.

Claude Code 2.1.237 (teslamint/entirecontext, Entire 0.10.1 checkpoint ref ``SN/…``): a
``claude -p`` run of one prompt and one call, the newest CLI in the corpus, with the record kinds
that CLI writes before its first call (``atis-latch``; ``auto_mode`` and
``total_tokens_reminder`` attachments).
"""

from __future__ import annotations

from collections import Counter

from engine.recordings.figures import session_figures
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.helpers import CORPUS, import_all

TESLAMINT_2_1_237 = (
    CORPUS / "teslamint__entirecontext__entire__SN_01M0FWRPX72AX3CYC2HMV1W2SN_0_full.jsonl"
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
