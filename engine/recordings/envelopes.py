"""The result envelope a live tool would have returned, rebuilt from a recorded result.

History keeps an imported result in the same A3 form as a live one: this module turns the
recorded text (and Claude Code's structured ``toolUseResult`` when there is one) into the
``data`` that :class:`~engine.compaction.tool_results.ToolResultCompressor` expects for the tools
A3 knows
(Claude Code's tool names are ctxscope's). Unknown tools get ``{"output": text}`` and the
generic rule. An error keeps its message whole up to ``error_cap`` characters; past that the
head and the tail are kept (a traceback's exception line is its last line).
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from tools.base import ToolError, ToolResult

Obj = dict[str, Any]

ERROR_CAP = 4000
"""Characters of an error message history keeps (head and tail past this)."""

_GREP_LINE = re.compile(r"^(.+?):(\d+):(.*)$")
_GREP_NOTES = ("Found ", "No files found", "No matches found")
"""Lines Claude Code's Grep writes about the search, not naming a file."""
_EXIT_CODE = re.compile(r"^(?:Error: )?Exit code (-?\d+)")


def head_tail(text: str, cap: int) -> str:
    """``text`` whole up to ``cap`` chars, else its head and tail with the cut marked."""
    if len(text) <= cap:
        return text
    head = cap // 3
    tail = cap - head
    return f"{text[:head]}\n[… {len(text) - head - tail} characters omitted …]\n{text[-tail:]}"


def envelope(
    tool: str,
    call_input: dict[str, Any],
    text: str,
    is_error: bool,
    recorded: dict[str, Any] | None,
    error_cap: int = ERROR_CAP,
) -> ToolResult:
    """The :class:`ToolResult` of one recorded tool call; ``text`` is what the model saw."""
    rec = recorded if isinstance(recorded, dict) else {}
    try:
        data = _DATA.get(tool, _generic)(call_input, text, rec, is_error)
    except (KeyError, TypeError, ValueError, AttributeError):
        data = _generic(call_input, text, rec, is_error)
    if is_error and tool == "Bash" and isinstance(data.get("exit_code"), int):
        # As the live Bash tool reports it: the code in the error, the output in the data.
        error = ToolError(
            code="nonzero_exit", message=f"The command exited with code {data['exit_code']}."
        )
        return ToolResult(status="error", error=error, text=text, data=data)
    if is_error:
        error = ToolError(code="tool_error", message=head_tail(text, error_cap))
        return ToolResult(status="error", error=error, text=text)
    return ToolResult(status="success", data=data, text=text)


def _generic(
    call_input: dict[str, Any], text: str, rec: dict[str, Any], is_error: bool
) -> dict[str, Any]:
    return {"output": text}


def _bash(
    call_input: dict[str, Any], text: str, rec: dict[str, Any], is_error: bool
) -> dict[str, Any]:
    if "stdout" in rec:
        stdout, stderr = rec["stdout"], rec.get("stderr", "")
    elif is_error:
        # One recorded text for both streams: an error's text is read as stderr (its tail,
        # where a traceback's exception line is, is what history keeps).
        stdout, stderr = "", _EXIT_CODE.sub("", text, count=1).lstrip("\n")
    else:
        stdout, stderr = text, ""
    code = rec.get("returncode", rec.get("exit_code"))
    if code is None:
        # Claude Code records no exit code: its error text starts "Exit code N".
        found = _EXIT_CODE.match(text)
        code = int(found[1]) if found else (None if is_error else 0)
    data: dict[str, Any] = {
        "command": str(call_input.get("command", "")),
        "exit_code": code,
        "stdout": str(stdout),
        "stderr": str(stderr),
    }
    if rec.get("interrupted"):
        data["interrupted"] = True
    return data


def _read(
    call_input: dict[str, Any], text: str, rec: dict[str, Any], is_error: bool
) -> dict[str, Any]:
    file = rec.get("file") if isinstance(rec.get("file"), dict) else None
    lines = text.split("\n") if text else []
    start = int(file.get("startLine", 1)) if file else int(call_input.get("offset") or 1)
    total = int(file.get("totalLines", len(lines))) if file else len(lines)
    return {
        "file": str(call_input.get("file_path", file.get("filePath", "") if file else "")),
        "content": text,
        "start_line": start,
        "end_line": start + max(len(lines) - 1, 0),
        "total_lines": total,
    }


