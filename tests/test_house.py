"""The house's shape, checked (docs/development.md#the-houses-rules): objects made of parts, not of
long inheritance chains, and no import circle between ctxscope's modules.

- **No chain of the project's own classes deeper than 3**: for every class defined in ``cli``,
  ``engine``, ``tools``, ``prompts`` or ``tui``, the classes of its MRO that are ctxscope's own
  (Textual's, pydantic's, peewee's and the standard library's do not count) number at most 3.
- **No import circle between modules at runtime**: the import graph grimp builds (as
  import-linter does), imports under ``if TYPE_CHECKING:`` left out, has no strongly connected
  component of more than one module. An import inside a function counts: it runs.

A violation in code this pass could not change is listed below as a named, dated exception
with its reason; a test fails when an exception is no longer needed, so the list only shrinks.

- **No function over 120 lines** (decorators and docstring included), measured with :mod:`ast`;
  ``python tests/test_house.py [LIMIT]`` prints the functions over a limit, longest first.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cli", "engine", "tools", "prompts", "tui")
MAX_CHAIN = 3
MAX_FUNCTION_LINES = 120

CHAIN_EXCEPTIONS: dict[str, str] = {}
"""Classes whose chain is over :data:`MAX_CHAIN`, by qualified name, with why (to remove)."""

CIRCLE_EXCEPTIONS: dict[frozenset[str], str] = {}
"""Import circles left, by their modules, with why (to remove)."""

LONG_FUNCTION_EXCEPTIONS: dict[str, str] = {}
"""Functions over :data:`MAX_FUNCTION_LINES`, by ``path name``, with why (to remove)."""


def project_chain(cls: type, packages: Iterable[str] = PACKAGES) -> list[type]:
    """The classes of ``cls``'s MRO defined in ``packages`` (itself first)."""
    roots = tuple(packages)
    return [k for k in cls.__mro__ if k.__module__.split(".")[0] in roots]


def long_chains(
    modules: Iterable[str], packages: Iterable[str] = PACKAGES, limit: int = MAX_CHAIN
) -> dict[str, int]:
    """Every class defined in ``modules`` whose project chain is longer than ``limit``."""
    out: dict[str, int] = {}
    for name in modules:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__ == name:
                chain = project_chain(value, packages)
                if len(chain) > limit:
                    out[f"{name}.{value.__qualname__}"] = len(chain)
    return out


