"""L2 obeys the tools' confinement: CODE_LAW.md may not pull a file from outside the workspace."""

from __future__ import annotations

import json
import os
from pathlib import Path

from engine.context.builder import ContextBuilder
from engine.models import History
from engine.settings.config import Settings

SYSTEM = "You are a coding agent."


def build(workspace: Path) -> tuple[str, int, list[str]]:
    builder = ContextBuilder(workspace, Settings(), [], SYSTEM)
    built = builder.build(History(), [], "hi", "")
    return json.dumps(built.request.system), built.layers["L2 CODE_LAW"], built.warnings


def test_a_code_law_symlink_to_a_file_outside_is_not_read(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    (workspace / "CODE_LAW.md").symlink_to(secret)
    system, tokens, warnings = build(workspace)
    assert "root:x:0:0" not in system
    assert tokens == 0
    assert any("outside the workspace" in w and "L2 left empty" in w for w in warnings)


def test_a_code_law_symlink_inside_the_workspace_is_read(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "docs").mkdir(parents=True)
    (workspace / "docs" / "rules.md").write_text("- tabs, never spaces\n")
    (workspace / "code_law.md").symlink_to(workspace / "docs" / "rules.md")
    system, tokens, warnings = build(workspace)
    assert "- tabs, never spaces" in system and tokens > 0 and warnings == []


def test_a_code_law_fifo_does_not_block_the_build(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "CODE_LAW.md").symlink_to(workspace / "law-pipe")
    os.mkfifo(workspace / "law-pipe")
    _, tokens, _ = build(workspace)
    assert tokens == 0
