"""Seed 003's execution log held in memory (engine.compaction.execution_log): appends that
serialise only what they add write the file a read-everything-rewrite-everything append writes,
byte for byte; what an append returns is what the file, read back, says; a file changed or
removed behind the log's back is read again."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from engine.compaction.execution_log import append_run, merge_entries, read_log, run_entry


def rewrite_all(path: Path, entry: dict[str, Any], window: int) -> None:
    """The log as the seed's ``appendAgentExecution`` + ``compactAgentExecutionIfNeeded`` keep
    it, done the plain way: every entry read, the new one added, the older ones merged past the
    window, every entry written."""
    entries = [*read_log(path), entry]
    if len(entries) > window:
        entries = [merge_entries(entries[: -(window - 1)]), *entries[-(window - 1) :]]
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), "utf-8")


def runs(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    tools = ["Read", "Edit", "Bash", "Grep"]
    return [
        run_entry(
            f"1-{n}",
            rng.choice(["fix the parser", "añade «--json»", "x" * 300]),
            rng.choice(["done", "failed: see log", ""]),
            [
                (rng.choice(tools), {"file_path": f"src/{n}.py", "n": n}, rng.random() > 0.2)
                for _ in range(rng.randint(0, 3))
            ],
        )
        for n in range(1, count + 1)
    ]


@pytest.mark.parametrize(("seed", "window"), [(0, 200), (1, 5), (2, 2), (3, 3)])
def test_appends_write_the_file_rewriting_everything_writes(
    tmp_path: Path, seed: int, window: int
) -> None:
    held, plain = tmp_path / "held" / "agent-context.jsonl", tmp_path / "plain.jsonl"
    for n, entry in enumerate(runs(seed, window + 12), 1):
        entries = append_run(held, entry, window)
        rewrite_all(plain, entry, window)
        assert held.read_bytes() == plain.read_bytes(), n
        # what the append returns is what the file says, read back
        assert entries == read_log(held), n
    assert len(entries) == window and entries[0]["summary"] is True


def test_a_log_changed_or_removed_behind_its_back_is_read_again(tmp_path: Path) -> None:
    path, plain = tmp_path / "agent-context.jsonl", tmp_path / "plain.jsonl"
    first, second, third, fourth = runs(4, 4)
    append_run(path, first, 3)
    append_run(path, second, 3)
    # another writer puts its own log there
    other = run_entry("9-1", "elsewhere", "", [])
    path.write_text(json.dumps(other) + "\n", encoding="utf-8")
    plain.write_text(json.dumps(other) + "\n", encoding="utf-8")
    assert [e["requestId"] for e in append_run(path, third, 3)] == ["9-1", "1-3"]
    rewrite_all(plain, third, 3)
    assert path.read_bytes() == plain.read_bytes()
    os.remove(path)
    assert append_run(path, fourth, 3) == [fourth]


def test_the_entry_handed_in_stays_the_callers(tmp_path: Path) -> None:
    """Changing the dict after the append changes neither the file nor a later merge."""
    path, plain = tmp_path / "agent-context.jsonl", tmp_path / "plain.jsonl"
    entries = runs(5, 4)
    for entry in entries:
        append_run(path, entry, 2)
        rewrite_all(plain, entry, 2)
        entry["userPreview"] = "changed afterwards"
        entry["toolCalls"].append({"tool": "Added", "input": "", "ok": False})
    assert path.read_bytes() == plain.read_bytes()
    assert "changed afterwards" not in path.read_text(encoding="utf-8")
