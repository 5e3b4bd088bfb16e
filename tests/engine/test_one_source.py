"""Each rule is written once: the missing-result text and the cache breakpoint limit."""

from __future__ import annotations

import ast
from pathlib import Path

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
    assert where == ["engine/llm/base.py"]


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
