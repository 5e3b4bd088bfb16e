"""The permission gate of Bash and the file tools: allow, deny, ask (once, always, no)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.settings.config import Settings
from tools.base import PermissionAnswer, PermissionRequest, ToolContext
from tools.registry import default_registry


def make_ctx(workspace: Path, answers: list[PermissionAnswer] | None, **policies: Any) -> Any:
    asked: list[PermissionRequest] = []
    ctx = ToolContext(workspace=workspace, settings=Settings(**policies))
    if answers is not None:

        def ask(request: PermissionRequest) -> PermissionAnswer:
            asked.append(request)
            return answers.pop(0)

        ctx.ask = ask
    return ctx, asked


def test_bash_deny_policy(workspace: Path) -> None:
    ctx, asked = make_ctx(workspace, ["allow"], bash_policy="deny")
    result = default_registry().run("Bash", {"command": "touch ran"}, ctx)
    assert result.error is not None and result.error.code == "permission_denied"
    assert "bash_policy" in result.error.message
    assert asked == [] and not (workspace / "ran").exists()


def test_bash_ask_without_anyone_to_ask(workspace: Path) -> None:
    ctx, _ = make_ctx(workspace, None, bash_policy="ask")
    result = default_registry().run("Bash", {"command": "touch ran"}, ctx)
    assert result.error is not None and result.error.code == "permission_denied"
    assert "no one to ask" in result.error.message
    assert "--allow-bash" in result.error.message
    assert not (workspace / "ran").exists()


def test_bash_ask_allow_once_then_deny(workspace: Path) -> None:
    ctx, asked = make_ctx(workspace, ["allow", "deny"], bash_policy="ask")
    registry = default_registry()
    first = registry.run(
        "Bash", {"command": "touch once && echo done", "description": "Touch a file"}, ctx
    )
    assert first.ok and (workspace / "once").exists()
    assert asked[0] == PermissionRequest(
        tool_name="Bash",
        kind="bash",
        summary="touch once && echo done — Touch a file",
        detail="touch once && echo done",
    )
    second = registry.run("Bash", {"command": "touch twice"}, ctx)
    assert second.error is not None and second.error.code == "permission_denied"
    assert "denied" in second.error.message
    assert asked[1].summary == "touch twice"
    assert not (workspace / "twice").exists()
    assert ctx.always_allowed == set()


def test_always_is_remembered_per_kind(workspace: Path) -> None:
    ctx, asked = make_ctx(workspace, ["always", "deny"], bash_policy="ask", edit_policy="ask")
    registry = default_registry()
    assert registry.run("Bash", {"command": "true"}, ctx).ok
    assert registry.run("Bash", {"command": "true"}, ctx).ok
    assert len(asked) == 1 and ctx.always_allowed == {"bash"}
    write = registry.run("Write", {"file_path": "a.txt", "content": "x"}, ctx)
    assert write.error is not None and write.error.code == "permission_denied"
    assert len(asked) == 2 and asked[1].kind == "edit"


def test_edit_asks_with_the_diff(workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    ctx, asked = make_ctx(workspace, ["deny", "allow"], edit_policy="ask")
    registry = default_registry()
    registry.run("Read", {"file_path": "a.py"}, ctx)
    args = {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
    denied = registry.run("Edit", args, ctx)
    assert denied.error is not None and denied.error.code == "permission_denied"
    assert (workspace / "a.py").read_text() == "x = 1\n"
    request = asked[0]
    assert (request.tool_name, request.kind, request.summary) == ("Edit", "edit", "Edit a.py")
    assert request.detail.splitlines()[-2:] == ["-x = 1", "+x = 2"]
    assert registry.run("Edit", args, ctx).ok
    assert (workspace / "a.py").read_text() == "x = 2\n"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("Write", {"file_path": "new.txt", "content": "hello\n"}),
        ("Edit", {"file_path": "old.txt", "old_string": "a", "new_string": "b"}),
        ("MultiEdit", {"file_path": "old.txt", "edits": [{"old_string": "a", "new_string": "b"}]}),
    ],
)
def test_file_tools_respect_deny(workspace: Path, tool: str, arguments: dict) -> None:
    (workspace / "old.txt").write_text("a\n")
    ctx, asked = make_ctx(workspace, None, edit_policy="deny")
    registry = default_registry()
    registry.run("Read", {"file_path": "old.txt"}, ctx)
    result = registry.run(tool, arguments, ctx)
    assert result.error is not None and result.error.code == "permission_denied"
    assert "edit_policy" in result.error.message
    assert (workspace / "old.txt").read_text() == "a\n"
    assert not (workspace / "new.txt").exists()


def test_write_of_a_new_file_asks_with_its_content(workspace: Path) -> None:
    ctx, asked = make_ctx(workspace, ["allow"], edit_policy="ask")
    assert default_registry().run("Write", {"file_path": "n.txt", "content": "hi\n"}, ctx).ok
    assert asked[0].summary == "Create n.txt"
    assert asked[0].detail.splitlines() == ["--- a/n.txt", "+++ b/n.txt", "@@ -0,0 +1 @@", "+hi"]
