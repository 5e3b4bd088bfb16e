"""Every committed picture belongs to a snapshot test that still exists.

syrupy fails a run that leaves a snapshot file unused (a test renamed or removed, its SVG
left behind), but not under pytest-xdist, which ``make test`` uses: its workers each see part
of the tests, so it skips the check. This test makes it without running the pictures: each
``__snapshots__/<module>/<test>[<id>].svg`` names a test function of ``<module>.py``, and a
parametrised picture's id is one its ``parametrize`` gives.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

HERE = Path(__file__).parent
SNAPSHOTS = HERE / "__snapshots__"
NAME = re.compile(r"(?P<test>\w+)(\[(?P<id>[^\]]+)\])?\.svg")


def _tests_of(module: Path) -> dict[str, str]:
    """The module's test functions by name, each with the source of its decorators (where
    ``parametrize`` gives the ids)."""
    text = module.read_text(encoding="utf-8")
    tree = ast.parse(text)
    return {
        node.name: " ".join(ast.get_source_segment(text, d) or "" for d in node.decorator_list)
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def test_every_snapshot_file_has_its_test() -> None:
    svgs = sorted(SNAPSHOTS.glob("*/*.svg"))
    assert svgs, "no snapshots found"
    orphans = []
    for svg in svgs:
        module = HERE / f"{svg.parent.name}.py"
        match = NAME.fullmatch(svg.name)
        assert match is not None, svg
        tests = _tests_of(module) if module.exists() else {}
        decorators = tests.get(match["test"])
        if decorators is None:
            orphans.append(f"{svg.relative_to(HERE)}: no {match['test']} in {module.name}")
        elif match["id"] is not None and f'"{match["id"]}"' not in decorators:
            orphans.append(f"{svg.relative_to(HERE)}: {match['test']} gives no id {match['id']!r}")
    assert orphans == []
