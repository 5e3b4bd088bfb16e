"""Paths of the real recordings (never edited; see ``tests/data/corpus/README.md``).

The eight files are byte-for-byte copies of the team's ``shared/corpus`` (each file's git blob
is the one its README names; ``test_corpus_copy.py`` checks), kept in the repository so that a
clean clone tests against them. ``CTXSCOPE_CORPUS`` points the tests at another copy.
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
