"""The Recall tool: its result for the model, its history form (A3), and without a store."""

from __future__ import annotations

from pathlib import Path

from engine.compaction.tool_results import ToolResultCompressor
from engine.llm.offline import PlannedCall, parse_command
from engine.models import RecallHit
from engine.settings.config import Settings
from tools.base import ToolContext
from tools.registry import default_registry


def hits(n: int) -> list[RecallHit]:
    return [
        RecallHit(
            message_id=10 + i,
            segment_id=3,
            round=i + 1,
            role="tool",
            tool_name="Bash",
            snippet=f"line {i}: [retry] delay is 0.5",
            score=5.0 - i,
        )
        for i in range(n)
    ]


def test_recall_lists_hits_best_first(tmp_path: Path) -> None:
    asked: list[tuple[str, int]] = []

    def recall(query: str, limit: int) -> list[RecallHit]:
        asked.append((query, limit))
        return hits(2)

    ctx = ToolContext(workspace=tmp_path, settings=Settings(), recall=recall)
    result = default_registry().run("Recall", {"query": "retry", "limit": 2}, ctx)
    assert asked == [("retry", 2)]
    assert result.status == "success"
    assert result.text.splitlines() == [
        '2 archived passages for "retry", best first:',
        "segment #3 · round 1 · message 10 (tool Bash): line 0: [retry] delay is 0.5",
        "segment #3 · round 2 · message 11 (tool Bash): line 1: [retry] delay is 0.5",
    ]
    assert result.data["total"] == 2 and result.data["hits"][1]["message_id"] == 11


def test_recall_without_match_or_store(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, settings=Settings(), recall=lambda q, n: [])
    empty = default_registry().run("Recall", {"query": "nothing"}, ctx)
    assert empty.text == 'No archived message matches "nothing".'
    bare = ToolContext(workspace=tmp_path, settings=Settings())
    result = default_registry().run("Recall", {"query": "x"}, bare)
    assert result.status == "error" and result.error is not None
    assert result.error.code == "unavailable"
    too_many = default_registry().run("Recall", {"query": "x", "limit": 21}, ctx)
    assert too_many.error is not None and too_many.error.code == "invalid_input"


def test_history_keeps_the_first_hits_like_grep(tmp_path: Path) -> None:
    settings = Settings()  # grep_max_lines = 5
    ctx = ToolContext(workspace=tmp_path, settings=settings, recall=lambda q, n: hits(7))
    result = default_registry().run("Recall", {"query": "retry", "limit": 7}, ctx)
    form = ToolResultCompressor(settings).compress("Recall", result)
    assert form["data"]["query"] == "retry" and form["data"]["total"] == 7
    assert len(form["data"]["hits"]) == 5
    assert form["data"]["hits"][0] == (
        "segment #3 · round 1 · message 10 (tool Bash): line 0: [retry] delay is 0.5"
    )
    assert form["data"]["truncated"] is True and form["data"]["omitted"] == 2


def test_offline_provider_understands_recall() -> None:
    assert parse_command("recall retry delay") == PlannedCall("Recall", {"query": "retry delay"})
    assert parse_command('recall "KeyError: port"') == PlannedCall(
        "Recall", {"query": "KeyError: port"}
    )
