"""Seed 003's execution log: one JSON line per run, windowed.

After every run an entry ``{requestId, userPreview, outputPreview, toolCalls}`` is appended to
the session's ``agent-context.jsonl`` (the seed's ``.ship/memory/agent-context/<chatKey>.jsonl``).
When the file holds more than ``window`` entries, the older ones are merged into one summary
entry and the last ``window - 1`` are kept (``compactAgentExecutionIfNeeded``). The file is
rewritten through a temporary file and a rename, so a crash leaves the old or the new log.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def read_log(path: Path) -> list[dict[str, Any]]:
    """The entries of a log file (empty when there is none)."""
    if not path.is_file():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entries.append(json.loads(line))
    return entries


def merge_entries(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """One summary entry standing for ``entries`` (their count, requests and tool use)."""
    tools: dict[str, int] = {}
    merged = 0
    for e in entries:
        merged += int(e.get("merged", 1))
        for call in e.get("toolCalls", []):
            name = str(call.get("tool", "?"))
            tools[name] = tools.get(name, 0) + int(call.get("count", 1))
    return {
        "requestId": f"summary:{entries[0].get('requestId')}..{entries[-1].get('requestId')}",
        "summary": True,
        "merged": merged,
        "userPreview": " | ".join(str(e.get("userPreview", ""))[:60] for e in entries[-5:]),
        "outputPreview": str(entries[-1].get("outputPreview", ""))[:200],
        "toolCalls": [{"tool": name, "count": n} for name, n in tools.items()],
    }


def append_run(path: Path, entry: dict[str, Any], window: int) -> list[dict[str, Any]]:
    """Append ``entry``; past ``window`` entries, merge the older ones into one. Returns the log."""
    entries = [*read_log(path), entry]
    if len(entries) > window:
        keep = window - 1
        entries = [merge_entries(entries[:-keep]), *entries[-keep:]]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".jsonl.tmp")
    text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries)
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return entries
