"""Grep through ripgrep and through the pure-Python fallback: same data on the same tree."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from engine.settings.config import Settings
from tools.base import ToolContext, ToolResult
from tools.grep import GrepInput, GrepTool, find_rg

ENGINES = ["rg", "python"]


def grep(ctx: ToolContext, engine: str, **arguments: Any) -> ToolResult:
    return GrepTool(engine=engine).run(GrepInput(**arguments), ctx)  # type: ignore[arg-type]


@pytest.fixture
def tree(files: Any, workspace: Path, outside: Path) -> Path:
    """A tree with every case the two engines must agree on."""
    files(".gitignore", "build/\n*.log\n!keep.log\n/top_only.txt\nsub/deep.txt\n# comment\n")
    files("src/.gitignore", "generated_*\n!generated_keep.py\n/sub/skip.txt\ncache/\n")
    files("src/generated_keep.py", "MARK kept by negation\n")
    files("src/sub/skip.txt", "MARK anchored ignore\n")
    files("src/sub/deeper/skip.txt", "MARK not anchored here\n")
    files("src/sub/deeper/x.log", "MARK ignored by the root rule\n")
    files("src/sub/deeper/cache/c.txt", "MARK in an ignored directory\n")
    files("src/sub/deeper/.gitignore", "/own.txt\n")
    files("src/sub/deeper/own.txt", "MARK ignored by its own directory\n")
    files("src/app.py", "import os\nTODO: fix\nprint('todo later')\n")
    files("src/generated_api.py", "TODO: generated\n")
    files("src/sub/deep.txt", "TODO deep but not ignored (anchored rule is for /sub)\n")
    files("sub/deep.txt", "TODO ignored by anchored rule\n")
    files("top_only.txt", "TODO ignored at top\n")
    files("src/top_only.txt", "TODO kept below\n")
    files("build/out.txt", "TODO in build\n")
    files("debug.log", "TODO in log\n")
    files("keep.log", "TODO kept log\n")
    files(".hidden/conf.ini", "todo = hidden but searched\n")
    files(".git/config", "TODO inside .git\n")
    files("a-b/x.txt", "TODO a-b\n")
    files("a/x.txt", "TODO a\n")
    files("a.txt", "TODO a.txt\n")
    files("B.txt", "TODO upper\n")
    files("bin.dat", b"\x00\x01TODO binary\n")
    files("latin.txt", "caf\xe9 TODO\n".encode("latin-1"))
    files("crlf.txt", b"TODO crlf\r\nnone\r\nTODO again\r\n")
    files("bom.txt", b"\xef\xbb\xbfTODO bom\n")
    files("long.txt", "TODO " + "y" * 3000 + "\n")
    files("empty.txt", "")
    files("blank.txt", "a\n\nb\n\n")
    files("no_newline.txt", "last TODO")
    (workspace / "link_out").symlink_to(outside)
    (workspace / "link_in.txt").symlink_to(workspace / "a.txt")
    return workspace


QUERIES: list[dict[str, Any]] = [
    {"pattern": "TODO"},
    {"pattern": "todo", "case_insensitive": True},
    {"pattern": "TODO", "output_mode": "files_with_matches"},
    {"pattern": "TODO", "output_mode": "count"},
    {"pattern": "TODO", "path": "src"},
    {"pattern": "TODO", "path": "src/app.py"},
    {"pattern": "TODO", "path": "build"},
    {"pattern": "TODO", "glob": "*.txt"},
    {"pattern": "TODO", "glob": "src/**"},
    {"pattern": "TODO", "glob": "!src"},
    {"pattern": "TODO", "glob": "*.{py,log}"},
    {"pattern": "^TODO"},
    {"pattern": "TODO$"},
    {"pattern": "caf"},
    {"pattern": r"\bfix\b", "output_mode": "count"},
    {"pattern": "nothing-matches-this"},
    {"pattern": "MARK"},
    {"pattern": "MARK", "path": "src/sub"},
    {"pattern": "MARK", "path": "src/sub/deeper"},
    {"pattern": "MARK", "path": "src/sub/deeper/cache"},
    {"pattern": "MARK", "path": "src/sub/deeper", "glob": "*.log"},
    {"pattern": "^$", "output_mode": "count"},
    {"pattern": "^$", "path": "blank.txt"},
    {"pattern": r"none\s+TODO"},
    {"pattern": "z*", "path": "crlf.txt"},
    {"pattern": r"\d{2}"},
]


def test_ripgrep_is_available() -> None:
    rg = find_rg()
    assert rg is not None and os.access(rg, os.X_OK)


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: "-".join(map(str, q.values())))
def test_rg_and_python_give_the_same_data(tree: Path, ctx: ToolContext, query: dict) -> None:
    through_rg = grep(ctx, "rg", **query)
    through_python = grep(ctx, "python", **query)
    assert through_rg.stats["engine"] == "rg"
    assert through_python.stats["engine"] == "python"
    assert through_rg.ok and through_python.ok
    assert through_rg.data == through_python.data
    assert through_rg.text == through_python.text


def test_what_the_search_sees(tree: Path, ctx: ToolContext) -> None:
    """The semantics both engines share, spelled out on the content search."""
    for engine in ENGINES:
        data = grep(ctx, engine, pattern="TODO").data
        hits = [(m["file"], m["line"]) for m in data["matches"]]
        assert hits == [
            ("B.txt", 1),
            ("a/x.txt", 1),
            ("a-b/x.txt", 1),
            ("a.txt", 1),
            ("bom.txt", 1),
            ("crlf.txt", 1),
            ("crlf.txt", 3),
            ("keep.log", 1),
            ("latin.txt", 1),
            ("long.txt", 1),
            ("no_newline.txt", 1),
            ("src/app.py", 2),
            ("src/sub/deep.txt", 1),
            ("src/top_only.txt", 1),
        ], engine
        texts = {(m["file"], m["line"]): m["text"] for m in data["matches"]}
        assert texts["crlf.txt", 1] == "TODO crlf"
        texts = {m["file"]: m["text"] for m in data["matches"]}
        assert texts["bom.txt"] == "TODO bom"
        assert texts["latin.txt"] == "caf\ufffd TODO"
        assert texts["long.txt"].endswith("… [1005 chars cut]")
        assert data["total_matches"] == 14 and data["files_matched"] == 13


def test_nested_ignore_rules_apply_below_a_subdirectory(tree: Path, ctx: ToolContext) -> None:
    for engine in ENGINES:
        for path in (".", "src", "src/sub", "src/sub/deeper"):
            found = [
                m["file"] for m in grep(ctx, engine, pattern="MARK", path=path).data["matches"]
            ]
            assert found == [
                f
                for f in ("src/generated_keep.py", "src/sub/deeper/skip.txt")
                if f.startswith(path) or path == "."
            ], (engine, path)


def test_ignore_files_above_the_workspace_do_not_apply(
    workspace: Path, files: Any, ctx: ToolContext, call: Any
) -> None:
    (workspace.parent / ".gitignore").write_text("*\n")
    files("src/app.py", "MARK\n")
    for engine in ENGINES:
        for path in (".", "src"):
            result = grep(ctx, engine, pattern="MARK", path=path)
            assert [m["file"] for m in result.data["matches"]] == ["src/app.py"], (engine, path)
    assert call("Glob", pattern="**/*.py").data["matches"] == ["src/app.py"]


def test_case_insensitive_finds_more(tree: Path, ctx: ToolContext) -> None:
    data = grep(ctx, "rg", pattern="todo", case_insensitive=True).data
    files = {m["file"] for m in data["matches"]}
    assert ".hidden/conf.ini" in files
    assert ("src/app.py", 3) in {(m["file"], m["line"]) for m in data["matches"]}


def test_count_and_files_modes(tree: Path, ctx: ToolContext) -> None:
    counts = grep(ctx, "rg", pattern="TODO", output_mode="count").data
    assert {"file": "crlf.txt", "count": 2} in counts["counts"]
    assert counts["total_matches"] == 14 and counts["files_matched"] == 13
    files = grep(ctx, "rg", pattern="TODO", output_mode="files_with_matches").data
    assert files["files"][:3] == ["B.txt", "a/x.txt", "a-b/x.txt"]
    assert "total_matches" not in files and files["files_matched"] == 13


def test_explicit_binary_file_is_not_searched(tree: Path, ctx: ToolContext) -> None:
    for engine in ENGINES:
        result = grep(ctx, engine, pattern="TODO", path="bin.dat")
        assert result.ok and result.data["files_matched"] == 0
        assert result.text.startswith("bin.dat is a binary file; it was not searched.")


@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
def test_late_nul_byte_is_the_documented_difference(
    files: Any, ctx: ToolContext, mode: str
) -> None:
    """ripgrep reports matches before a NUL byte beyond its first buffer (with a warning line
    in its output, which must not break the parser); the fallback skips the file."""
    files("late.bin", b"TODO first\n" + b"x" * 200_000 + b"\n\x00\nTODO after\n")
    files("plain.txt", "TODO plain\n")
    through_rg = grep(ctx, "rg", pattern="TODO", output_mode=mode)
    through_python = grep(ctx, "python", pattern="TODO", output_mode=mode)
    assert through_rg.ok and through_python.ok
    assert through_python.data["files_matched"] == 1
    if mode == "content":
        assert [m["file"] for m in through_rg.data["matches"]] == ["late.bin", "plain.txt"]
    elif mode == "files_with_matches":
        assert through_rg.data["files"] == ["late.bin", "plain.txt"]
    else:
        assert through_rg.data["counts"][-1] == {"file": "plain.txt", "count": 1}


@pytest.mark.parametrize("engine", ENGINES)
def test_invalid_regex(tree: Path, ctx: ToolContext, engine: str) -> None:
    result = grep(ctx, engine, pattern="foo(")
    assert result.error is not None and result.error.code == "invalid_pattern"
    assert "'foo('" in result.error.message


def test_missing_path(ctx: ToolContext, call: Any) -> None:
    result = call("Grep", pattern="x", path="nope")
    assert result.error is not None and result.error.code == "not_found"


@pytest.mark.parametrize("engine", ENGINES)
def test_hundreds_of_hits_are_capped(files: Any, workspace: Path, engine: str) -> None:
    for i in range(40):
        files(f"pkg/mod{i:02}.py", "".join(f"x = {j}  # FIXME\n" for j in range(20)))
    ctx = ToolContext(workspace=workspace, settings=Settings(tool_max_results=50))
    result = grep(ctx, engine, pattern="FIXME")
    data = result.data
    assert data["total_matches"] == 800 and data["files_matched"] == 40
    assert data["shown"] == 50 and len(data["matches"]) == 50 and data["truncated"] is True
    assert data["matches"][-1] == {"file": "pkg/mod02.py", "line": 10, "text": "x = 9  # FIXME"}
    assert result.text.splitlines()[0] == "800 matching lines in 40 files for 'FIXME' in .:"
    assert result.text.endswith("[... 750 more not shown; narrow the search with path or glob]")


def test_many_files_both_engines(workspace: Path, ctx: ToolContext) -> None:
    """Parity and speed on a tree of 2 000 files (bench/bench_tools.py times 10 000)."""
    for d in range(40):
        folder = workspace / f"pkg{d:03}"
        folder.mkdir()
        for f in range(50):
            marker = "NEEDLE\n" if (d * 50 + f) % 97 == 0 else ""
            (folder / f"m{f:03}.py").write_text(f"def f{f}():\n    return {d}\n{marker}")
    timings = {}
    results = {}
    for engine in ENGINES:
        started = time.perf_counter()
        results[engine] = grep(ctx, engine, pattern="NEEDLE")
        timings[engine] = time.perf_counter() - started
    assert results["rg"].data == results["python"].data
    assert results["rg"].data["total_matches"] == 21
    assert results["rg"].data["matches"][1] == {
        "file": "pkg001/m047.py",
        "line": 3,
        "text": "NEEDLE",
    }
    assert timings["python"] < 5 and timings["rg"] < 5, timings
