"""Strategies behind their registry (issue 43): no module of ctxscope imports a strategy's
module except the strategies' own package (``engine.compaction.strategies``, which holds the
registry and the strategies).

The import contracts in pyproject.toml say the same for the floors they list; this walks every
module grimp finds, so a new floor, or a seventh strategy, is covered without editing a list.
Imports under ``TYPE_CHECKING`` count: naming a strategy there is naming it too.
"""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest

from engine.compaction.strategies import STRATEGIES

PACKAGES = ("cli", "engine", "tools", "prompts", "tui")
REGISTRY = "engine.compaction.strategies"


def outside_importers(graph: grimp.ImportGraph, registry: str) -> dict[str, set[str]]:
    """Each module under ``registry`` with the modules outside ``registry`` that import it."""
    found: dict[str, set[str]] = {}
    for module in graph.find_descendants(registry):
        outside = {
            m
            for m in graph.find_modules_that_directly_import(module)
            if m != registry and not m.startswith(f"{registry}.")
        }
        if outside:
            found[module] = outside
    return found


def test_the_check_finds_a_seventh_strategy_named_outside_its_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A made-up package: a seventh strategy imported by its registry (allowed), by a sibling
    strategy (allowed here, the independence contract's business) and by a module outside
    (the one finding)."""
    root = tmp_path / "madeup"
    strategies = root / "compaction" / "strategies"
    strategies.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "compaction" / "__init__.py").write_text("")
    (strategies / "__init__.py").write_text("from madeup.compaction.strategies import seventh\n")
    (strategies / "seventh.py").write_text("")
    (strategies / "sixth.py").write_text("from madeup.compaction.strategies.seventh import *\n")
    (root / "session.py").write_text("import madeup.compaction.strategies.seventh\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("madeup", cache_dir=None)
    assert outside_importers(graph, "madeup.compaction.strategies") == {
        "madeup.compaction.strategies.seventh": {"madeup.session"}
    }


def test_no_module_outside_the_strategies_package_imports_a_strategy() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    assert outside_importers(graph, REGISTRY) == {}


def test_every_registered_strategy_lives_under_the_registry() -> None:
    """So the walk above covers each of them (the registry maps six names, StrategyName)."""
    modules = {STRATEGIES[name].__module__ for name in STRATEGIES}
    assert len(modules) == 6
    assert all(m.startswith(f"{REGISTRY}.") for m in modules), modules
