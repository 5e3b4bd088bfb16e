"""Edit and MultiEdit: exact replacements, freshness (C4), refusals, rollback, encodings."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from tools.base import ToolContext

SOURCE = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def read_first(call: Any, files: Any, rel: str, content: str | bytes) -> Path:
    path = files(rel, content)
    assert call("Read", file_path=rel).ok
    return path


def test_edit_replaces_and_reports(call: Any, files: Any, ctx: ToolContext) -> None:
    path = read_first(call, files, "calc.py", SOURCE)
    result = call(
        "Edit",
        file_path="calc.py",
        old_string="    return a - b",
        new_string="    return a - b  # ok",
    )
    assert result.ok, result.text
    assert path.read_text() == SOURCE.replace("return a - b", "return a - b  # ok")
    data = result.data
    assert data["file"] == "calc.py"
    assert data["replacements"] == 1
    assert data["changed_ranges"] == ["L6 (+1 -1)"]
    assert (data["lines_added"], data["lines_removed"], data["total_lines"]) == (1, 1, 6)
    assert data["diff"].splitlines() == [
        "--- a/calc.py",
        "+++ b/calc.py",
        "@@ -3,4 +3,4 @@",
        " ",
        " ",
        " def sub(a, b):",
        "-    return a - b",
        "+    return a - b  # ok",
    ]
    assert result.text.startswith("Edited calc.py: 1 replacement — L6 (+1 -1).\n--- a/calc.py")
    assert ctx.mtimes[str(path.resolve())] == path.stat().st_mtime


def test_follow_up_edit_works_without_rereading(call: Any, files: Any) -> None:
    path = read_first(call, files, "calc.py", SOURCE)
    assert call("Edit", file_path="calc.py", old_string="add", new_string="plus").ok
    second = call("Edit", file_path="calc.py", old_string="sub", new_string="minus")
    assert second.ok, second.text
    assert "def plus" in path.read_text() and "def minus" in path.read_text()


def test_edit_requires_a_read(call: Any, files: Any) -> None:
    path = files("calc.py", SOURCE)
    result = call("Edit", file_path="calc.py", old_string="add", new_string="plus")
    assert result.error is not None and result.error.code == "not_read"
    assert "has not been read in this session" in result.error.message
    assert path.read_text() == SOURCE


def test_edit_refuses_after_an_external_change(call: Any, files: Any) -> None:
    path = read_first(call, files, "calc.py", SOURCE)
    path.write_text(SOURCE + "# someone else\n")
    os.utime(path, (time.time(), path.stat().st_mtime + 3))
    result = call("Edit", file_path="calc.py", old_string="add", new_string="plus")
    assert result.error is not None and result.error.code == "modified_since_read"
    assert "Read it again" in result.error.message
    assert path.read_text().endswith("# someone else\n")
    assert call("Read", file_path="calc.py").data["externally_modified"] is True
    assert call("Edit", file_path="calc.py", old_string="add", new_string="plus").ok


def test_non_unique_string(call: Any, files: Any) -> None:
    path = read_first(call, files, "calc.py", SOURCE)
    result = call("Edit", file_path="calc.py", old_string="(a, b):", new_string="(x, y):")
    assert result.error is not None and result.error.code == "not_unique"
    assert result.error.message.startswith("old_string occurs 2 times in calc.py (lines 1, 5).")
    assert "replace_all" in result.error.message
    assert result.data == {"occurrences": 2}
    assert path.read_text() == SOURCE


def test_replace_all(call: Any, files: Any) -> None:
    path = read_first(call, files, "calc.py", SOURCE)
    result = call(
        "Edit", file_path="calc.py", old_string="(a, b)", new_string="(x, y)", replace_all=True
    )
    assert result.ok
    assert result.data["replacements"] == 2
    assert result.data["changed_ranges"] == ["L1 (+1 -1)", "L5 (+1 -1)"]
    assert path.read_text().count("(x, y)") == 2


def test_string_not_found_and_hints(call: Any, files: Any) -> None:
    read_first(call, files, "calc.py", SOURCE)
    missing = call("Edit", file_path="calc.py", old_string="def mul", new_string="x")
    assert missing.error is not None and missing.error.code == "string_not_found"
    assert "including whitespace and indentation" in missing.error.message
    numbered = call(
        "Edit", file_path="calc.py", old_string="     2\t    return a + b", new_string="x"
    )
    assert numbered.error is not None and "line-number prefix" in numbered.error.message


def test_no_change_and_empty_old_string(call: Any, files: Any) -> None:
    read_first(call, files, "calc.py", SOURCE)
    same = call("Edit", file_path="calc.py", old_string="add", new_string="add")
    assert same.error is not None and same.error.code == "no_change"
    empty = call("Edit", file_path="calc.py", old_string="", new_string="x")
    assert empty.error is not None and empty.error.code == "invalid_input"
    assert "old_string" in empty.error.message


def test_missing_and_binary_files(call: Any, files: Any) -> None:
    missing = call("Edit", file_path="nope.py", old_string="a", new_string="b")
    assert missing.error is not None and missing.error.code == "not_found"
    assert "Use Write" in missing.error.message
    files("blob.bin", b"\x00\x01\x02abc")
    binary = call("Edit", file_path="blob.bin", old_string="abc", new_string="xyz")
    assert binary.error is not None and binary.error.code == "binary_file"


def test_latin1_file_keeps_its_bytes(call: Any, files: Any) -> None:
    original = "# café\nname = 'olé'\n".encode("latin-1")
    path = read_first(call, files, "legacy.py", original)
    assert call("Edit", file_path="legacy.py", old_string="olé", new_string="señor").ok
    assert path.read_bytes() == "# café\nname = 'señor'\n".encode("latin-1")
    emoji = call("Edit", file_path="legacy.py", old_string="señor", new_string="🙂")
    assert emoji.error is not None and emoji.error.code == "encoding_error"
    assert path.read_bytes() == "# café\nname = 'señor'\n".encode("latin-1")


def test_crlf_file_stays_crlf(call: Any, files: Any) -> None:
    path = read_first(call, files, "win.txt", b"one\r\ntwo\r\nthree\r\n")
    result = call("Edit", file_path="win.txt", old_string="one\ntwo", new_string="1\n2\n2.5")
    assert result.ok, result.text
    assert path.read_bytes() == b"1\r\n2\r\n2.5\r\nthree\r\n"


def test_edit_in_a_twenty_thousand_line_file(call: Any, files: Any) -> None:
    lines = ["x = 1\n"] * 20_000
    lines[12_000] = "TARGET = 0\n"
    path = read_first(call, files, "big.py", "".join(lines))
    started = time.perf_counter()
    result = call("Edit", file_path="big.py", old_string="TARGET = 0", new_string="TARGET = 1")
    assert time.perf_counter() - started < 2
    assert result.data["changed_ranges"] == ["L12001 (+1 -1)"]
    assert len(result.data["diff"].splitlines()) == 2 + 1 + 3 + 2 + 3
    assert path.read_text().count("\n") == 20_000


def test_multiedit_applies_in_order(call: Any, files: Any) -> None:
    path = read_first(call, files, "calc.py", SOURCE)
    result = call(
        "MultiEdit",
        file_path="calc.py",
        edits=[
            {"old_string": "def add", "new_string": "def plus"},
            {"old_string": "def plus(a, b)", "new_string": "def plus(a: int, b: int)"},
            {"old_string": "return", "new_string": "return (", "replace_all": True},
        ],
    )
    assert result.ok, result.text
    assert result.data["edits"] == 3
    assert result.data["replacements"] == 4
    text = path.read_text()
    assert text.startswith("def plus(a: int, b: int):\n    return ( a + b\n")
    assert result.data["changed_ranges"] == ["L1-2 (+2 -2)", "L6 (+1 -1)"]


def test_multiedit_rolls_back_when_one_edit_fails(call: Any, files: Any, ctx: ToolContext) -> None:
    path = read_first(call, files, "calc.py", SOURCE)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    result = call(
        "MultiEdit",
        file_path="calc.py",
        edits=[
            {"old_string": "def add", "new_string": "def plus"},
            {"old_string": "def nowhere", "new_string": "x"},
            {"old_string": "def sub", "new_string": "def minus"},
        ],
    )
    assert result.error is not None and result.error.code == "string_not_found"
    assert result.error.message.startswith("Edit 2 of 3 failed: old_string was not found")
    assert "No edit was applied" in result.error.message
    assert result.data["failed_edit"] == 2
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert not [p for p in path.parent.iterdir() if p.name != "calc.py"]


def test_multiedit_sees_its_own_earlier_edits(call: Any, files: Any) -> None:
    read_first(call, files, "calc.py", SOURCE)
    result = call(
        "MultiEdit",
        file_path="calc.py",
        edits=[
            {"old_string": "def add", "new_string": "def sub2"},
            {"old_string": "def sub", "new_string": "def x"},
        ],
    )
    assert result.error is not None and result.error.code == "not_unique"
    assert result.data["failed_edit"] == 2 and result.data["occurrences"] == 2
