"""Seed 003's execution log: one JSON line per run, windowed.

After every run an entry ``{requestId, userPreview, outputPreview, toolCalls, hadToolFailure}``
is appended to the session's ``agent-context.jsonl`` (the seed's
``.ship/memory/agent-context/<chatKey>.jsonl``). ``toolCalls`` is the seed's *summary* of the
run's calls (``生成 toolCalls 摘要``): per call the tool, a one-line preview of its input
(:func:`input_preview`, never the whole input: a Write's file content is not copied into the
log) and whether it succeeded; ``hadToolFailure`` says whether any call failed (seed 4.2).

When the file holds more than ``window`` entries, the older ones are merged into one summary
entry and the last ``window - 1`` are kept (``compactAgentExecutionIfNeeded``). A merged
entry's ``requestId`` is ``summary:<first>..<last>``, the first and last runs it stands for,
however many merges it went through (the range stays flat). The file is rewritten through a
temporary file and a rename, so a crash leaves the old or the new log.

The file is the record; the last logs written are also held in memory with each entry's line
(:class:`_HeldLog`), so an append serialises only what it adds (the new entry and, past the
window, the merged one) instead of reading and rewriting every entry. What is held is used only
while the file is still the one it last wrote (same inode, size and modification time): a log
changed or removed by anything else is read again.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PREVIEW_CHARS = 200
"""Characters of the user input, the answer and each call's input kept in an entry."""
FIELD_CHARS = 60
"""Characters of one input field in a call's preview before it is cut."""
SUMMARY_PREFIX = "summary:"


def input_preview(arguments: dict[str, Any], limit: int = PREVIEW_CHARS) -> str:
    """A tool call's input on one line: ``key=value`` pairs, a long value cut with its length
    (``content=def main():… (4,210 chars)``), the whole at most ``limit`` characters."""
    parts: list[str] = []
    for key, value in arguments.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        text = " ".join(text.split())
        if len(text) > FIELD_CHARS:
            text = f"{text[:FIELD_CHARS]}… ({len(text):,} chars)"
        parts.append(f"{key}={text}")
    line = ", ".join(parts)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def run_entry(
    request_id: str,
    user_input: str,
    answer: str,
    calls: Iterable[tuple[str, dict[str, Any], bool]],
) -> dict[str, Any]:
    """The log entry of one run; ``calls`` are ``(tool, input, succeeded)`` in order."""
    tool_calls = [
        {"tool": name, "input": input_preview(arguments), "ok": ok} for name, arguments, ok in calls
    ]
    return {
        "requestId": request_id,
        "userPreview": user_input[:PREVIEW_CHARS],
        "outputPreview": answer[:PREVIEW_CHARS],
        "toolCalls": tool_calls,
        "hadToolFailure": any(not c["ok"] for c in tool_calls),
    }


def read_log(path: Path) -> list[dict[str, Any]]:
    """The entries of a log file (empty when there is none)."""
    if not path.is_file():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entries.append(json.loads(line))
    return entries


def _run_range(entry: dict[str, Any]) -> tuple[str, str]:
    """The first and last run ``entry`` stands for (itself, unless it is a merged entry)."""
    request_id = str(entry.get("requestId"))
    if not entry.get("summary"):
        return request_id, request_id
    if "firstRequestId" in entry:
        return str(entry["firstRequestId"]), str(entry["lastRequestId"])
    # A log written before the range was kept flat: ``summary:summary:1..5..7``.
    while request_id.startswith(SUMMARY_PREFIX):
        request_id = request_id[len(SUMMARY_PREFIX) :]
    ids = request_id.split("..")
    return ids[0], ids[-1]


def merge_entries(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """One summary entry standing for ``entries`` (their count, requests and tool use)."""
    tools: dict[str, dict[str, Any]] = {}
    merged = 0
    for e in entries:
        merged += int(e.get("merged", 1))
        for call in e.get("toolCalls", []):
            name = str(call.get("tool", "?"))
            tally = tools.setdefault(name, {"tool": name, "count": 0})
            tally["count"] += int(call.get("count", 1))
            # a merged entry's tally carries its failures, a run's call its own outcome
            if "count" in call:
                failed = int(call.get("failed", 0))
            else:
                failed = 0 if call.get("ok", True) else 1
            if failed:
                tally["failed"] = tally.get("failed", 0) + failed
    first, last = _run_range(entries[0])[0], _run_range(entries[-1])[1]
    return {
        "requestId": f"{SUMMARY_PREFIX}{first}..{last}",
        "firstRequestId": first,
        "lastRequestId": last,
        "summary": True,
        "merged": merged,
        "userPreview": " | ".join(str(e.get("userPreview", ""))[:60] for e in entries[-5:]),
        "outputPreview": str(entries[-1].get("outputPreview", ""))[:PREVIEW_CHARS],
        "toolCalls": list(tools.values()),
        "hadToolFailure": any(bool(e.get("hadToolFailure")) for e in entries),
    }


@dataclass(frozen=True)
class _HeldLog:
    """A log as :func:`append_run` last wrote it: its entries, each one's line, and the file's
    stamp just after the write."""

    stamp: tuple[int, int, int, int]
    entries: list[dict[str, Any]]
    lines: list[str]


_HELD_LOGS = 8
"""Logs held in memory (one per session appending; the least recently written dropped)."""
_held: OrderedDict[Path, _HeldLog] = OrderedDict()
_held_lock = threading.Lock()


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    """What tells the file apart from any later version of it (None: there is none)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _line(entry: dict[str, Any]) -> str:
    return json.dumps(entry, ensure_ascii=False) + "\n"


def _current(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The log's entries and their lines: as held when the file is the one last written here,
    else read from the file (each line as it would be written again)."""
    with _held_lock:
        held = _held.get(path)
    if held is not None and held.stamp == _stamp(path):
        return held.entries, held.lines
    entries = read_log(path)
    return entries, [_line(e) for e in entries]


def append_run(path: Path, entry: dict[str, Any], window: int) -> list[dict[str, Any]]:
    """Append ``entry``; past ``window`` entries, merge the older ones into one. Returns the log
    (its entries are shared with the next append: read them, never change them)."""
    entries, lines = _current(path)
    line = _line(entry)
    # the caller's dict stays the caller's: what is held is what the line says
    entries, lines = [*entries, json.loads(line)], [*lines, line]
    if len(entries) > window:
        keep = window - 1
        merged = merge_entries(entries[:-keep])
        entries, lines = [merged, *entries[-keep:]], [_line(merged), *lines[-keep:]]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    os.replace(tmp, path)
    stamp = _stamp(path)
    with _held_lock:
        _held.pop(path, None)
        if stamp is not None:
            _held[path] = _HeldLog(stamp, entries, lines)
            while len(_held) > _HELD_LOGS:
                _held.popitem(last=False)
    return entries
