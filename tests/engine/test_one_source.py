"""Each rule is written once: the missing-result text, the cache breakpoint limit, a summary's
token count."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engine.llm.offline import OfflineProvider
from engine.models import Outcome
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store

ROOT = Path(__file__).resolve().parents[2]


def _modules() -> list[tuple[Path, ast.Module]]:
    paths = sorted((ROOT / "engine").rglob("*.py")) + sorted((ROOT / "tools").rglob("*.py"))
    return [(p, ast.parse(p.read_text(), str(p))) for p in paths]


def test_max_cache_breakpoints_is_defined_once() -> None:
    where = [
        f"{path.relative_to(ROOT)}"
        for path, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and target.id == "MAX_CACHE_BREAKPOINTS"
    ]
    assert where == ["engine/messages/request.py"]


def test_the_missing_result_text_is_written_once() -> None:
    where = [
        f"{path.relative_to(ROOT)}"
        for path, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("No result was recorded")
    ]
    assert where == ["engine/models.py"]


@pytest.mark.parametrize(
    "strategy", ["layered", "reset-hint", "mock-user", "message-window", "head-middle-tail"]
)
def test_one_summary_token_count_for_the_record_the_history_pane_and_the_gauge(
    strategy: str, tmp_path: Path
) -> None:
    """The compaction record's ``tokens_after`` is the history pane's figures (the summary's and
    each kept message's own count), and the gauge's summary layer is the same count, whatever
    the placement (the gauge's history layer is what is sent: a projection may differ)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("hello\n" * 40, encoding="utf-8")
    own = {  # a kept tail small enough for ten short rounds to leave something to compact
        "message-window": {"message-window": {"max_messages": 200, "keep_last": 6}},
        "head-middle-tail": {"head-middle-tail": {"tail_retention_ratio": 0.005}},
    }.get(strategy, {})
    settings = Settings(
        model="offline", keep_rounds=1, strategy=strategy, strategies=own, data_dir=None
    )
    store = Store.open(tmp_path / "s.db")
    session = store.create_session(str(workspace), "t", strategy=strategy)
    agent = Agent(store, session, settings, OfflineProvider(settings), workspace)
    for text in ["read README.md", "ls ."] * 5:
        agent.run(text)

    record = agent.compact().compaction
    assert record is not None and record.outcome is Outcome.SUCCESS

    history = agent.history.history
    (summary,) = [s for s in history.summaries if s.active]
    assert summary.tokens is not None and summary.tokens > 0
    pane = summary.tokens + sum(m.tokens or 0 for m in history.messages)
    assert record.tokens_after == pane
    assert agent.preview().layers["L3 summaries"] == summary.tokens
