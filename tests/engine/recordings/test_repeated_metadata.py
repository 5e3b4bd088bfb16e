"""Claude Code writes its title and mode lines again, byte for byte, at each resume: a
normal repeat is counted (``repeated:<kind>``), never named among the damaged lines.

The 2.1.217 fixture (19 lines) with a ``custom-title`` and a ``mode`` line, each written twice
(lines 20-23), and one conversation line written again (line 24, a copy of line 2: damage)."""

from __future__ import annotations

import json

from engine.recordings import claude_code
from tests.engine.recordings.helpers import FIXTURES

SESSION = "7c1e0f4a-2b9d-4e61-a0c3-5f8e2d917b40"


def test_a_repeated_title_or_mode_line_is_counted_not_named() -> None:
    lines = (FIXTURES / "claude-code-2.1.217-preserved-segment.jsonl").read_text().splitlines()
    title = json.dumps({"type": "custom-title", "customTitle": "Parser fix", "sessionId": SESSION})
    mode = json.dumps({"type": "mode", "mode": "plan", "sessionId": SESSION})
    raw = "\n".join([*lines, title, mode, title, mode, lines[1]]) + "\n"
    parsed = claude_code.parse(raw, "s.jsonl")
    assert parsed.not_read.lines == {"repeats an earlier line": [24]}
    assert parsed.not_read.kinds == {}
    assert (parsed.skipped["repeated:custom-title"], parsed.skipped["repeated:mode"]) == (1, 1)
    assert parsed.title == "Parser fix"
