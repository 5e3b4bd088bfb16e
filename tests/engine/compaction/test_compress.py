"""ToolResultCompressor: every tool's real result turned into the seed-A3 history form.

Each test runs the real tool on real files, then checks what history keeps: the limits from
Settings, ``status``, the whole ``error``, ``truncated`` markers with counts, and that
``text``, ``stats`` and ``context`` are gone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from engine.compaction.tool_results import ToolResultCompressor
from engine.messages.tokens import count_text
from engine.settings.config import Settings
from tools.base import ToolContext, ToolError, ToolResult
from tools.registry import default_registry

DROPPED = {"text", "stats", "context"}


@pytest.fixture
def settings() -> Settings:
    return Settings(bash_policy="allow", edit_policy="allow")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def run(ws: Path, settings: Settings) -> Any:
    ctx = ToolContext(workspace=ws, settings=settings)
    registry = default_registry()

    def call(name: str, **arguments: Any) -> ToolResult:
        return registry.run(name, arguments, ctx)

    return call


@pytest.fixture
def compressor(settings: Settings) -> ToolResultCompressor:
    return ToolResultCompressor(settings)


def history(compressor: ToolResultCompressor, name: str, result: ToolResult) -> dict[str, Any]:
    """Compress, and check the invariants every form shares."""
    form = compressor.compress(name, result)
    assert form["status"] == result.status
    assert not DROPPED & set(form)
    assert json.loads(compressor.to_json(name, result)) == form
    if result.status == "error":
        assert result.error is not None
        assert form["error"] == {"code": result.error.code, "message": result.error.message}
    else:
        assert "error" not in form
    return form


def test_ls_keeps_counts_and_first_entries(run: Any, compressor: Any, ws: Path) -> None:
    for i in range(60):
        (ws / f"file{i:02}.txt").write_text("x")
    for i in range(5):
        (ws / f"dir{i}").mkdir()
    result = run("LS")
    assert len(result.data["entries"]) == 65
    form = history(compressor, "LS", result)["data"]
    assert form["entries"][:6] == ["dir0/", "dir1/", "dir2/", "dir3/", "dir4/", "file00.txt"]
    assert len(form["entries"]) == 20
    assert (form["total"], form["dirs"], form["files"]) == (65, 5, 60)
    assert form["truncated"] is True and form["omitted"] == 45


def test_ls_small_directory_is_whole(run: Any, compressor: Any, ws: Path) -> None:
    (ws / "a.txt").write_text("x")
    form = history(compressor, "LS", run("LS"))["data"]
    assert form == {"path": ".", "total": 1, "dirs": 0, "files": 1, "entries": ["a.txt"]}


def test_glob_keeps_pattern_count_and_ten(run: Any, compressor: Any, ws: Path) -> None:
    (ws / "src").mkdir()
    for i in range(300):
        (ws / "src" / f"m{i:03}.py").write_text("")
    result = run("Glob", pattern="**/*.py")
    assert len(result.data["matches"]) == 300
    form = history(compressor, "Glob", result)["data"]
    assert form["pattern"] == "**/*.py" and form["total"] == 300
    assert form["matches"] == result.data["matches"][:10]
    assert form["truncated"] is True and form["omitted"] == 290


def test_grep_hundreds_of_hits_keep_five(run: Any, compressor: Any, ws: Path) -> None:
    for i in range(30):
        body = "".join(
            f"    value_{j} = compute({j})  # TODO: cache this\n" if j % 3 == 0 else f"x{j}\n"
            for j in range(60)
        )
        (ws / f"service_{i:02}.py").write_text(body)
    result = run("Grep", pattern="TODO")
    assert result.data["total_matches"] == 600
    form = history(compressor, "Grep", result)["data"]
    assert form["summary"] == "600 matching lines in 30 files"
    assert form["matches"] == [
        "service_00.py:1:     value_0 = compute(0)  # TODO: cache this",
        "service_00.py:4:     value_3 = compute(3)  # TODO: cache this",
        "service_00.py:7:     value_6 = compute(6)  # TODO: cache this",
        "service_00.py:10:     value_9 = compute(9)  # TODO: cache this",
        "service_00.py:13:     value_12 = compute(12)  # TODO: cache this",
    ]
    assert form["truncated"] is True and form["omitted"] == 595
    assert len(compressor.to_json("Grep", result)) < 1000 < len(result.text)


def test_grep_other_modes(run: Any, compressor: Any, ws: Path) -> None:
    for i in range(8):
        (ws / f"f{i}.txt").write_text("hit\nhit\n")
    files = history(
        compressor, "Grep", run("Grep", pattern="hit", output_mode="files_with_matches")
    )
    assert files["data"]["files"] == ["f0.txt", "f1.txt", "f2.txt", "f3.txt", "f4.txt"]
    assert files["data"]["summary"] == "8 files match" and files["data"]["omitted"] == 3
    counts = history(
        compressor, "Grep", run("Grep", pattern="hit", output_mode="count", glob="f[0-1].txt")
    )
    assert counts["data"]["counts"] == ["f0.txt: 2", "f1.txt: 2"]
    assert counts["data"]["glob"] == "f[0-1].txt" and "truncated" not in counts["data"]


def test_read_of_a_5000_line_file(run: Any, compressor: Any, ws: Path) -> None:
    (ws / "huge.py").write_text("".join(f"line_{i} = {i}\n" for i in range(1, 5001)))
    result = run("Read", file_path="huge.py", offset=1000)
    form = history(compressor, "Read", result)["data"]
    lines = form["content"].split("\n")
    assert len(lines) == 500
    assert lines[0] == "1000: line_1000 = 1000" and lines[-1] == "1499: line_1499 = 1499"
    assert form["lines"] == "1000-1499" and form["total_lines"] == 5000
    assert form["mtime"] == result.data["mtime"]
    assert "note" not in form and "truncated" not in form


def test_read_history_costs_no_more_tokens_than_the_observation(
    run: Any, compressor: Any, ws: Path
) -> None:
    source = "".join(f'    value_{i} = "text {i}"\t# note\n' for i in range(1, 400))
    (ws / "code.py").write_text(source)
    result = run("Read", file_path="code.py")
    kept = compressor.to_json("Read", result)
    assert count_text(kept) <= count_text(result.text)


def test_read_longer_than_the_history_limit_is_cut(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"r{i}\n" for i in range(1, 2001)))
    wide = Settings(read_max_lines=1500)
    result = default_registry().run(
        "Read", {"file_path": "big.txt"}, ToolContext(workspace=ws, settings=wide)
    )
    form = history(ToolResultCompressor(Settings()), "Read", result)["data"]
    assert len(form["content"].split("\n")) == 500
    assert form["lines"] == "1-500" and form["truncated"] is True
    assert form["omitted_lines"] == 1000


def test_read_numbers_are_compacted_only_at_a_line_start() -> None:
    """Only a line's leading ``cat -n`` number loses its padding and tab; a tab or a number
    anywhere else in the line, or a line without a number, is kept as it is."""
    content = "\n".join(
        [
            "     1\tdef f(x):",
            "    12\t\treturn x\t# 3\tnot a number",
            "   123\t",
            "\t4\tstarts with a tab",
            " 5 6\tspace inside",
            "7\tno padding",
            "",
            "\r  8\tcarriage return first",
            "  x9\tletter first",
        ]
    )
    data = {"file": "f.py", "content": content, "start_line": 1, "end_line": 9}
    result = ToolResult(status="success", data=data)
    form = ToolResultCompressor(Settings()).compress("Read", result)
    assert form["data"]["content"].split("\n") == [
        "1: def f(x):",
        "12: \treturn x\t# 3\tnot a number",
        "123: ",
        "\t4\tstarts with a tab",
        " 5 6\tspace inside",
        "7: no padding",
        "",
        "\r  8\tcarriage return first",
        "  x9\tletter first",
    ]


def test_read_keeps_the_external_change_note(run: Any, compressor: Any, ws: Path) -> None:
    path = ws / "cfg.ini"
    path.write_text("a=1\n")
    run("Read", file_path="cfg.ini")
    path.write_text("a=2\n")
    os.utime(path, (0, path.stat().st_mtime + 9))
    form = history(compressor, "Read", run("Read", file_path="cfg.ini"))["data"]
    assert form["note"] == "Note: cfg.ini was modified externally."
    assert form["externally_modified"] is True
    assert form["content"] == "1: a=2"


def test_edit_small_diff_is_kept(run: Any, compressor: Any, ws: Path) -> None:
    (ws / "app.py").write_text("".join(f"x{i} = {i}\n" for i in range(100)))
    run("Read", file_path="app.py")
    result = run("Edit", file_path="app.py", old_string="x50 = 50", new_string="x50 = 'fifty'")
    form = history(compressor, "Edit", result)["data"]
    assert form["file"] == "app.py" and form["replacements"] == 1
    assert form["changed_ranges"] == ["L51 (+1 -1)"]
    assert form["diff"] == result.data["diff"]
    assert "-x50 = 50\n+x50 = 'fifty'\n" in form["diff"]
    assert "truncated" not in form


def test_edit_large_diff_is_only_summarised(run: Any, compressor: Any, ws: Path) -> None:
    (ws / "app.py").write_text("".join(f"old_name_{i} = {i}\n\n\n\n\n\n\n" for i in range(80)))
    run("Read", file_path="app.py")
    result = run(
        "Edit", file_path="app.py", old_string="old_name", new_string="new_name", replace_all=True
    )
    assert result.data["replacements"] == 80
    form = history(compressor, "Edit", result)["data"]
    assert "diff" not in form and form["diff_omitted"] is True
    assert form["diff_lines"] == len(result.data["diff"].splitlines()) > 50
    assert len(form["changed_ranges"]) == 50 and form["omitted_ranges"] == 30
    assert (form["lines_added"], form["lines_removed"]) == (80, 80)
    assert form["truncated"] is True


def test_multiedit_form(run: Any, compressor: Any, ws: Path) -> None:
    (ws / "m.py").write_text("a = 1\nb = 2\n")
    run("Read", file_path="m.py")
    result = run(
        "MultiEdit",
        file_path="m.py",
        edits=[
            {"old_string": "a = 1", "new_string": "a = 10"},
            {"old_string": "b", "new_string": "c"},
        ],
    )
    form = history(compressor, "MultiEdit", result)["data"]
    assert form["edits"] == 2 and form["replacements"] == 2
    assert form["changed_ranges"] == ["L1-2 (+2 -2)"]


def test_write_new_small_file_is_kept_whole(run: Any, compressor: Any) -> None:
    content = "".join(f"line {i}\n" for i in range(1, 31))
    form = history(compressor, "Write", run("Write", file_path="s.txt", content=content))["data"]
    assert form["action"] == "created" and form["lines"] == 30
    assert form["snippet"] == content.rstrip("\n")
    assert "truncated" not in form


def test_write_new_big_file_keeps_its_first_lines(run: Any, compressor: Any) -> None:
    content = "".join(f"line {i}\n" for i in range(1, 201))
    form = history(compressor, "Write", run("Write", file_path="b.txt", content=content))["data"]
    assert form["snippet"].split("\n") == [f"line {i}" for i in range(1, 21)]
    assert form["truncated"] is True and form["omitted_lines"] == 180
    assert form["bytes"] == len(content)


def test_write_overwrite_form(run: Any, compressor: Any, ws: Path) -> None:
    (ws / "c.toml").write_text("a = 1\n")
    run("Read", file_path="c.toml")
    form = history(compressor, "Write", run("Write", file_path="c.toml", content="a = 2\n"))["data"]
    assert form["action"] == "overwritten"
    assert form["changed_ranges"] == ["L1 (+1 -1)"]
    assert form["diff"].endswith("-a = 1\n+a = 2\n")
    assert "snippet" not in form


def test_bash_huge_stderr_keeps_the_tail(run: Any, compressor: Any) -> None:
    command = (
        'for i in $(seq 1 300); do echo "collected item $i"; done; '
        'for i in $(seq 1 10000); do echo "warning $i: deprecated call" >&2; done; '
        "echo 'FAILED tests/test_x.py::test_y - AssertionError' >&2; exit 1"
    )
    result = run("Bash", command=command)
    assert result.data["stderr_truncated"] is True
    form = history(compressor, "Bash", result)
    assert form["error"]["code"] == "nonzero_exit"
    data = form["data"]
    assert data["exit_code"] == 1
    assert data["stdout"] == {
        "lines": 300,
        "chars": result.data["stdout_chars"],
        "first_line": "collected item 1",
        "last_line": "collected item 300",
    }
    tail = data["stderr_tail"].split("\n")
    assert len(tail) == 20
    assert tail[-1] == "FAILED tests/test_x.py::test_y - AssertionError"
    assert tail[0] == "warning 9982: deprecated call"
    assert data["stderr"]["lines"] == 10_001
    assert data["omitted_stderr_lines"] == 9_981
    assert data["truncated"] is True
    assert "stdout" not in json.dumps(data["stdout"])  # only counts and two lines
    assert len(compressor.to_json("Bash", result)) < 2_000


def test_bash_failure_keeps_its_exception_line_far_from_the_tail(run: Any, compressor: Any) -> None:
    command = (
        "python3 -c 'import sys; 1/0' ; "
        'for i in $(seq 1 60); do echo "cleanup step $i of the test harness" >&2; done; exit 3'
    )
    form = history(compressor, "Bash", run("Bash", command=command))["data"]
    assert "ZeroDivisionError" not in form["stderr_tail"]  # 60 lines later, out of the tail
    assert form["error_line"] == "ZeroDivisionError: division by zero"
    assert "error_line" not in history(compressor, "Bash", run("Bash", command="echo ok"))["data"]


def test_bash_small_success(run: Any, compressor: Any) -> None:
    form = history(compressor, "Bash", run("Bash", command="echo hello"))["data"]
    assert form == {
        "command": "echo hello",
        "exit_code": 0,
        "stdout": {"lines": 1, "chars": 6, "first_line": "hello"},
        "stderr": {"lines": 0, "chars": 0},
    }


def test_bash_timeout_form(ws: Path, compressor: Any) -> None:
    settings = Settings(bash_policy="allow", bash_timeout=0.3, bash_max_timeout=1)
    result = default_registry().run(
        "Bash", {"command": "sleep 5"}, ToolContext(workspace=ws, settings=settings)
    )
    form = history(compressor, "Bash", result)
    assert form["error"]["code"] == "timeout"
    assert form["data"]["timed_out"] is True


def test_todowrite_keeps_only_the_recap(run: Any, compressor: Any) -> None:
    result = run(
        "TodoWrite",
        todos=[{"content": "plan", "status": "completed"}, {"content": "build"}],
    )
    form = history(compressor, "TodoWrite", result)
    assert form["data"] == {"recap": "Todo: 1/2 done — [x] plan; [ ] build"}


def test_errors_keep_code_and_message_whole(run: Any, compressor: Any, ws: Path) -> None:
    (ws / "a.py").write_text("x = 1\nx = 1\n")
    run("Read", file_path="a.py")
    result = run("Edit", file_path="a.py", old_string="x = 1", new_string="y")
    form = history(compressor, "Edit", result)
    assert form["error"]["code"] == "not_unique"
    assert form["data"] == {"occurrences": 2}
    long_message = "x" * 10_000
    failed = ToolResult.fail("custom", long_message)
    assert compressor.compress("Read", failed)["error"]["message"] == long_message
    outside = history(compressor, "Read", run("Read", file_path="../etc/passwd"))
    assert outside["error"]["code"] == "path_outside_workspace" and outside["data"] == {
        "path": "../etc/passwd"
    }


def test_unknown_tool_generic_truncation(compressor: Any, settings: Settings) -> None:
    small = ToolResult(
        status="success", data={"answer": 42, "unit": "°C"}, text="t", stats={"a": 1}
    )
    assert history(compressor, "WebFetch", small)["data"] == {"answer": 42, "unit": "°C"}
    big = ToolResult(status="success", data={"body": "é" * 50_000}, text="t")
    form = history(compressor, "WebFetch", big)["data"]
    assert form["truncated"] is True
    assert len(form["preview"]) == settings.generic_max_chars
    assert (
        form["omitted_chars"]
        == len(json.dumps(big.data, ensure_ascii=False, separators=(",", ":")))
        - settings.generic_max_chars
    )
    assert "é" in compressor.to_json("WebFetch", big)


def test_malformed_data_for_a_known_tool_falls_back(compressor: Any) -> None:
    odd = ToolResult(status="success", data={"unexpected": True})
    assert history(compressor, "Read", odd)["data"] == {"unexpected": True}


def test_to_json_is_compact() -> None:
    compressor = ToolResultCompressor(Settings())
    result = ToolResult(status="error", error=ToolError(code="c", message="m"))
    assert (
        compressor.to_json("Read", result)
        == '{"status":"error","data":{},"error":{"code":"c","message":"m"}}'
    )


def test_bash_ls_of_twelve_names_keeps_them_all_for_fewer_tokens(
    run: Any, compressor: Any, ws: Path
) -> None:
    """Issue 22: `ls` through Bash kept only its first and last name (10 of 12 lost) and cost
    more tokens than what the model saw. Twelve files, each name on its own line of stdout.
    The history form keeps all twelve; it costs at most the two tokens of the seed's envelope
    (``{"status":"success","data":…}``) more than the observation text (74 and 72 tokens with
    cl100k, counted by hand with ``count_text`` on both strings)."""
    names = [f"file_{i:02d}.txt" for i in range(1, 13)]
    for name in names:
        (ws / name).write_text("x")
    result = run("Bash", command="ls -1 file_*")
    form = history(compressor, "Bash", result)["data"]
    assert form == {"exit_code": 0, "stdout": "\n".join(names)}
    assert count_text(compressor.to_json("Bash", result)) <= count_text(result.text) + 2
