"""Paths of the real recordings in ``shared/corpus`` (never edited; see its README).

The corpus sits beside the repository (``/work/shared/corpus`` for ``/work/main`` and the
worktrees under ``/work/wt``): the nearest ``shared/corpus`` above this file, or
``CTXSCOPE_CORPUS``.
"""

from __future__ import annotations

import os
from pathlib import Path


def _corpus() -> Path:
    if os.environ.get("CTXSCOPE_CORPUS"):
        return Path(os.environ["CTXSCOPE_CORPUS"])
    for above in Path(__file__).resolve().parents:
        if (above / "shared" / "corpus").is_dir():
            return above / "shared" / "corpus"
    raise FileNotFoundError("shared/corpus not found above the repository; set CTXSCOPE_CORPUS")


CORPUS = _corpus()
MAROT = CORPUS / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
MOREDIP = CORPUS / "moredip__session-share__4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl"
MOREDIP_AGENT = CORPUS / "moredip__session-share__4b2030ed__subagents__agent-a2018e5.jsonl"
YOAVF = CORPUS / "yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl"
