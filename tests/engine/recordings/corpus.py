"""Paths of the real recordings (never edited; see ``tests/data/corpus/README.md``).

Eight files are byte-for-byte copies of the team's ``shared/corpus``, seven more (this month's
Claude Code, Codex and Copilot CLI, from public Entire checkpoint branches) were added here; each
file's git blob is the one its README names (``test_corpus_copy.py`` checks), kept in the
repository so that a clean clone tests against them. ``CTXSCOPE_CORPUS`` points the tests at
another copy.
"""

from __future__ import annotations

import os
from pathlib import Path


def _corpus() -> Path:
    if os.environ.get("CTXSCOPE_CORPUS"):
        return Path(os.environ["CTXSCOPE_CORPUS"])
    return Path(__file__).resolve().parents[2] / "data" / "corpus"


CORPUS = _corpus()
MAROT = CORPUS / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
MOREDIP = CORPUS / "moredip__session-share__4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl"
MOREDIP_AGENT = CORPUS / "moredip__session-share__4b2030ed__subagents__agent-a2018e5.jsonl"
YOAVF = CORPUS / "yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl"
OMP_BOUNDARY = CORPUS / "JanDeDobbeleer__oh-my-posh__entire__10_906611becd_0_full.jsonl"
"""Claude Code 2.1.219: the file begins at an auto compaction (998,659 → 18,101)."""
OMP_MANUAL = CORPUS / "JanDeDobbeleer__oh-my-posh__entire__28_0a344253d3_0_full.jsonl"
"""Claude Code 2.1.217: a manual ``/compact`` at line 543 (297,190 → 16,970), preserved segment."""
STARCAR_COPILOT = CORPUS / "polecatspeaks__StarCar__entire__70_f01dc53f44_0_full.jsonl"
"""Copilot CLI 1.0.74 ``events.jsonl`` with a background subagent."""
ENTIRE_CODEX = CORPUS / "entireio__cli__entire__1c_f96d1dbe7e_3_raw_transcript.jsonl"
"""Codex 0.130.0 rollout: usage written after the step's calls."""
AGENTV_CODEX = CORPUS / "EntityProcess__agentv__entire__a3_92ff332928_0_full.jsonl"
"""Codex 0.140.0 (codex-tui) rollout: usage after the outputs, cut mid-step by a commit."""
TESLAMINT_EXEC = (
    CORPUS / "teslamint__entirecontext__entire__X5_01M05RN3X2Z7NSB62J6F0RH4X5_0_full.jsonl"
)
"""Codex 0.147.0 ``codex exec``: ``world_state``, ``history_mode``, ``context_window.window_id``;
one call."""
TESLAMINT_MCP = (
    CORPUS / "teslamint__entirecontext__entire__P2_01M05FR2RHZ3ZR60MHZJ3273P2_0_full.jsonl"
)
"""Codex 0.147.0 as an MCP server (``source: "mcp"``): ten calls of the code-mode ``exec`` tool."""
