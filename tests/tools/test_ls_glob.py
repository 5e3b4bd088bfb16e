"""LS and Glob on real trees: order, counts, caps, ``**``, mtime order, ignores."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from engine.settings.config import Settings
from tools.base import ToolContext
from tools.registry import default_registry


def test_ls_lists_dirs_first_with_sizes(call: Any, files: Any, workspace: Path) -> None:
    files("b.txt", "12345")
    files("a.py", "")
    files("zdir/x", "x")
    files("adir/y", "y")
    files(".env", "K=V\n")
    result = call("LS")
    assert result.ok
    data = result.data
    assert [e["name"] for e in data["entries"]] == ["adir", "zdir", ".env", "a.py", "b.txt"]
    assert data["entries"][4] == {"name": "b.txt", "type": "file", "size": 5}
    assert (data["total"], data["dirs"], data["files"], data["symlinks"]) == (5, 2, 3, 0)
    assert data["truncated"] is False
    assert result.text.splitlines()[:3] == ["./ — 2 directories, 3 files", "  adir/", "  zdir/"]


def test_ls_subdirectory_and_cap(files: Any, workspace: Path) -> None:
    for i in range(30):
        files(f"many/f{i:02}.txt", "x")
    ctx = ToolContext(workspace=workspace, settings=Settings(tool_max_results=10))
    result = default_registry().run("LS", {"path": "many"}, ctx)
    assert result.data["path"] == "many"
    assert result.data["total"] == 30 and result.data["shown"] == 10
    assert result.data["truncated"] is True
    assert [e["name"] for e in result.data["entries"]][-1] == "f09.txt"
    assert result.text.endswith("[... 20 more entries not shown]")


def test_ls_errors(call: Any, files: Any) -> None:
    files("f.txt", "x")
    missing = call("LS", path="nope")
    assert missing.error is not None and missing.error.code == "not_found"
    not_dir = call("LS", path="f.txt")
    assert not_dir.error is not None and not_dir.error.code == "not_a_directory"


def test_ls_empty_directory(call: Any, workspace: Path) -> None:
    (workspace / "empty").mkdir()
    result = call("LS", path="empty")
    assert result.data["total"] == 0 and result.data["entries"] == []
    assert "(empty directory)" in result.text


def _touch(path: Path, mtime: float) -> None:
    os.utime(path, (mtime, mtime))


def test_glob_double_star_and_mtime_order(call: Any, files: Any) -> None:
    _touch(files("old.py", ""), 1_000)
    _touch(files("src/new.py", ""), 3_000)
    _touch(files("src/pkg/deep/mid.py", ""), 2_000)
    files("src/readme.md", "")
    result = call("Glob", pattern="**/*.py")
    assert result.data["matches"] == ["src/new.py", "src/pkg/deep/mid.py", "old.py"]
    assert result.data["total"] == 3 and result.data["truncated"] is False
    assert result.text.splitlines()[0] == "3 files match '**/*.py' in . (newest first):"


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", ".", ["top.py"]),
        ("src/*.py", ".", ["src/a.py"]),
        ("src/**/*.py", ".", ["src/a.py", "src/sub/b.py"]),
        ("**/b.py", ".", ["src/sub/b.py"]),
        ("*.py", "src", ["src/a.py"]),
        ("**", "src/sub", ["src/sub/b.py", "src/sub/c.txt"]),
        ("**/*.{py,txt}", "src", ["src/a.py", "src/sub/b.py", "src/sub/c.txt"]),
        ("src/sub/?.py", ".", ["src/sub/b.py"]),
        ("[st]*.py", ".", ["top.py"]),
        ("./top.py", ".", ["top.py"]),
    ],
)
def test_glob_patterns(call: Any, files: Any, pattern: str, path: str, expected: list[str]) -> None:
    for i, rel in enumerate(["top.py", "src/a.py", "src/sub/b.py", "src/sub/c.txt"]):
        _touch(files(rel, ""), 10_000 - i)
    result = call("Glob", pattern=pattern, path=path)
    assert result.ok, result.text
    assert result.data["matches"] == expected


def test_glob_skips_gitignored_and_git(call: Any, files: Any) -> None:
    files(".gitignore", "build/\n*.log\n")
    files("build/out.py", "")
    files("src/app.py", "")
    files("src/debug.log", "")
    files(".git/hooks/pre-commit.py", "")
    files(".github/ci.py", "")
    result = call("Glob", pattern="**/*")
    assert sorted(result.data["matches"]) == [".github/ci.py", ".gitignore", "src/app.py"]
    assert call("Glob", pattern="build/**/*.py").data["matches"] == []


def test_glob_cap_and_errors(files: Any, workspace: Path) -> None:
    for i in range(25):
        files(f"d/f{i}.txt", "")
    ctx = ToolContext(workspace=workspace, settings=Settings(tool_max_results=5))
    registry = default_registry()
    capped = registry.run("Glob", {"pattern": "d/*.txt"}, ctx)
    assert capped.data["total"] == 25 and len(capped.data["matches"]) == 5
    assert capped.data["truncated"] is True and "20 more not shown" in capped.text
    none = registry.run("Glob", {"pattern": "*.rs"}, ctx)
    assert none.ok and none.data["total"] == 0 and "No files match" in none.text
    parent = registry.run("Glob", {"pattern": "../*"}, ctx)
    assert parent.error is not None and parent.error.code == "invalid_pattern"
    missing = registry.run("Glob", {"pattern": "*", "path": "nope"}, ctx)
    assert missing.error is not None and missing.error.code == "not_found"
