"""What an archived segment says, gathered deterministically, and the extractive A5 summary.

:func:`segment_facts` reads a segment's messages (with the artifact ledger,
:mod:`engine.compaction.ledger`) into :class:`SegmentFacts`: requests, milestones, decisions,
errors met, files read and changed, commands. Every extractive summary is written from these
facts: :func:`extractive_summary` fills seed 000's A5 template (the offline provider's summary,
and the fallback when the model call fails); the other strategies' forms are in
:mod:`engine.compaction.strategies.formats`.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.compaction.folding import PrefixFolds
from engine.compaction.ledger import (
    DECISION_KEY_CHARS,
    REQUEST_KEY_CHARS,
    Ledger,
    LedgerFold,
    command_key,
    error_line,
    strip_markup,
)
from engine.messages.tokens import count_text, ensure_counted
from engine.models import Message
from prompts.agents_prompts.summary_prompt import (
    RECALL_NOTE,
    SEGMENT_PENDING,
    SUMMARY_TEMPLATE,
)

SUMMARY_BUDGET = 0.10
"""An extractive A5 summary aims at no more than this share of its segment's tokens."""
_DECISION = re.compile(
    r"\b(decid\w*|chose|choose|chosen|will use|switch\w* to|instead of|abandon\w*|prefer\w*)\b",
    re.I,
)
_PREFERENCE = re.compile(r"\b(always|never|prefer|don't|do not|must not|make sure)\b", re.I)
_STACK_BY_SUFFIX = {
    ".py": "Python",
    ".ts": "TypeScript",
    ".tsx": "TypeScript/React",
    ".js": "JavaScript",
    ".rs": "Rust",
    ".go": "Go",
    ".java": "Java",
    ".rb": "Ruby",
    ".c": "C",
    ".cpp": "C++",
    ".md": "Markdown",
    ".toml": "TOML",
    ".json": "JSON",
    ".sh": "shell scripts",
}
_MAX_ITEM = 160


def time_label(value: datetime | None) -> str:
    """How summaries write a time: ``2026-11-22 14:05 UTC``."""
    return "unknown" if value is None else value.strftime("%Y-%m-%d %H:%M UTC")


def shorten(text: str, limit: int = _MAX_ITEM) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _user_text(msg: Message) -> str:
    """The user's own words: system-reminders and IDE markup removed."""
    return strip_markup(msg.content)


