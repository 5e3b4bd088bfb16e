"""Fixtures for the tool tests: a real workspace in tmp_path, a directory outside it, a
context whose policies allow everything (tests of the permission gate set their own), and
``call`` to run a tool through the registry as the agent does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.settings.config import Settings
from tools.base import ToolContext, ToolResult
from tools.registry import ToolRegistry, default_registry

Call = Callable[..., ToolResult]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace holding a secret no tool may reach."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("SECRET_TOKEN=hunter2\n")
    return out


@pytest.fixture
def settings() -> Settings:
    """Bash without the sandbox: these tests follow its processes by their host pids (the
    guard's path); tests/security covers the sandboxes."""
    return Settings(bash_policy="allow", edit_policy="allow", bash_sandbox="none")


@pytest.fixture
def ctx(workspace: Path, settings: Settings) -> ToolContext:
    return ToolContext(workspace=workspace, settings=settings)


@pytest.fixture
def registry() -> ToolRegistry:
    return default_registry()


@pytest.fixture
def call(registry: ToolRegistry, ctx: ToolContext) -> Call:
    def run(name: str, **arguments: Any) -> ToolResult:
        return registry.run(name, arguments, ctx)

    return run


@pytest.fixture
def files(workspace: Path) -> Callable[[str, str | bytes], Path]:
    """``files("a/b.txt", "text")`` creates a file (and its parents) in the workspace."""

    def make(rel: str, content: str | bytes) -> Path:
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return path

    return make
