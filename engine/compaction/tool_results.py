"""ToolResultCompressor: what history keeps of a tool result (seed A3 table, C1 fields).

The model saw the whole result in the scratchpad; history keeps a rule-based summary:
``status`` always, ``error`` (code and message, whole) on errors, and ``data`` compressed per
tool. ``text``, ``stats`` and ``context`` are dropped. Whenever something is cut the form says
so with ``truncated: true`` and a count of what was left out (``omitted`` entries, matches,
lines...). Every limit comes from :class:`~engine.settings.config.Settings`.

| tool | kept |
|---|---|
| LS | directory, counts, first ``ls_max_entries`` entries |
| Glob | pattern, match count, first ``glob_max_entries`` matches |
| Grep | summary, first ``grep_max_lines`` matches as ``file:line: text`` |
| Read | the numbered fragment (current range, at most ``read_max_lines``), mtime, note |
| Edit / MultiEdit | file, changed ranges, the diff if at most ``snippet_max_lines`` lines |
| Write | file, created/overwritten, line count, first lines of a new file |
| Bash | a clean short stdout (up to ``ls_max_entries`` lines) whole; else exit code, sizes,
  stdout counts and first/last line, stderr tail, error line |
| TodoWrite | the recap |
| Recall | query, hit count, first ``grep_max_lines`` hits (segment, round, message, snippet) |
| others | ``data`` whole if its JSON fits ``generic_max_chars``, else a cut preview |
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from engine.compaction.ledger import error_line
from engine.settings.config import Settings
from tools.base import ToolResult
from tools.recall import hit_line

RECALL_HIT_CHARS = 300
"""A recalled passage kept in history is cut here (its snippet is about 24 words)."""

Form = dict[str, Any]


_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""Compact JSON, UTF-8 kept; the encoder made once (a history import makes a form a result)."""


