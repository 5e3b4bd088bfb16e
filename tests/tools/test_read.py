"""Read: numbered ranges, limits, encodings, refusals and the mtime note (A8/C4)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tools.base import ToolContext
from tools.registry import default_registry


def test_reads_a_small_file_with_line_numbers(call: Any, files: Any, ctx: ToolContext) -> None:
    path = files("src/app.py", "import os\n\ndef main():\n    pass\n")
    result = call("Read", file_path="src/app.py")
    assert result.ok
    data = result.data
    assert data["file"] == "src/app.py"
    assert data["content"] == "     1\timport os\n     2\t\n     3\tdef main():\n     4\t    pass"
    assert (data["start_line"], data["end_line"], data["total_lines"]) == (1, 4, 4)
    assert data["truncated"] is False and "next_offset" not in data
    assert data["mtime"] == path.stat().st_mtime
    assert ctx.mtimes[str(path.resolve())] == path.stat().st_mtime
    assert "externally_modified" not in data and "Note:" not in result.text
    assert result.text.startswith("src/app.py: lines 1-4 of 4 (mtime ")
    assert "     3\tdef main():" in result.text


def test_twenty_thousand_line_file(call: Any, files: Any, ctx: ToolContext) -> None:
    files("big.txt", "".join(f"row {i}\n" for i in range(1, 20_001)))
    first = call("Read", file_path="big.txt")
    cap = ctx.settings.read_max_lines
    lines = first.data["content"].split("\n")
    assert len(lines) == cap
    assert lines[0] == "     1\trow 1" and lines[-1] == f"{cap:>6}\trow {cap}"
    assert first.data["total_lines"] == 20_000
    assert first.data["truncated"] is True and first.data["next_offset"] == cap + 1
    assert first.text.endswith(f"[... {20_000 - cap} more lines; continue with offset={cap + 1}]")

    middle = call("Read", file_path="big.txt", offset=12_345, limit=3)
    assert middle.data["content"] == " 12345\trow 12345\n 12346\trow 12346\n 12347\trow 12347"
    assert (middle.data["start_line"], middle.data["end_line"]) == (12_345, 12_347)

    tail = call("Read", file_path="big.txt", offset=19_990)
    assert tail.data["content"].split("\n")[-1] == " 20000\trow 20000"
    assert tail.data["end_line"] == 20_000 and tail.data["truncated"] is False

    too_many = call("Read", file_path="big.txt", offset=100, limit=5_000)
    assert too_many.data["end_line"] == 100 + cap - 1


def test_long_lines_are_cut(call: Any, files: Any, ctx: ToolContext) -> None:
    max_chars = ctx.settings.read_max_line_chars
    files("min.js", "x" * (max_chars + 500) + "\nshort\n")
    result = call("Read", file_path="min.js")
    first, second = result.data["content"].split("\n")
    assert first == f"     1\t{'x' * max_chars}… [500 chars cut]"
    assert second == "     2\tshort"
    assert result.data["lines_cut"] == 1


def test_binary_file_is_refused(call: Any, files: Any, ctx: ToolContext) -> None:
    path = files("logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    result = call("Read", file_path="logo.png")
    assert result.error is not None and result.error.code == "binary_file"
    assert "logo.png is a binary file" in result.error.message
    assert str(path.resolve()) not in ctx.mtimes


def test_non_utf8_file_is_decoded_as_latin1(call: Any, files: Any) -> None:
    files("legacy.txt", "café olé\nnaïve\n".encode("latin-1"))
    result = call("Read", file_path="legacy.txt")
    assert result.ok
    assert result.data["content"] == "     1\tcafé olé\n     2\tnaïve"
    assert result.data["encoding"] == "latin-1"
    assert "not valid UTF-8" in result.text


def test_utf8_with_bom_and_crlf(call: Any, files: Any) -> None:
    files("win.txt", b"\xef\xbb\xbffirst\r\nsecond\r\n")
    result = call("Read", file_path="win.txt")
    assert result.data["content"] == "     1\tfirst\n     2\tsecond"
    assert "encoding" not in result.data


def test_empty_file(call: Any, files: Any) -> None:
    files("empty.txt", "")
    result = call("Read", file_path="empty.txt")
    assert result.ok
    assert result.data["total_lines"] == 0 and result.data["content"] == ""
    assert "empty file" in result.text


def test_file_without_final_newline(call: Any, files: Any) -> None:
    files("a.txt", "one\ntwo")
    result = call("Read", file_path="a.txt")
    assert result.data["total_lines"] == 2
    assert result.data["content"] == "     1\tone\n     2\ttwo"


def test_offset_past_the_end(call: Any, files: Any) -> None:
    files("a.txt", "one\ntwo\n")
    result = call("Read", file_path="a.txt", offset=3)
    assert result.error is not None and result.error.code == "invalid_offset"
    assert "has 2 lines" in result.error.message


def test_missing_file_and_directory(call: Any, files: Any) -> None:
    files("dir/a.txt", "x")
    missing = call("Read", file_path="nope.txt")
    assert missing.error is not None and missing.error.code == "not_found"
    assert "nope.txt does not exist" in missing.error.message
    directory = call("Read", file_path="dir")
    assert directory.error is not None and directory.error.code == "is_a_directory"


def test_mtime_note_after_external_change(call: Any, files: Any, ctx: ToolContext) -> None:
    path = files("notes.md", "v1\n")
    first = call("Read", file_path="notes.md")
    assert "note" not in first.data

    again = call("Read", file_path="notes.md")
    assert "note" not in again.data and "Note:" not in again.text

    path.write_text("v2\n")
    stat = path.stat()
    os.utime(path, (stat.st_atime, first.data["mtime"] + 5))
    changed = call("Read", file_path="notes.md")
    assert changed.data["externally_modified"] is True
    assert changed.data["note"] == "Note: notes.md was modified externally."
    assert changed.text.startswith("Note: notes.md was modified externally.\n")
    assert changed.data["content"] == "     1\tv2"
    assert changed.data["mtime"] == first.data["mtime"] + 5
    assert ctx.mtimes[str(path.resolve())] == first.data["mtime"] + 5

    settled = call("Read", file_path="notes.md")
    assert "note" not in settled.data


def test_mtime_map_is_per_context(call: Any, files: Any, workspace: Path, settings: Any) -> None:
    path = files("a.txt", "x\n")
    call("Read", file_path="a.txt")
    os.utime(path, (1_000_000, 1_000_000))
    other = ToolContext(workspace=workspace, settings=settings)
    fresh = default_registry().run("Read", {"file_path": "a.txt"}, other)
    assert "note" not in fresh.data