def circles(imports: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module of ``imports`` (module →
    the modules it imports), by Tarjan's algorithm, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[frozenset[str]] = []
    for start in sorted(imports):
        if start in index:
            continue
        work = [(start, iter(sorted(imports.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(imports.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def runtime_imports() -> dict[str, set[str]]:
    """ctxscope's modules and what each imports of ctxscope when it runs."""
    graph = grimp.build_graph(*PACKAGES, cache_dir=None, exclude_type_checking_imports=True)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def long_functions(
    folders: Iterable[Path], limit: int = MAX_FUNCTION_LINES, base: Path = ROOT
) -> list[tuple[str, int]]:
    """``path:line name`` and length of every function over ``limit`` lines (decorators and
    docstring included), longest first."""
    out: list[tuple[str, int]] = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    length = (node.end_lineno or node.lineno) - first + 1
                    if length > limit:
                        where = f"{path.relative_to(base)}:{node.lineno} {node.name}"
                        out.append((where, length))
    return sorted(out, key=lambda item: -item[1])


@pytest.fixture(scope="module")
def imports() -> dict[str, set[str]]:
    return runtime_imports()


# The checks, checked on made-up examples first: each can fail.


class _A:
    pass


class _B(_A):
    pass


class _C(_B):
    pass


class _D(_C):
    pass


class _Mixed(_B, dict):  # type: ignore[type-arg]
    pass


def test_a_chain_counts_only_the_projects_classes() -> None:
    """_D's MRO is _D, _C, _B, _A, object: four of the tests' own; _Mixed's adds dict and
    object, which are not."""
    assert project_chain(_D, ["tests"]) == [_D, _C, _B, _A]
    assert project_chain(_Mixed, ["tests"]) == [_Mixed, _B, _A]
    assert long_chains([__name__], ["tests"]) == {f"{__name__}._D": 4}


def test_a_circle_is_found_however_long() -> None:
    imports = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert circles(imports) == [frozenset({"a", "b", "c"})]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_a_long_function_is_measured(tmp_path: Path) -> None:
    """A 2-line decorator, a def line and 120 body lines: 123 lines; a def line and 119 body
    lines, 120, is not over the limit."""
    body = "".join(f"    x{i} = {i}\n" for i in range(120))
    short = "".join(f"    y{i} = {i}\n" for i in range(119))
    (tmp_path / "long.py").write_text(f"@a\n@b\ndef long():\n{body}\n\ndef short():\n{short}")
    assert long_functions([tmp_path], base=tmp_path) == [("long.py:3 long", 123)]


# The house.


def test_no_chain_of_project_classes_is_deeper_than_three(imports: dict[str, set[str]]) -> None:
    found = long_chains(sorted(imports))
    new = {name: depth for name, depth in found.items() if name not in CHAIN_EXCEPTIONS}
    assert new == {}, "compose parts instead of inheriting them (docs/development.md)"
    gone = sorted(set(CHAIN_EXCEPTIONS) - set(found))
    assert gone == [], "no longer too deep: remove from CHAIN_EXCEPTIONS"


def test_no_import_circle_between_modules(imports: dict[str, set[str]]) -> None:
    found = set(circles(imports))
    assert found - set(CIRCLE_EXCEPTIONS) == set()
    assert set(CIRCLE_EXCEPTIONS) - found == set(), "gone: remove from CIRCLE_EXCEPTIONS"


def test_the_import_graph_is_the_projects() -> None:
    """The graph really holds the modules and imports the checks walk (a graph of nothing
    would have no circle): the agent imports its parts, the parts their core."""
    imports = runtime_imports()
    assert {"engine.session.core", "engine.session.loop"} <= imports["engine.session.agent"]
    assert "engine.session.core" in imports["engine.session.writer"]
    assert len(imports) > 200


def test_no_function_is_longer_than_120_lines() -> None:
    """Issue 43: a function a reader can hold in their head; the parser is built from each
    command module's own parsers, Bash's call is its named steps."""
    found = {
        f"{where.split(':')[0]} {where.split()[-1]}": length
        for where, length in long_functions([ROOT / p for p in PACKAGES])
    }
    new = {name: n for name, n in found.items() if name not in LONG_FUNCTION_EXCEPTIONS}
    assert new == {}, "split it into named steps (docs/development.md)"
    gone = sorted(set(LONG_FUNCTION_EXCEPTIONS) - set(found))
    assert gone == [], "no longer too long: remove from LONG_FUNCTION_EXCEPTIONS"


MAX_ROOT_MODULES = 5


def test_the_engines_root_keeps_at_most_five_shared_modules() -> None:
    """Issue 43: the engine's root holds at most five shared modules (``__init__`` aside);
    everything else lives in the folder named for what it does (settings in
    ``engine/settings/``, prices with the figures they make)."""
    root = sorted(p.stem for p in (ROOT / "engine").glob("*.py") if p.stem != "__init__")
    assert len(root) <= MAX_ROOT_MODULES, root
    assert not (ROOT / "engine" / "config.py").exists()
    assert (ROOT / "engine" / "settings" / "config.py").exists()


if __name__ == "__main__":
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else MAX_FUNCTION_LINES
    offenders = long_functions([ROOT / p for p in PACKAGES], limit)
    for where, length in offenders:
        print(f"{length:4d}  {where}")
    print(f"{len(offenders)} functions over {limit} lines")
