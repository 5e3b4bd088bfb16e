"""Seed 003's two loading tools: ``chat_load_history`` and ``agent_load_context``.

Seed 003 section 5: the chat transcript (the user's view of the conversation, which compaction
never shortens) is injected as **one assistant message** before the current user message; the
execution log (``agent-context.jsonl``, one entry per run) as a **system message**. Both last
for the run in progress only (:class:`tools.injection.Injections`); the stored history and the
user's own words are never changed.

The engine hands the data over as ``ctx.chat_transcript`` and ``ctx.execution_log`` (tools
never open the database or the data folder); the ``message-window`` strategy declares the two
tools, so the agent offers them only while that strategy is on.

``data``: ``{inserted: 0 or 1, reason, loaded, total, first, last}``: ``loaded`` items (chat
messages or log entries) numbered ``first``..``last`` of ``total``; ``reason`` says why nothing
was inserted (``duplicate``, ``limit_reached``, ``empty``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from pydantic import Field

from prompts.tools.agent_load_context import DESCRIPTION as AGENT_CONTEXT_DESCRIPTION
from prompts.tools.chat_load_history import DESCRIPTION as CHAT_HISTORY_DESCRIPTION
from tools.base import ToolContext, ToolResult
from tools.common import BaseTool, ToolFailure, ToolInput, plural
from tools.injection import Injections

MAX_COUNT = 200
T = TypeVar("T")


class LoadInput(ToolInput):
    count: int = Field(
        20, ge=1, le=MAX_COUNT, description="How many to load, counting back from the newest."
    )
    offset: int = Field(0, ge=0, description="Skip this many of the newest first.")


def window(total: int, count: int, offset: int) -> tuple[int, int]:
    """``[start, end)`` of the ``count`` items before the newest ``offset`` of ``total``."""
    end = max(0, total - offset)
    return max(0, end - count), end


def fingerprint(tool: str, text: str) -> str:
    """The same text injected twice in a run is one injection (seed: ``injectedFingerprints``)."""
    return f"{tool}:{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def _bound(
    ctx: ToolContext, source: Callable[[], T] | None, what: str
) -> tuple[Injections, Callable[[], T]]:
    """The run's injections and the data source, or ``unavailable`` when the agent bound none."""
    if ctx.injections is None or source is None:
        raise ToolFailure("unavailable", f"{what} needs a stored session and a run in progress.")
    return ctx.injections, source


def _result(
    refused: str | None, total: int, start: int, end: int, done: str, nouns: tuple[str, str]
) -> ToolResult:
    """The tool's answer: what was injected, or why nothing was."""
    one, many = nouns
    loaded = end - start
    data: dict[str, Any] = {
        "inserted": 0 if refused else 1,
        "reason": refused,
        "loaded": loaded,
        "total": total,
        "first": start + 1 if loaded else None,
        "last": end if loaded else None,
    }
    if refused == "empty":
        text = f"Nothing to load: {plural(total, one, many)} in all, none in that range."
    elif refused == "duplicate":
        text = f"Already in the context: {many} {start + 1}-{end} were injected in this run."
    elif refused == "limit_reached":
        text = "Not injected: this run already holds as many injected messages as it may."
    else:
        text = f"Loaded {many} {start + 1}-{end} of {total} {done}."
    return ToolResult(status="success", data=data, text=text)


class ChatLoadHistoryTool(BaseTool):
    name: ClassVar[str] = "chat_load_history"
    description: ClassVar[str] = CHAT_HISTORY_DESCRIPTION
    input_model = LoadInput

    def execute(self, args: LoadInput, ctx: ToolContext) -> ToolResult:
        injections, load = _bound(ctx, ctx.chat_transcript, self.name)
        transcript = load()
        start, end = window(len(transcript), args.count, args.offset)
        picked = transcript[start:end]
        nouns = ("chat message", "chat messages")
        if not picked:
            return _result("empty", len(transcript), start, end, "", nouns)
        lines = [
            "Earlier chat of this session, as the user saw it (their requests and the final "
            f"answers), messages {start + 1}-{end} of {len(transcript)}:",
            "",
            *(f"{role}: {text.rstrip()}" for role, text in picked),
        ]
        text = "\n".join(lines)
        refused = injections.inject_assistant_once(fingerprint(self.name, text), text)
        done = "as one assistant message before the current user message"
        return _result(refused, len(transcript), start, end, done, nouns)


def entry_lines(entry: dict[str, Any]) -> list[str]:
    """One execution-log entry as the lines of the injected system message."""
    calls: list[dict[str, Any]] = entry.get("toolCalls", [])
    if entry.get("summary"):
        head = f"--- {plural(int(entry.get('merged', 0)), 'earlier run')}, merged"
        tools = ", ".join(
            f"{c.get('tool')} ×{c.get('count', 1)}"
            + (f" ({c['failed']} failed)" if c.get("failed") else "")
            for c in calls
        )
    else:
        head = f"--- run {entry.get('requestId', '?')}"
        tools = ", ".join(
            f"{c.get('tool')}({c.get('input', '')})" + ("" if c.get("ok", True) else " failed")
            for c in calls
        )
    lines = [head, f"user: {entry.get('userPreview', '')}"]
    if tools:
        lines.append(f"tools: {tools}")
    if entry.get("hadToolFailure"):
        lines.append("hadToolFailure: true")
    lines.append(f"output: {entry.get('outputPreview', '')}")
    return lines


class AgentLoadContextTool(BaseTool):
    name: ClassVar[str] = "agent_load_context"
    description: ClassVar[str] = AGENT_CONTEXT_DESCRIPTION
    input_model = LoadInput

    def execute(self, args: LoadInput, ctx: ToolContext) -> ToolResult:
        injections, load = _bound(ctx, ctx.execution_log, self.name)
        entries = load()
        start, end = window(len(entries), args.count, args.offset)
        picked = entries[start:end]
        nouns = ("log entry", "log entries")
        if not picked:
            return _result("empty", len(entries), start, end, "", nouns)
        lines = [
            "Agent execution context (this session's execution log, one entry per earlier run), "
            f"entries {start + 1}-{end} of {len(entries)}:",
            *(line for e in picked for line in entry_lines(e)),
        ]
        text = "\n".join(lines)
        refused = injections.inject_system_once(fingerprint(self.name, text), text)
        return _result(refused, len(entries), start, end, "as a system message", nouns)