def _edit(
    call_input: dict[str, Any], text: str, rec: dict[str, Any], is_error: bool
) -> dict[str, Any]:
    edits = call_input.get("edits") or [call_input]
    diff: list[str] = []
    added = removed = 0
    for edit in edits:
        old = str(edit.get("old_string", "")).splitlines()
        new = str(edit.get("new_string", "")).splitlines()
        for line in difflib.unified_diff(old, new, lineterm="", n=1):
            if line.startswith(("---", "+++")):
                continue
            diff.append(line)
            added += line.startswith("+")
            removed += line.startswith("-")
    return {
        "file": str(call_input.get("file_path", rec.get("filePath", ""))),
        "replacements": len(edits),
        "lines_added": added,
        "lines_removed": removed,
        "diff": "\n".join(diff),
    }


def _write(
    call_input: dict[str, Any], text: str, rec: dict[str, Any], is_error: bool
) -> dict[str, Any]:
    content = str(call_input.get("content", ""))
    created = rec.get("type", "create") == "create"
    return {
        "file": str(call_input.get("file_path", rec.get("filePath", ""))),
        "action": "created" if created else "overwritten",
        "lines": len(content.splitlines()),
        "bytes": len(content.encode()),
        "head": content,
    }


def _glob(
    call_input: dict[str, Any], text: str, rec: dict[str, Any], is_error: bool
) -> dict[str, Any]:
    names = rec.get("filenames")
    if not isinstance(names, list):
        names = [line for line in text.splitlines() if line.strip()]
    return {
        "pattern": str(call_input.get("pattern", "")),
        "path": str(call_input.get("path", ".")),
        "total": int(rec.get("numFiles", len(names))),
        "matches": [str(n) for n in names],
    }


def _grep(
    call_input: dict[str, Any], text: str, rec: dict[str, Any], is_error: bool
) -> dict[str, Any]:
    mode = str(call_input.get("output_mode") or rec.get("mode") or "files_with_matches")
    data: dict[str, Any] = {
        "pattern": str(call_input.get("pattern", "")),
        "path": str(call_input.get("path", ".")),
        "output_mode": mode,
    }
    if call_input.get("glob"):
        data["glob"] = call_input["glob"]
    lines = [line for line in text.splitlines() if line.strip()]
    if mode == "content":
        matches = []
        for line in lines:
            m = _GREP_LINE.match(line)
            if m:
                matches.append({"file": m[1], "line": int(m[2]), "text": m[3]})
        if not matches and lines:
            raise ValueError("content lines without file:line:")
        data["matches"] = matches
        data["total_matches"] = len(matches)
        data["files_matched"] = len({m["file"] for m in matches})
        return data
    files = [line for line in lines if not line.startswith(_GREP_NOTES)]
    if mode == "count":
        # ``path:N`` per file; a search of one file records the bare ``N``.
        counted: list[tuple[str, int]] = []
        for line in files:
            name, _, number = line.rpartition(":")
            if number.strip().isdigit():
                counted.append((name or data["path"], int(number)))
        data["counts"] = [{"file": f, "count": n} for f, n in counted]
        files = [f for f, _ in counted]
    data["files"] = files
    data["files_matched"] = len(files)
    return data


def _ls(
    call_input: dict[str, Any], text: str, rec: dict[str, Any], is_error: bool
) -> dict[str, Any]:
    entries = []
    for line in text.splitlines():
        name = line.strip().lstrip("- ").strip()
        if not name or line.startswith("NOTE"):
            continue
        entries.append({"name": name.rstrip("/"), "type": "dir" if name.endswith("/") else "file"})
    dirs = sum(e["type"] == "dir" for e in entries)
    return {
        "path": str(call_input.get("path", ".")),
        "total": len(entries),
        "dirs": dirs,
        "files": len(entries) - dirs,
        "entries": entries,
    }


_MARKS = {"completed": "✓", "in_progress": "→", "pending": "☐"}


def _todo(
    call_input: dict[str, Any], text: str, rec: dict[str, Any], is_error: bool
) -> dict[str, Any]:
    todos = call_input["todos"]
    recap = "; ".join(f"{_MARKS.get(t.get('status'), '☐')} {t['content']}" for t in todos)
    return {"recap": recap or text}


_DATA = {
    "Bash": _bash,
    "Read": _read,
    "Edit": _edit,
    "MultiEdit": _edit,
    "Write": _write,
    "Glob": _glob,
    "Grep": _grep,
    "LS": _ls,
    "TodoWrite": _todo,
}
