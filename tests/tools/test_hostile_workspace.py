"""A workspace that fights back: FIFOs, directories swapped for symlinks mid-write, same-mtime
changes, huge files, and paths or patterns no search can take."""

from __future__ import annotations

import os
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tools.base import ToolContext
from tools.files import write_file

T = TypeVar("T")


def finishes(action: Callable[[], T]) -> T:
    """Run a tool call on a thread; a call that blocks forever fails the test instead of CI."""
    box: list[T] = []
    worker = threading.Thread(target=lambda: box.append(action()), daemon=True)
    worker.start()
    worker.join(30)
    assert box, "the call blocked (a FIFO was opened)"
    return box[0]


@pytest.fixture
def fifo(workspace: Path) -> Path:
    path = workspace / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.usefixtures("fifo")
def test_read_refuses_a_fifo(call: Any) -> None:
    result = finishes(lambda: call("Read", file_path="fifo"))
    assert result.error is not None and result.error.code == "not_a_regular_file"
    assert "fifo is a FIFO (named pipe)" in result.error.message


@pytest.mark.usefixtures("fifo")
def test_grep_refuses_a_fifo_and_skips_one_in_a_directory(call: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("needle\n")
    result = finishes(lambda: call("Grep", pattern="x", path="fifo"))
    assert result.error is not None and result.error.code == "not_a_regular_file"
    walked = finishes(lambda: call("Grep", pattern="needle", path="."))
    assert walked.ok and walked.data["files_matched"] == 1 and walked.data["total_matches"] == 1


@pytest.mark.usefixtures("fifo")
def test_glob_does_not_list_a_fifo(call: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x\n")
    result = finishes(lambda: call("Glob", pattern="*"))
    assert result.data["matches"] == ["a.txt"]


@pytest.mark.usefixtures("fifo")
def test_an_at_mention_of_a_fifo_does_not_hang_the_agent(workspace: Path, tmp_path: Path) -> None:
    from engine.llm.offline import OfflineProvider
    from engine.session import Agent
    from engine.settings.config import Settings
    from engine.store import Store

    store = Store.open(tmp_path / "a.db")
    session = store.create_session(str(workspace), "fifo")
    settings = Settings(model="offline")
    agent = Agent(store, session, settings, OfflineProvider(settings), workspace)
    outcome = finishes(lambda: agent.run("what is in @fifo?"))
    assert outcome.status.value == "finished"
    tools = [m for m in store.history(session.id or 0).messages if m.role == "tool"]
    assert tools and "not_a_regular_file" in tools[0].content
    store.close()


def test_write_never_follows_a_directory_swapped_for_a_symlink(
    ctx: ToolContext, workspace: Path, outside: Path
) -> None:
    """The path was checked inside the workspace; then ``d`` became a link to outside."""
    target = workspace / "d" / "f.txt"
    (workspace / "d").mkdir()
    (workspace / "d").rmdir()
    (workspace / "d").symlink_to(outside, target_is_directory=True)
    with pytest.raises(Exception) as info:
        write_file(ctx, target, "d/f.txt", b"written\n")
    assert getattr(info.value, "code", None) == "path_outside_workspace"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert [p.name for p in workspace.iterdir()] == ["d"]


def test_write_raced_by_a_symlink_swap_stays_inside_and_leaves_no_temp_files(
    call: Any, workspace: Path, outside: Path
) -> None:
    """A thread flips ``d`` between a directory and a link to outside while Write runs."""
    d = workspace / "d"
    d.mkdir()
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            try:
                if d.is_symlink():
                    d.unlink()
                    d.mkdir()
                else:
                    for leftover in d.iterdir():
                        leftover.unlink()
                    d.rmdir()
                    d.symlink_to(outside, target_is_directory=True)
            except OSError:
                continue

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    try:
        for i in range(300):
            call("Write", file_path=f"d/f{i}.txt", content="x\n")
    finally:
        stop.set()
        flipper.join()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    left = [p for p in workspace.rglob("*") if p.name.endswith(".tmp")]
    assert left == []


def test_a_same_mtime_change_is_caught_by_size_and_hash(
    call: Any, files: Any, workspace: Path
) -> None:
    path = files("conf.py", "DEBUG = False\n")
    assert call("Read", file_path="conf.py").ok
    stamp = path.stat()
    path.write_text("DEBUG = True \n")  # same size, other content
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert path.stat().st_mtime == stamp.st_mtime
    result = call("Edit", file_path="conf.py", old_string="DEBUG", new_string="TRACE")
    assert result.error is not None and result.error.code == "modified_since_read"
    overwrite = call("Write", file_path="conf.py", content="gone\n")
    assert overwrite.error is not None and overwrite.error.code == "modified_since_read"
    assert path.read_text() == "DEBUG = True \n"


def test_read_keeps_only_the_lines_it_shows(call: Any, workspace: Path) -> None:
    """500 lines of a 40 MB file: the peak allocation stays far below the file's size."""
    line = b"x" * 99 + b"\n"
    with open(workspace / "big.log", "wb") as handle:
        block = line * 10_000
        for _ in range(40):
            handle.write(block)  # 400 000 lines, 40 MB
    tracemalloc.start()
    try:
        result = call("Read", file_path="big.log", offset=200_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.ok
    assert result.data["total_lines"] == 400_000
    assert (result.data["start_line"], result.data["end_line"]) == (200_000, 200_499)
    assert peak < 8 * 1024 * 1024  # one 1 MiB chunk, its pieces and 500 lines


def test_grep_names_the_problem_with_a_nul_or_a_too_long_path(call: Any) -> None:
    nul = call("Grep", pattern="a\0b")
    assert nul.error is not None and nul.error.code == "invalid_pattern"
    assert "NUL" in nul.error.message
    long = call("Grep", pattern="x", path="a" * 5000)
    assert long.error is not None and long.error.code == "path_too_long"
    bad_range = call("Grep", pattern="[z-a]")
    assert bad_range.error is not None and bad_range.error.code == "invalid_pattern"