class ToolResultCompressor:
    """Turns a :class:`ToolResult` into the dict (and JSON) that a ``tool`` message holds."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._rules: dict[str, Callable[[dict[str, Any]], Form]] = {
            "LS": self._ls,
            "Glob": self._glob,
            "Grep": self._grep,
            "Read": self._read,
            "Edit": self._edit,
            "MultiEdit": self._edit,
            "Write": self._write,
            "Bash": self._bash,
            "TodoWrite": self._todo,
            "Recall": self._recall,
        }

    def compress(self, tool_name: str, result: ToolResult) -> dict[str, Any]:
        """The seed-A3 history form: ``{status, data, error?}``."""
        form: dict[str, Any] = {"status": result.status}
        rule = self._rules.get(tool_name)
        data = result.data or {}
        # Error envelopes carry small, tool-specific data (Bash keeps its full output data).
        if rule is not None and (result.ok or tool_name == "Bash") and data:
            try:
                form["data"] = rule(data)
            except (KeyError, TypeError, ValueError, AttributeError):
                form["data"] = self._generic(data)
        elif data:
            form["data"] = self._generic(data)
        else:
            form["data"] = {}
        if result.status == "error" and result.error is not None:
            form["error"] = {"code": result.error.code, "message": result.error.message}
        return form

    def to_json(self, tool_name: str, result: ToolResult) -> str:
        """The compressed form as compact JSON (what a ``tool`` message's content holds)."""
        return _compact(self.compress(tool_name, result))

    # --- per tool ----------------------------------------------------------------------

    def _ls(self, data: dict[str, Any]) -> Form:
        limit = self.settings.ls_max_entries
        entries = data.get("entries", [])
        names = [e["name"] + ("/" if e.get("type") == "dir" else "") for e in entries[:limit]]
        form: Form = {
            "path": data["path"],
            "total": data["total"],
            "dirs": data.get("dirs", 0),
            "files": data.get("files", 0),
            "entries": names,
        }
        return _mark(form, data["total"], len(names))

    def _glob(self, data: dict[str, Any]) -> Form:
        limit = self.settings.glob_max_entries
        matches = data.get("matches", [])[:limit]
        form: Form = {
            "pattern": data["pattern"],
            "path": data.get("path", "."),
            "total": data["total"],
            "matches": matches,
        }
        return _mark(form, data["total"], len(matches))

    def _grep(self, data: dict[str, Any]) -> Form:
        limit = self.settings.grep_max_lines
        mode = data.get("output_mode", "content")
        files = data.get("files_matched", 0)
        form: Form = {"pattern": data["pattern"], "path": data.get("path", ".")}
        if data.get("glob"):
            form["glob"] = data["glob"]
        if mode == "files_with_matches":
            kept = data.get("files", [])[:limit]
            form["summary"] = f"{files} files match"
            form["files"] = kept
            return _mark(form, files, len(kept))
        total = data.get("total_matches", 0)
        form["summary"] = f"{total} matching lines in {files} files"
        if mode == "count":
            counts = data.get("counts", [])[:limit]
            form["counts"] = [f"{c['file']}: {c['count']}" for c in counts]
            return _mark(form, files, len(counts))
        max_chars = self.settings.read_max_line_chars
        lines = [
            f"{m['file']}:{m['line']}: {_clip(m['text'], max_chars)}"
            for m in data.get("matches", [])[:limit]
        ]
        form["matches"] = lines
        return _mark(form, total, len(lines))

    def _read(self, data: dict[str, Any]) -> Form:
        limit = self.settings.read_max_lines
        content: str = data.get("content", "")
        lines = content.split("\n") if content else []
        start = data.get("start_line", 1)
        form: Form = {
            "file": data["file"],
            "mtime": data.get("mtime"),
            "lines": f"{start}-{data.get('end_line', start)}",
            "total_lines": data.get("total_lines"),
        }
        if len(lines) > limit:
            lines = lines[:limit]
            form["lines"] = f"{start}-{start + limit - 1}"
            form["truncated"] = True
            form["omitted_lines"] = len(content.split("\n")) - limit
        form["content"] = _compact_numbers("\n".join(lines))
        for key in ("encoding", "externally_modified", "note"):
            if key in data:
                form[key] = data[key]
        return form

    def _edit(self, data: dict[str, Any]) -> Form:
        form: Form = {
            "file": data["file"],
            "replacements": data.get("replacements"),
            "lines_added": data.get("lines_added", 0),
            "lines_removed": data.get("lines_removed", 0),
        }
        if "edits" in data:
            form["edits"] = data["edits"]
        form |= self._changes(data)
        return form

    def _write(self, data: dict[str, Any]) -> Form:
        form: Form = {
            "file": data["file"],
            "action": data["action"],
            "lines": data.get("lines"),
            "bytes": data.get("bytes"),
        }
        if data["action"] == "created":
            head = str(data.get("head", "")).splitlines()
            total = data.get("lines") or len(head)
            keep = (
                self.settings.snippet_max_lines
                if total <= self.settings.snippet_max_lines
                else self.settings.snippet_min_lines
            )
            form["snippet"] = "\n".join(head[:keep])
            return _mark(form, total, min(keep, len(head)), key="omitted_lines")
        form["lines_added"] = data.get("lines_added", 0)
        form["lines_removed"] = data.get("lines_removed", 0)
        form |= self._changes(data)
        return form

    def _changes(self, data: dict[str, Any]) -> Form:
        """Changed ranges and the diff when it is small; big diffs only summarised."""
        out: Form = {}
        ranges: list[str] = data.get("changed_ranges", [])
        max_lines = self.settings.snippet_max_lines
        out["changed_ranges"] = ranges[:max_lines]
        if len(ranges) > max_lines:
            out["truncated"] = True
            out["omitted_ranges"] = len(ranges) - max_lines
        diff: str = data.get("diff", "")
        diff_lines = diff.splitlines()
        if len(diff_lines) <= max_lines:
            out["diff"] = diff
        else:
            out["truncated"] = True
            out["diff_lines"] = len(diff_lines)
            out["diff_omitted"] = True
        return out

    def _bash(self, data: dict[str, Any]) -> Form:
        max_chars = self.settings.read_max_line_chars
        tail_n = self.settings.bash_stderr_tail_lines
        stdout: str = data.get("stdout", "")
        stderr: str = data.get("stderr", "")
        out_lines = stdout.splitlines()
        err_lines = stderr.splitlines()
        short = 2 < len(out_lines) <= self.settings.ls_max_entries
        if short and not stderr and data.get("exit_code") == 0 and not data.get("stdout_truncated"):
            if all(len(line) <= max_chars for line in out_lines):
                # A short listing (`ls`, `git status`) is kept whole, without the command (its
                # call holds it) or empty counts: first and last line with counts lost most
                # names and cost more tokens than all of them.
                return {"exit_code": 0, "stdout": "\n".join(out_lines)}
        form: Form = {
            "command": _clip(data.get("command", ""), max_chars),
            "exit_code": data.get("exit_code"),
            "stdout": {
                "lines": data.get("stdout_lines", len(out_lines)),
                "chars": data.get("stdout_chars", len(stdout)),
            },
            "stderr": {
                "lines": data.get("stderr_lines", len(err_lines)),
                "chars": data.get("stderr_chars", len(stderr)),
            },
        }
        for flag in ("timed_out", "interrupted"):
            if data.get(flag):
                form[flag] = True
        if data.get("exit_code") not in (0, None):
            # What went wrong, even when it is far from the stderr tail (a traceback followed
            # by pages of logs): the summary and the ledger name errors by this line.
            line = error_line(f"{stdout}\n{stderr}")
            if line:
                form["error_line"] = _clip(line, max_chars)
        cut = False
        if out_lines:
            form["stdout"]["first_line"] = _clip(out_lines[0], max_chars)
            if len(out_lines) > 1:
                form["stdout"]["last_line"] = _clip(out_lines[-1], max_chars)
            ends = (out_lines[0], out_lines[-1])
            cut = len(out_lines) > 2 or any(len(line) > max_chars for line in ends)
        if err_lines:
            tail = err_lines[-tail_n:]
            form["stderr_tail"] = "\n".join(_clip(line, max_chars) for line in tail)
            total_err = form["stderr"]["lines"]
            if total_err > len(tail):
                form["omitted_stderr_lines"] = total_err - len(tail)
                cut = True
        if data.get("stdout_truncated") or data.get("stderr_truncated"):
            cut = True
        if cut:
            form["truncated"] = True
        return form

    def _todo(self, data: dict[str, Any]) -> Form:
        return {"recap": data["recap"]}

    def _recall(self, data: dict[str, Any]) -> Form:
        """Like Grep: the query, the count, the first ``grep_max_lines`` hits as lines."""
        limit = self.settings.grep_max_lines
        hits = data.get("hits", [])
        lines = [_clip(hit_line(h), RECALL_HIT_CHARS) for h in hits[:limit]]
        form: Form = {"query": data["query"], "total": data["total"], "hits": lines}
        return _mark(form, data["total"], len(lines))

    def _generic(self, data: dict[str, Any]) -> Form:
        """Unknown tools (and error data): whole if small, else a marked preview."""
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
        limit = self.settings.generic_max_chars
        if len(text) <= limit:
            return dict(data)
        return {"truncated": True, "preview": text[:limit], "omitted_chars": len(text) - limit}


def _mark(form: Form, total: int, kept: int, key: str = "omitted") -> Form:
    """Add ``truncated`` and the count of what was left out when ``kept < total``."""
    if total > kept:
        form["truncated"] = True
        form[key] = total - kept
    return form


def _clip(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[:max_chars] + "…"


_NUMBERED = re.compile(r"^ *(\d+)\t", re.M)


def _compact_numbers(text: str) -> str:
    """``"   120\tcode"`` → ``"120: code"`` on every line of ``text``.

    Read shows the model ``cat -n`` lines; in history's JSON the padding and the tab (escaped
    as ``\\t``) would make the kept fragment cost more tokens than the observation itself
    (about 15 % more on a 500-line Python file). The line numbers stay, as A3 requires. One
    pass over the whole fragment (a match cannot cross a line), with a function for the
    replacement: a ``\\1`` template is expanded in Python per match, 4x slower on an import.
    A text without a tab has no such line and is returned as it is, unsearched (issue 44:
    Claude Code's Read writes ``"   120→code"``, and the search tried the pattern at every
    character: 5 % of a history import's writing).
    """
    if "\t" not in text:
        return text
    return _NUMBERED.sub(lambda m: m[1] + ": ", text)