def _parse_tool(msg: Message) -> dict[str, Any]:
    try:
        value = json.loads(msg.content)
    except (json.JSONDecodeError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class SegmentFacts:
    """What an archived segment says, gathered deterministically from its messages.

    Every extractive summary (A5 for seed 000, XML tags, JSON or plain text for the other
    strategies) renders these same facts in its own format. Files, commands, errors and
    requests come from the artifact ledger (:mod:`engine.compaction.ledger`).
    """

    start: datetime | None
    cutoff: datetime | None
    goals: list[str] = field(default_factory=list)
    """Every request, markup removed, in order (each cut at 160 characters)."""
    milestones: list[str] = field(default_factory=list)
    """``goal - first line of the answer`` for each finished round."""
    decisions: list[str] = field(default_factory=list)
    learnings: list[str] = field(default_factory=list)
    """``Tool failed (code): the exception / error line``."""
    preferences: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    """Path -> ``edited`` / ``written`` / ``changed through Bash (sed -i)``..."""
    files_read: list[str] = field(default_factory=list)
    """Paths read (Read, or cat/head/tail in Bash) and not changed in the segment."""
    commands: list[str] = field(default_factory=list)
    """Bash commands run (first line, at most 80 characters)."""
    stack: list[str] = field(default_factory=list)
    used_bash: bool = False
    open_goal: str | None = None
    """The last request when its round has no final answer in the segment (work in progress)."""

    def joined(self, items: list[str], limit: int = 5) -> str:
        uniq = list(dict.fromkeys(items))
        if not uniq:
            return "none recorded"
        more = f" (+{len(uniq) - limit} more)" if len(uniq) > limit else ""
        return "; ".join(uniq[:limit]) + more

    @property
    def goal_text(self) -> str:
        text = self.goals[0] if self.goals else "none recorded"
        if len(self.goals) > 1:
            text += f" (then: {self.joined(self.goals[1:], 4)})"
        return text


def _error_of(msg: Message, commands: dict[str, str]) -> str | None:
    """``Tool failed (code): line`` for a failed tool message, from its compressed form."""
    data = _parse_tool(msg)
    error = data.get("error") if isinstance(data.get("error"), dict) else None
    if data.get("status") != "error" or not error or msg.meta.interrupted:
        return None
    raw = data.get("data")
    body: dict[str, Any] = raw if isinstance(raw, dict) else {}
    # The compressed Bash form keeps the exception line itself (engine.compaction.tool_results);
    # imported
    # results keep the whole output in the error message.
    line = str(body.get("error_line") or "") or error_line(str(error.get("message") or ""))
    tool = msg.meta.tool_name or "tool"
    command = str(body.get("command") or commands.get(msg.meta.tool_use_id or "", ""))
    if tool == "Bash" and command:
        tool = f"Bash `{command_key(command)}`"
    return shorten(f"{tool} failed ({error.get('code')}): {line}", 240)


@functools.lru_cache(maxsize=16_384)
def _matching(text: str, pattern: re.Pattern[str], separators: str) -> tuple[str, ...]:
    """The sentences of ``text`` (split at ``separators``) that ``pattern`` finds, shortened;
    kept per text: a re-compacting strategy summarises the same archived messages again."""
    return tuple(shorten(s) for s in re.split(separators, text) if pattern.search(s))


def _stack_names(path: str) -> list[str]:
    """The languages and formats a path's suffix names (seed-agnostic: ``Project stack``)."""
    return [name for suffix, name in _STACK_BY_SUFFIX.items() if path.endswith(suffix)]


def _note_stack(stack: list[str], names: list[str]) -> None:
    stack += [name for name in dict.fromkeys(names) if name not in stack]


class _FactsFold:
    """:func:`segment_facts`' pass over a segment, one message at a time: the ledger so far,
    the request being worked on, and every list the facts are made of, only ever appended to
    (so a longer segment that begins with the same messages adds only the rest)."""

    def __init__(self) -> None:
        self.ledger = LedgerFold()
        self.current_goal: str | None = None
        self.answered = True
        self.commands: dict[str, str] = {}
        """Bash commands by tool_use id (an imported result does not repeat its command)."""
        self.goals: list[str] = []
        self.milestones: list[str] = []
        self.decisions: list[str] = []
        self.learnings: list[str] = []
        self.preferences: list[str] = []
        self.call_stack: list[str] = []
        """What the paths of the tool calls name, in order of first appearance."""
        self.used_bash = False

    def add(self, msg: Message) -> None:
        self.ledger.add(msg)
        if msg.role == "user":
            text = _user_text(msg)
            self.current_goal = text
            self.answered = False
            if text:
                self.goals.append(shorten(text))
                self.preferences += _matching(text, _PREFERENCE, r"(?<=[.!?])\s+")
        elif msg.role == "assistant":
            for call in msg.tool_calls:
                path = str(call.input.get("file_path") or call.input.get("path") or "")
                if path:
                    _note_stack(self.call_stack, _stack_names(path))
                if call.name == "Bash":
                    self.used_bash = True
                    self.commands[call.id] = str(call.input.get("command") or "")
            if msg.meta.final and msg.content.strip():
                self.answered = True
                answer = msg.content.strip().splitlines()[0]
                goal = shorten(self.current_goal or "answered", 80)
                self.milestones.append(f"{goal} - {shorten(answer, 120)}")
            self.decisions += _matching(msg.content, _DECISION, r"(?<=[.!?])\s+|\n+")
        elif msg.role == "tool":
            learning = _error_of(msg, self.commands)
            if learning is not None:
                self.learnings.append(learning)

    def facts(self, start: datetime | None, cutoff: datetime | None) -> SegmentFacts:
        """The facts of the messages added so far (lists of their own)."""
        facts = SegmentFacts(start=start, cutoff=cutoff)
        ledger = Ledger(self.ledger.items)
        for item in ledger.of("file_changed"):
            how = item.detail
            if how.startswith("Bash: "):
                previous = facts.files.get(item.key, "")
                tool = how.removeprefix("Bash: ")
                how = (
                    previous[:-1] + f", {tool})"
                    if previous.startswith("changed through Bash")
                    else f"changed through Bash ({tool})"
                )
            facts.files[item.key] = how
        changed = set(facts.files)
        facts.files_read = [i.key for i in ledger.of("file_read") if i.key not in changed]
        facts.commands = [i.key for i in ledger.of("command")]
        # the ledger's paths name the stack first, then the calls' own paths
        for path in [*facts.files, *facts.files_read]:
            _note_stack(facts.stack, _stack_names(path))
        _note_stack(facts.stack, self.call_stack)
        facts.goals = list(self.goals)
        facts.milestones = list(self.milestones)
        facts.decisions = list(self.decisions)
        facts.learnings = list(self.learnings)
        facts.preferences = list(self.preferences)
        facts.used_bash = self.used_bash
        if not self.answered and self.current_goal:
            facts.open_goal = shorten(self.current_goal)
        return facts


_FOLDS: PrefixFolds[_FactsFold] = PrefixFolds(_FactsFold, _FactsFold.add)
"""The facts of the segments summarised last: a re-compaction folds in only what it adds."""


def segment_facts(
    messages: list[Message],
    focus: str | None = None,
    start: datetime | None = None,
    cutoff: datetime | None = None,
) -> SegmentFacts:
    """Gather the facts every extractive summary is written from."""
    start = start or (messages[0].created_at if messages else None)
    cutoff = cutoff or (messages[-1].created_at if messages else None)
    facts = _FOLDS.read(messages, lambda fold: fold.facts(start, cutoff))
    if focus:
        words = {w.lower() for w in re.findall(r"[A-Za-z0-9_]{4,}", focus)}
        relevant = [
            shorten(_user_text(m) if m.role == "user" else m.content)
            for m in messages
            if m.role in ("user", "assistant") and any(w in m.content.lower() for w in words)
        ]
        facts.decisions.insert(0, f"Focus requested: {shorten(focus)}")
        facts.decisions[1:1] = relevant[:5]
    return facts


def segment_ledger(messages: list[Message]) -> Ledger:
    """:func:`~engine.compaction.ledger.extract_ledger` of ``messages`` (no observations),
    from the same folds as :func:`segment_facts`."""
    return _FOLDS.read(messages, lambda fold: fold.ledger.ledger())


@dataclass(frozen=True)
class _A5Limits:
    """How much of each list an A5 summary writes; the stages get stricter to fit a budget."""

    item: int
    """Characters per request, decision and learning."""
    milestones: int
    decisions: int
    learnings: int


_A5_STAGES = (
    _A5Limits(item=_MAX_ITEM, milestones=12, decisions=12, learnings=20),
    _A5Limits(item=100, milestones=6, decisions=8, learnings=12),
    _A5Limits(item=REQUEST_KEY_CHARS + 1, milestones=3, decisions=5, learnings=8),
    _A5Limits(item=REQUEST_KEY_CHARS + 1, milestones=1, decisions=3, learnings=5),
)


def _render_a5(facts: SegmentFacts, limits: _A5Limits, segment: str) -> str:
    def clip(text: str) -> str:
        return shorten(text, limits.item)

    goals = list(dict.fromkeys(clip(g) for g in facts.goals))
    goal = goals[0] if goals else "none recorded"
    if len(goals) > 1:
        goal += f" (then: {'; '.join(goals[1:])})"
    commands = list(dict.fromkeys(facts.commands))
    environment = (
        "shell commands run through Bash: " + "; ".join(f"`{c}`" for c in commands)
        if commands
        else ("shell commands run through Bash" if facts.used_bash else "none recorded")
    )
    milestones = facts.milestones[-limits.milestones :]
    milestone_lines = "\n".join(f"* [✓] {clip(m)}" for m in milestones) or "* none recorded"
    file_lines = [f"* `{p}`: {what} in this segment." for p, what in facts.files.items()]
    if facts.files_read:
        file_lines.append(
            "* Read, not modified: " + ", ".join(f"`{p}`" for p in facts.files_read) + "."
        )
    # A decision is named by its first 100 characters (engine.compaction.ledger): never cut shorter.
    decisions = [shorten(d, max(limits.item, DECISION_KEY_CHARS + 1)) for d in facts.decisions]
    body = SUMMARY_TEMPLATE.format(
        start=time_label(facts.start),
        cutoff=time_label(facts.cutoff),
        goal=goal,
        stack=", ".join(facts.stack) if facts.stack else "none recorded",
        environment=environment,
        milestones=milestone_lines,
        decisions=facts.joined(decisions, limits.decisions),
        learnings=facts.joined(facts.learnings, limits.learnings),
        preferences=facts.joined([clip(p) for p in facts.preferences]),
        files="\n".join(file_lines) or "* none modified",
    )
    return f"{body}\n\n{RECALL_NOTE.format(segment=segment)}"


def extractive_summary(
    messages: list[Message],
    focus: str | None = None,
    start: datetime | None = None,
    cutoff: datetime | None = None,
    segment: str = SEGMENT_PENDING,
) -> str:
    """Fill the A5 template deterministically from ``messages``.

    Every request, file read or changed (Bash included), command and error line of the
    segment is named; within :data:`SUMMARY_BUDGET` of the segment's tokens when it can be,
    by writing fewer milestones, decisions and learnings and shorter items first.
    """
    facts = segment_facts(messages, focus, start, cutoff)
    budget = SUMMARY_BUDGET * sum(ensure_counted(m) for m in messages)
    text = ""
    for limits in _A5_STAGES:
        text = _render_a5(facts, limits, segment)
        if count_text(text) <= budget:
            break
    return text
