"""The stored tool definitions (tools/definitions.json) are what the tools build.

``ctxscope context`` offers the model the stored definitions without importing the ten tools
(issue 44); an agent that runs tools builds them from its registry. The two must be the same
objects in the same order, or a request's L1 tools (and its token count) would depend on
which path built it.
"""

from __future__ import annotations

import json

from engine.compaction.strategies import STRATEGIES
from tests.tools.test_registry import TEN
from tools.definitions import STORED, built_text, tool_definitions
from tools.registry import default_registry


def test_the_stored_file_is_what_the_tools_build() -> None:
    assert STORED.read_text(encoding="utf-8") == built_text(), (
        "tools/definitions.json is out of date with the tools: "
        "run `python -m tools.definitions --write` and commit the file"
    )


def test_definitions_equal_the_registry_s_in_order() -> None:
    stored = tool_definitions()
    built = default_registry().schemas()
    assert json.dumps(stored, ensure_ascii=False) == json.dumps(built, ensure_ascii=False)
    assert [d["name"] for d in stored] == TEN  # default_registry()'s order, as the model sees it


def test_a_strategy_s_own_tools_come_after_the_ten() -> None:
    """message-window adds seed 003's two loading tools: built live, after the stored ten,
    as ``ToolRegistry.extended`` places them."""
    extra = STRATEGIES["message-window"].extra_tools
    assert len(extra) == 2
    stored = tool_definitions(extra)
    built = default_registry().extended([tool() for tool in extra]).schemas()
    assert json.dumps(stored, ensure_ascii=False) == json.dumps(built, ensure_ascii=False)
    assert len(stored) == 12


def test_each_call_gives_its_own_copy() -> None:
    """The builder marks the last tool for caching: a caller's change must not reach the
    next caller."""
    first = tool_definitions()
    first[-1]["cache_control"] = {"type": "ephemeral"}
    first[0]["input_schema"]["properties"].clear()
    assert tool_definitions() == default_registry().schemas()
