"""Codex usage on its own call whichever order the version writes ``token_count``, and the
response items of current versions (``tool_search_call``, the ``window_number`` schema of
``compacted``), in two fixtures that hold the same calls and counts:

- ``fixtures/codex-0.142-usage-after-outputs.jsonl``: each response's ``token_count`` after its
  tool outputs (what 0.142 writes);
- ``fixtures/codex-0.125-usage-before-outputs.jsonl``: each count right after the response's
  items, before the outputs (0.104-0.125).

Shapes from openai/codex (``protocol.rs``: ``CompactedItem {message, replacement_history,
window_number, first_window_id, previous_window_id, window_id}``; ``models.rs``:
``ResponseItem::ToolSearchCall {call_id, execution, arguments}`` and ``ToolSearchOutput
{call_id, execution, tools}``). Five model calls: exec_command ``rg``, a client
``tool_search``, ``read_file``, the answer, and after the compaction (its summary only in
``replacement_history``, ``message`` empty) one more answer. Their ``last_token_usage``
(input with cached, cached, output): (12000, 9000, 210), (12600, 11900, 90),
(13400, 12500, 150), (14100, 13300, 60), (6100, 0, 45).

Read with the earlier rule (a count after a step's outputs goes to the next step), 0.142's
first step had no usage, each later step its predecessor's, and the last count was dropped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.recordings import codex
from engine.store import Store
from tests.engine.recordings.helpers import FIXTURES, import_all

AFTER = FIXTURES / "codex-0.142-usage-after-outputs.jsonl"
BEFORE = FIXTURES / "codex-0.125-usage-before-outputs.jsonl"


@pytest.mark.parametrize("path", [AFTER, BEFORE], ids=["0.142", "0.125"])
def test_each_call_gets_its_own_count_in_either_order(store: Store, path: Path) -> None:
    """Per step, the output tokens of its own count: 210, 90, 150, 60, 45. Totals by hand:
    input (not cached) 3000 + 700 + 900 + 800 + 6100 = 11,500; cache read 9000 + 11900 +
    12500 + 13300 + 0 = 46,700; output 555. Calls: exec_command, tool_search, read_file,
    each answered (3 results). One compaction, its context before it the fourth call's
    total 14,100 + 60 = 14,160 tokens, ``window_number`` 2 kept."""
    parsed = codex.parse(path.read_text(), path.name)
    steps = [i for i in parsed.items if i.kind == "assistant"]
    assert [s.usage.output_tokens if s.usage else None for s in steps] == [210, 90, 150, 60, 45]
    assert [s.model for s in steps] == ["gpt-5.3-codex"] * 5
    assert "token_count_unmatched" not in parsed.skipped
    (one,) = import_all(store, path)
    assert len(one.usages) == 5
    assert sum(u.usage.input_tokens for u in one.usages) == 11500
    assert sum(u.usage.cache_read_input_tokens for u in one.usages) == 46700
    assert sum(u.usage.output_tokens for u in one.usages) == 555
    assert [c.name for m in one.messages for c in m.tool_calls] == [
        "exec_command",
        "tool_search",
        "read_file",
    ]
    assert one.report.missing_results == 0
    tool_search = [m for m in one.role("tool") if m.meta.tool_name == "tool_search"]
    assert len(tool_search) == 1 and "read_file" in tool_search[0].content
    assert one.report.compactions == 1
    sid = one.report.session.id
    assert sid is not None
    [comp] = store.compactions(sid)
    assert comp.stats["recorded_pre_tokens"] == 14160
    assert comp.stats["recorded_window_number"] == 2
    [summary] = [i for i in parsed.items if i.kind == "summary"]
    assert "Retries live in config.toml" in summary.text


def test_a_server_side_search_stays_in_its_response() -> None:
    """A ``web_search_call`` the server ran has no output item: it is part of the step, which
    the answer after it continues (one step, its count the response's), counted by kind."""
    lines = AFTER.read_text().splitlines()
    web = (
        '{"timestamp":"2026-11-21T10:00:15.500Z","type":"response_item","payload":'
        '{"type":"web_search_call","status":"completed","action":{"type":"search",'
        '"query":"http retries"}}}'
    )
    at = next(n for n, line in enumerate(lines) if "Retries are set in config.toml" in line)
    parsed = codex.parse("\n".join([*lines[:at], web, *lines[at:]]) + "\n", AFTER.name)
    steps = [i for i in parsed.items if i.kind == "assistant"]
    assert [s.usage.output_tokens if s.usage else None for s in steps] == [210, 90, 150, 60, 45]
    assert parsed.skipped["response_item:web_search_call"] == 1
