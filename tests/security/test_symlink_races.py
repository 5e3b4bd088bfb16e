"""Check-then-use races: a flipper thread swaps a workspace name for a symlink to the outside
while Read, Grep, Edit and the CODE_LAW loader run, thousands of times.

A leak is the outside secret anywhere in a result (text or data), in the workspace file an
Edit wrote, or in the CODE_LAW text. Each test also asserts that both outcomes happened —
calls that read the real file and calls refused because the name was a link at that moment —
so the race was really run, not avoided by timing. Before the confined open (issue 21) the
same attack leaked Read 451 / 4 000, Grep 10 / 666, Edit 9 / 3 000, CODE_LAW 90 / 370.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
from pathlib import Path

from engine.context.code_law import NotReadable, read_workspace_text
from engine.settings.config import Settings
from tests.security.conftest import SECRET, Flipper
from tools.base import Fingerprint, ToolContext, ToolResult
from tools.grep import Engine, GrepTool
from tools.registry import ToolRegistry, default_registry

TRIALS = 1000
"""Per test and name flipped; each tool meets ≥ 2 000 trials over its tests."""


def _context(workspace: Path) -> ToolContext:
    return ToolContext(
        workspace=workspace, settings=Settings(bash_policy="allow", edit_policy="allow")
    )


def _leaks(result: ToolResult) -> bool:
    return SECRET in result.text or SECRET in json.dumps(result.data)


def _outcome(result: ToolResult) -> str:
    return result.status if result.error is None else result.error.code


def test_read_under_a_flipping_directory(workspace: Path, flip_dir: Flipper) -> None:
    registry, ctx = default_registry(), _context(workspace)
    outcomes: collections.Counter[str] = collections.Counter()
    leaks = 0
    for _ in range(TRIALS):
        result = registry.run("Read", {"file_path": "d/f.txt"}, ctx)
        leaks += _leaks(result)
        outcomes[_outcome(result)] += 1
    assert leaks == 0
    assert outcomes["internal_error"] == 0
    assert outcomes["success"] > 0 and outcomes["path_outside_workspace"] > 0, outcomes


def test_read_under_a_flipping_file(workspace: Path, flip_file: Flipper) -> None:
    registry, ctx = default_registry(), _context(workspace)
    outcomes: collections.Counter[str] = collections.Counter()
    leaks = 0
    for _ in range(TRIALS):
        result = registry.run("Read", {"file_path": "f.txt"}, ctx)
        leaks += _leaks(result)
        outcomes[_outcome(result)] += 1
    assert leaks == 0
    assert outcomes["internal_error"] == 0
    assert outcomes["success"] > 0 and outcomes["path_outside_workspace"] > 0, outcomes


def _grep(
    workspace: Path, engine: Engine, path: str, until: tuple[str, ...] = ()
) -> tuple[int, collections.Counter[str]]:
    """:data:`TRIALS` Greps, and more (up to ten times as many) until each outcome named in
    ``until`` has happened: on a loaded machine the flipper may not get a core among the
    first thousand."""
    registry, ctx = ToolRegistry([GrepTool(engine=engine)]), _context(workspace)
    outcomes: collections.Counter[str] = collections.Counter()
    leaks = 0
    trial = 0
    while trial < TRIALS or (trial < 10 * TRIALS and not all(outcomes[o] for o in until)):
        trial += 1
        result = registry.run("Grep", {"pattern": "alpha", "path": path}, ctx)
        leaks += _leaks(result)
        if result.error is not None:
            outcomes[result.error.code] += 1
        else:
            outcomes["found" if result.data["files_matched"] else "none"] += 1
    return leaks, outcomes


def test_grep_python_walk_under_a_flipping_directory(workspace: Path, flip_dir: Flipper) -> None:
    leaks, outcomes = _grep(workspace, "python", ".", until=("found", "none"))
    assert leaks == 0
    assert outcomes["internal_error"] == 0
    assert outcomes["found"] > 0 and outcomes["none"] > 0, outcomes


def test_grep_ripgrep_under_a_flipping_directory(workspace: Path, flip_dir: Flipper) -> None:
    """ripgrep walks by name: what it finds is confirmed through the confined open."""
    leaks, outcomes = _grep(workspace, "rg", ".")
    assert leaks == 0
    assert outcomes["internal_error"] == 0
    assert outcomes["found"] > 0, outcomes


def test_grep_ripgrep_on_a_flipping_file(workspace: Path, flip_file: Flipper) -> None:
    leaks, outcomes = _grep(workspace, "rg", "f.txt")
    assert leaks == 0
    assert outcomes["internal_error"] == 0
    assert outcomes["found"] > 0, outcomes


def _real_state(dir_fd: int) -> tuple[bytes, Fingerprint]:
    """The content and fingerprint of ``f.txt`` in the real directory (by descriptor)."""
    fd = os.open("f.txt", os.O_RDONLY, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        data = os.read(fd, 1 << 16)
    finally:
        os.close(fd)
    return data, Fingerprint(st.st_mtime, st.st_size, hashlib.sha256(data).hexdigest())


def test_edit_under_a_flipping_directory(workspace: Path, outside: Path) -> None:
    """Each trial swaps alpha/beta in ``d/f.txt``, its freshness record set from the real
    file (reached through a descriptor of the real directory, whatever its name is at the
    moment); the outside file also starts with ``alpha``, so an Edit that followed the link
    would succeed there."""
    real = workspace / "d"
    real.mkdir()
    (real / "f.txt").write_text("alpha public\n")
    spare = workspace / ".d-spare"
    spare.symlink_to(outside)
    registry, ctx = default_registry(), _context(workspace)
    key = str(workspace / "d" / "f.txt")
    outside_before = (outside / "f.txt").read_bytes()
    real_fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY)
    outcomes: collections.Counter[str] = collections.Counter()
    leaks = 0
    try:
        with Flipper(real, spare):
            for _ in range(2 * TRIALS):
                data, fingerprint = _real_state(real_fd)
                ctx.mtimes[key] = fingerprint.mtime
                ctx.fingerprints[key] = fingerprint
                old, new = ("alpha", "beta") if data.startswith(b"alpha") else ("beta", "alpha")
                arguments = {"file_path": "d/f.txt", "old_string": old, "new_string": new}
                result = registry.run("Edit", arguments, ctx)
                leaks += _leaks(result) + (SECRET.encode() in _real_state(real_fd)[0])
                outcomes[_outcome(result)] += 1
    finally:
        os.close(real_fd)
    assert leaks == 0
    assert (outside / "f.txt").read_bytes() == outside_before
    assert outcomes["internal_error"] == 0
    assert outcomes["success"] > 0 and outcomes["path_outside_workspace"] > 0, outcomes


def test_code_law_under_a_flipping_file(workspace: Path, outside: Path) -> None:
    real = workspace / "CODE_LAW.md"
    real.write_text("alpha public\n")
    spare = workspace / ".law-spare"
    spare.symlink_to(outside / "CODE_LAW.md")
    outcomes: collections.Counter[str] = collections.Counter()
    leaks = 0
    with Flipper(real, spare):
        for _ in range(2 * TRIALS):
            try:
                text = read_workspace_text(workspace / "CODE_LAW.md", workspace)
            except NotReadable as exc:
                leaks += SECRET in str(exc)
                outcomes["not_readable"] += 1
            else:
                leaks += SECRET in text
                outcomes["read" if text == "alpha public\n" else "other"] += 1
    assert leaks == 0
    assert outcomes["other"] == 0
    assert outcomes["read"] > 0 and outcomes["not_readable"] > 0, outcomes


def test_glob_and_ls_never_list_through_a_flipping_directory(
    workspace: Path, flip_dir: Flipper
) -> None:
    """The outside directory holds ``CODE_LAW.md``, the real ``d`` does not: a name
    ``d/CODE_LAW.md`` in a listing means the walk went through the link."""
    registry, ctx = default_registry(), _context(workspace)
    outcomes: collections.Counter[str] = collections.Counter()
    for _ in range(TRIALS // 2):
        glob = registry.run("Glob", {"pattern": "**/*.md"}, ctx)
        outcomes["glob leak"] += "d/CODE_LAW.md" in glob.data.get("matches", [])
        ls = registry.run("LS", {"path": "d"}, ctx)
        names = [entry["name"] for entry in ls.data.get("entries", [])]
        outcomes["ls leak"] += "CODE_LAW.md" in names
        outcomes["ls " + _outcome(ls)] += 1
    assert outcomes["glob leak"] == 0 and outcomes["ls leak"] == 0
    assert outcomes["ls internal_error"] == 0
    assert outcomes["ls success"] > 0, outcomes
