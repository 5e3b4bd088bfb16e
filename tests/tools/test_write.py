"""Write: create, overwrite after Read, atomicity, modes."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tools.base import ToolContext


def test_creates_a_file_and_its_parents(call: Any, workspace: Path, ctx: ToolContext) -> None:
    content = "".join(f"line {i}\n" for i in range(1, 81))
    result = call("Write", file_path="pkg/sub/new.py", content=content)
    assert result.ok, result.text
    path = workspace / "pkg" / "sub" / "new.py"
    assert path.read_text() == content
    data = result.data
    assert data["file"] == "pkg/sub/new.py"
    assert data["action"] == "created"
    assert (data["lines"], data["bytes"]) == (80, len(content.encode()))
    assert data["head"].splitlines() == [f"line {i}" for i in range(1, 51)]
    assert "diff" not in data
    assert result.text == f"Created pkg/sub/new.py (80 lines, {len(content)} bytes)."
    assert ctx.mtimes[str(path.resolve())] == path.stat().st_mtime
    mode = stat.S_IMODE(path.stat().st_mode)
    assert mode & 0o600 == 0o600 and not mode & 0o111


def test_overwrite_needs_a_read(call: Any, files: Any) -> None:
    path = files("config.toml", "a = 1\n")
    refused = call("Write", file_path="config.toml", content="a = 2\n")
    assert refused.error is not None and refused.error.code == "not_read"
    assert path.read_text() == "a = 1\n"

    call("Read", file_path="config.toml")
    result = call("Write", file_path="config.toml", content="a = 2\nb = 3\n")
    assert result.ok
    assert path.read_text() == "a = 2\nb = 3\n"
    assert result.data["action"] == "overwritten"
    assert result.data["changed_ranges"] == ["L1-2 (+2 -1)"]
    assert result.data["diff"].splitlines()[-3:] == ["-a = 1", "+a = 2", "+b = 3"]
    assert result.text == "Overwrote config.toml (2 lines, 12 bytes): L1-2 (+2 -1)."
    again = call("Write", file_path="config.toml", content="c = 4\n")
    assert again.ok, "a write refreshes the mtime map, so the next write is allowed"


def test_overwrite_refused_after_external_change(call: Any, files: Any) -> None:
    path = files("a.txt", "v1\n")
    call("Read", file_path="a.txt")
    path.write_text("v2\n")
    os.utime(path, (0, path.stat().st_mtime + 7))
    result = call("Write", file_path="a.txt", content="mine\n")
    assert result.error is not None and result.error.code == "modified_since_read"
    assert path.read_text() == "v2\n"


def test_overwrite_keeps_mode_and_line_endings(call: Any, files: Any) -> None:
    path = files("run.sh", b"#!/bin/sh\r\necho hi\r\n")
    path.chmod(0o755)
    call("Read", file_path="run.sh")
    assert call("Write", file_path="run.sh", content="#!/bin/sh\necho bye\n").ok
    assert path.read_bytes() == b"#!/bin/sh\r\necho bye\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


def test_write_is_atomic(
    call: Any, files: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = files("data.json", '{"keep": true}\n')
    call("Read", file_path="data.json")

    def broken_replace(src: str, dst: str, **dir_fds: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    result = call("Write", file_path="data.json", content='{"keep": false}\n')
    assert result.error is not None and result.error.code == "write_failed"
    assert "No space left on device" in result.error.message
    assert "left unchanged" in result.error.message
    assert path.read_text() == '{"keep": true}\n'
    assert sorted(p.name for p in workspace.iterdir()) == ["data.json"]

    new = call("Write", file_path="fresh.txt", content="x\n")
    assert new.error is not None and new.error.code == "write_failed"
    assert sorted(p.name for p in workspace.iterdir()) == ["data.json"]


def test_write_refuses_a_directory(call: Any, workspace: Path) -> None:
    (workspace / "dir").mkdir()
    result = call("Write", file_path="dir", content="x")
    assert result.error is not None and result.error.code == "is_a_directory"


def test_write_empty_file(call: Any, workspace: Path) -> None:
    result = call("Write", file_path="empty.txt", content="")
    assert result.ok
    assert (workspace / "empty.txt").read_bytes() == b""
    assert result.data["lines"] == 0 and result.data["head"] == ""
