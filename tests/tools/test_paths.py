"""Confinement: no tool reaches outside the workspace, by ``..``, absolute paths or symlinks,
and directory walks never follow a symlink out."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tools.base import ToolContext
from tools.common import ToolFailure
from tools.grep import GrepInput, GrepTool
from tools.paths import display_path, resolve_path

# Every tool that takes a path, with the arguments that aim it at ``target``.
PATH_CALLS: dict[str, Any] = {
    "LS": lambda target: {"path": target},
    "Glob": lambda target: {"pattern": "**/*", "path": target},
    "Grep": lambda target: {"pattern": "SECRET", "path": target},
    "Read": lambda target: {"file_path": target},
    "Edit": lambda target: {"file_path": target, "old_string": "SECRET", "new_string": "x"},
    "MultiEdit": lambda target: {
        "file_path": target,
        "edits": [{"old_string": "SECRET", "new_string": "x"}],
    },
    "Write": lambda target: {"file_path": target, "content": "pwned\n"},
}
DIR_TOOLS = {"LS", "Glob", "Grep"}


def escapes(workspace: Path, outside: Path, tool: str) -> dict[str, str]:
    """The ways out, each aimed at the secret file or the outside directory."""
    (workspace / "link_file").symlink_to(outside / "secret.txt")
    (workspace / "link_dir").symlink_to(outside)
    (workspace / "dangling").symlink_to(outside / "not_yet.txt")
    want_dir = tool in DIR_TOOLS
    return {
        "dotdot": "../outside" if want_dir else "../outside/secret.txt",
        "dotdot_inside_first": "sub/../../outside" + ("" if want_dir else "/secret.txt"),
        "absolute": str(outside if want_dir else outside / "secret.txt"),
        "symlink": "link_dir" if want_dir else "link_file",
        "through_symlinked_dir": "link_dir/." if want_dir else "link_dir/secret.txt",
        "dangling_symlink": "dangling",
    }


@pytest.mark.parametrize("tool", list(PATH_CALLS))
@pytest.mark.parametrize(
    "way",
    [
        "dotdot",
        "dotdot_inside_first",
        "absolute",
        "symlink",
        "through_symlinked_dir",
        "dangling_symlink",
    ],
)
def test_every_escape_is_refused(
    tool: str, way: str, call: Any, ctx: ToolContext, workspace: Path, outside: Path
) -> None:
    (workspace / "sub").mkdir()
    target = escapes(workspace, outside, tool)[way]
    ctx.mtimes[str(outside / "secret.txt")] = (outside / "secret.txt").stat().st_mtime
    result = call(tool, **PATH_CALLS[tool](target))
    assert result.status == "error"
    assert result.error is not None and result.error.code == "path_outside_workspace"
    assert "outside the workspace" in result.error.message
    assert "hunter2" not in result.text
    assert (outside / "secret.txt").read_text() == "SECRET_TOKEN=hunter2\n"
    assert not (outside / "not_yet.txt").exists()


def test_bash_runs_in_the_workspace(call: Any, workspace: Path) -> None:
    result = call("Bash", command="pwd")
    assert result.data["stdout"].strip() == str(workspace.resolve())


def test_walks_do_not_follow_symlinks_out(
    call: Any, ctx: ToolContext, workspace: Path, outside: Path, files: Any
) -> None:
    files("inside.txt", "SECRET here too\n")
    (workspace / "link_dir").symlink_to(outside)
    (workspace / "link_file").symlink_to(outside / "secret.txt")

    grep = call("Grep", pattern="SECRET")
    assert [m["file"] for m in grep.data["matches"]] == ["inside.txt"]
    assert grep.stats["engine"] == "rg"
    python = GrepTool(engine="python").run(GrepInput(pattern="SECRET"), ctx)
    assert python.stats["engine"] == "python"
    assert [m["file"] for m in python.data["matches"]] == ["inside.txt"]

    glob = call("Glob", pattern="**/*")
    assert glob.data["matches"] == ["inside.txt"]

    ls = call("LS")
    entries = {e["name"]: e for e in ls.data["entries"]}
    assert entries["link_dir"]["type"] == "symlink"
    assert entries["link_dir"]["target"] is None
    assert entries["link_file"]["target"] is None
    assert "hunter2" not in ls.text and "secret.txt" not in ls.text


def test_symlinks_inside_the_workspace_are_fine(call: Any, workspace: Path, files: Any) -> None:
    files("real/a.txt", "hello\n")
    (workspace / "alias.txt").symlink_to(workspace / "real" / "a.txt")
    result = call("Read", file_path="alias.txt")
    assert result.ok
    assert result.data["file"] == "real/a.txt"
    ls = call("LS")
    alias = next(e for e in ls.data["entries"] if e["name"] == "alias.txt")
    assert alias["target"] == "real/a.txt"


def test_resolve_path_accepts_inside_forms(ctx: ToolContext, workspace: Path) -> None:
    root = workspace.resolve()
    assert resolve_path(ctx, ".") == root
    assert resolve_path(ctx, "a/../b.txt") == root / "b.txt"
    assert resolve_path(ctx, str(root / "c" / "d.txt")) == root / "c" / "d.txt"
    assert display_path(ctx, root / "c" / "d.txt") == "c/d.txt"
    assert display_path(ctx, root) == "."


@pytest.mark.parametrize("raw", ["", "   ", "a\0b"])
def test_resolve_path_refuses_unusable_paths(ctx: ToolContext, raw: str) -> None:
    with pytest.raises(ToolFailure) as info:
        resolve_path(ctx, raw)
    assert info.value.code == "invalid_path"


def test_workspace_given_through_a_symlink(tmp_path: Path, settings: Any) -> None:
    real = tmp_path / "real_ws"
    real.mkdir()
    (tmp_path / "ws_link").symlink_to(real)
    ctx = ToolContext(workspace=tmp_path / "ws_link", settings=settings)
    assert resolve_path(ctx, "x.txt") == real / "x.txt"
    with pytest.raises(ToolFailure):
        resolve_path(ctx, os.fspath(tmp_path / "elsewhere.txt"))
