"""Issue 44: a recorded Read result's history form. ``cat -n`` lines (``"   120\\tcode"``) are
kept as ``"120: code"``; Claude Code's Read writes ``"   120→code"`` (no tab), which is kept as
it is, without searching it for lines to compact (the search was 5 % of an import's
writing)."""

from __future__ import annotations

from engine.compaction.tool_results import ToolResultCompressor
from engine.recordings.envelopes import envelope
from engine.settings.config import Settings

ARROWS = "     1→defmodule Spotter.Transcripts.Annotation do\n     2→  @moduledoc false\n"
"""The start of marot's first Read result (tests/data/corpus), as Claude Code recorded it."""


def form_content(text: str) -> str:
    result = envelope("Read", {"file_path": "/p/a.ex"}, text, False, None)
    content = ToolResultCompressor(Settings()).compress("Read", result)["data"]["content"]
    assert isinstance(content, str)
    return content


def test_claude_code_read_lines_are_kept_as_they_are() -> None:
    """No tab in the text: the form's content is the text itself."""
    assert form_content(ARROWS) == ARROWS


def test_cat_n_lines_are_compacted() -> None:
    """A tab after the number: the padding and the tab become ``": "`` on each line (worked
    out by hand from the rule in the A3 table)."""
    text = "     1\tdefmodule A do\n     2\t  @moduledoc false\n"
    assert form_content(text) == "1: defmodule A do\n2:   @moduledoc false\n"
