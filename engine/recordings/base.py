"""What every format's parser produces: a flat list of :class:`Item` plus what it skipped.

A parser reads the whole file and either returns a :class:`Parsed` or raises
:class:`ImportError_` with the problems it found (by line number where the format has lines);
nothing is stored before the whole file has parsed (see :mod:`engine.recordings.writer`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from engine.models import Session, ToolCall, Usage
from engine.validation import usage_from

MAX_PROBLEMS_SHOWN = 5


class ImportError_(ValueError):
    """The input cannot be imported; ``problems`` lists each one, ``fmt`` what it looked like."""

    def __init__(self, problems: list[str], fmt: str | None = None, source: str = "") -> None:
        self.problems = problems
        self.fmt = fmt
        self.source = source
        shown = "; ".join(problems[:MAX_PROBLEMS_SHOWN])
        more = len(problems) - MAX_PROBLEMS_SHOWN
        if more > 0:
            shown += f"; and {more} more"
        head = f"{source}: " if source else ""
        head += f"looks like {fmt} but cannot be imported: " if fmt else ""
        super().__init__(head + shown)


ItemKind = Literal["user", "assistant", "result", "summary"]


@dataclass
class Item:
    """One conversation event of a recorded session, in order."""

    kind: ItemKind
    line: int
    created_at: datetime
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    thinking: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage | None = None
    tool_use_id: str = ""
    is_error: bool = False
    recorded: dict[str, Any] | None = None
    """Structured result the recording kept beside the text (Claude Code's ``toolUseResult``,
    a trajectory's return code)."""
    demonstration: bool = False
    model: str = ""
    """For assistant steps: the model that answered, when the recording says."""
    trigger: str = "auto"
    """For summaries: what started the recorded compaction (``auto`` / ``manual``)."""
    pre_tokens: int | None = None
    """For summaries: the recorded context size before the compaction."""
    recorded_call: dict[str, Any] | None = None
    """For summaries: the call that wrote it (Claude Code's ``agent-acompact-*`` file):
    ``agent_id``, ``model``, ``usage``; kept in the compaction's stats."""
    closes_round: bool = False
    """For results: the round ended normally after this result though its step called a
    tool (aider applies an answer's edits itself; the model is not asked again)."""


@dataclass
class Parsed:
    """A whole file parsed: its items and the bookkeeping the report shows."""

    fmt: str
    items: list[Item]
    title: str
    records: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    finished: bool | None = None
    """A trajectory's exit status said the run ended normally (None: decide from the last
    assistant message)."""
    cwd: str = ""
    """The working directory the recording names (the imported session's workspace)."""
    agent_id: str | None = None
    """A subagent's id (Claude Code ``agentId``)."""
    source_session: str = ""
    """The recording's own session id."""
    children: list[Parsed] = field(default_factory=list)
    """Subagents, each stored as its own session linked to this one."""
    conversation_records: int = 0
    """User / assistant records read (the import warns when far fewer messages are stored)."""
    model: str = ""
    """The model the recording names (the session's ``model``); empty when it names none."""
    recorded: dict[str, Any] = field(default_factory=dict)
    """Facts about the recorded session beyond its conversation (its own id, ``cwd``, the
    agent's version, the context window), kept in the first user message's
    ``meta.origin["recorded"]`` and shown in the import report."""
    hidden: list[dict[str, Any]] = field(default_factory=list)
    """What the original agent sent before the first user input that is not conversation
    (Codex's developer messages and environment context): ``{line, role, text}`` each, kept in
    the first user message's ``meta.origin["hidden_prefix"]``."""
    agent_version: str = ""
    """The version of the agent that wrote the file, as it says (``version``,
    ``cli_version``): named beside what was not read."""


@dataclass
class ImportReport:
    session: Session
    fmt: str = ""
    path: str = ""
    rounds: int = 0
    messages: int = 0
    missing_results: int = 0
    usage_records: int = 0
    observations: int = 0
    compactions: int = 0
    records: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    tokens_raw: int = 0
    """Tokens of everything recorded: texts, tool inputs, full results, thinking."""
    tokens_stored: int = 0
    """Tokens of history as stored (tool results in their A3 form; thinking not counted)."""
    thinking_tokens: int = 0
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    children: list[ImportReport] = field(default_factory=list)
    """The subagents stored as sessions linked to this one."""
    recorded: dict[str, Any] = field(default_factory=dict)
    """:attr:`Parsed.recorded`: the recorded session's own id, cwd, agent version..."""
    round_starts: list[int] = field(default_factory=list)
    """For each round written, the position in ``Parsed.items`` of the item that opened it."""

    def as_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session.id,
            "parent_session_id": self.session.parent_session_id,
            "agent_id": self.session.agent_id,
            "path": self.path,
            "format": self.fmt,
            "rounds": self.rounds,
            "messages": self.messages,
            "missing_results": self.missing_results,
            "usage_records": self.usage_records,
            "observations": self.observations,
            "compactions": self.compactions,
            "records_read": self.records,
            "records_skipped": self.skipped,
            "tokens_raw": self.tokens_raw,
            "tokens_stored": self.tokens_stored,
            "thinking_tokens": self.thinking_tokens,
            "warnings": self.warnings,
            "subagents": [c.as_json() for c in self.children],
            "model": self.session.model,
            "recorded": self.recorded,
        }


def title_of(items: list[Item], name: str) -> str:
    """A session's title: the first line of its first user input, else ``name`` (the file's)."""
    text = next((i.text for i in items if i.kind == "user"), name).strip()
    return text.splitlines()[0] if text else name


def parse_time(value: Any, line: int, problems: list[str]) -> datetime | None:
    """A recorded ISO timestamp as an aware datetime (naive ones are taken as UTC)."""
    if value is None:
        return None
    if not isinstance(value, str):
        problems.append(f"line {line}: timestamp must be a string, got {value!r}")
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        problems.append(f"line {line}: bad timestamp {value!r}")
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def usage_of(raw: Any) -> Usage | None:
    """A recorded ``usage`` object, or None when absent or all zero (``<synthetic>`` turns)."""
    if raw is None:
        return None
    usage = usage_from(raw)  # one line naming the bad field ("usage.input_tokens must be…")
    if not (usage.input_side or usage.output_tokens):
        return None
    return usage


def result_text(content: Any) -> str:
    """The text of a ``tool_result`` block's content (a string or text blocks)."""
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "image":
                    parts.append("[image]")
        return "\n".join(parts)
    return "" if content is None else str(content)
