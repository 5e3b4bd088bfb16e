"""Summaries of archived history (seed 000 A5, C2, E2).

Two ways to fill the A5 template:

- the model, called with SUMMARY_PROMPT through a provider, bounded by ``summary_timeout``;
- :func:`extractive_summary`, deterministic, built from the messages alone (user goals, files
  written or edited, errors met, decisions stated). It is the offline provider's summariser and
  the fallback when the model call times out or fails, so archived rounds are always represented.
"""

from __future__ import annotations

import concurrent.futures
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from engine.compaction.ledger import (
    DECISION_KEY_CHARS,
    REQUEST_KEY_CHARS,
    command_key,
    error_line,
    extract_ledger,
    strip_markup,
)
from engine.messages.render import render_messages
from engine.messages.tokens import count_text, ensure_counted
from engine.models import Message
from prompts.agents_prompts.summary_prompt import (
    RECALL_NOTE,
    SEGMENT_PENDING,
    SUMMARY_HEADING,
    SUMMARY_PROMPT,
    SUMMARY_TEMPLATE,
)

TIMEOUT_NOTICE = "Summary generation timed out, keeping recent history only."
FAILURE_NOTICE = "Summary generation failed ({error}), keeping recent history only."
FALLBACK_MARK = "*(Fallback: extractive summary written by ctxscope; {reason}.)*"

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


def _short(text: str, limit: int = _MAX_ITEM) -> str:
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


def render_messages_for_summary(messages: list[Message]) -> str:
    """The archived messages as text for the summary call (the seed's E1 ReAct form)."""
    return render_messages(messages)


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
    return _short(f"{tool} failed ({error.get('code')}): {line}", 240)


def segment_facts(
    messages: list[Message],
    focus: str | None = None,
    start: datetime | None = None,
    cutoff: datetime | None = None,
) -> SegmentFacts:
    """Gather the facts every extractive summary is written from."""
    facts = SegmentFacts(
        start=start or (messages[0].created_at if messages else None),
        cutoff=cutoff or (messages[-1].created_at if messages else None),
    )
    current_goal: str | None = None
    answered = True
    commands: dict[str, str] = {}
    """Bash commands by tool_use id (an imported result does not repeat its command)."""

    def note_stack(path: str) -> None:
        for suffix, name in _STACK_BY_SUFFIX.items():
            if path.endswith(suffix) and name not in facts.stack:
                facts.stack.append(name)

    ledger = extract_ledger(messages)
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
    for path in [*facts.files, *facts.files_read]:
        note_stack(path)

    for msg in messages:
        if msg.role == "user":
            text = _user_text(msg)
            current_goal = text
            answered = False
            if text:
                facts.goals.append(_short(text))
                for sentence in re.split(r"(?<=[.!?])\s+", text):
                    if _PREFERENCE.search(sentence):
                        facts.preferences.append(_short(sentence))
        elif msg.role == "assistant":
            for call in msg.tool_calls:
                path = str(call.input.get("file_path") or call.input.get("path") or "")
                if path:
                    note_stack(path)
                if call.name == "Bash":
                    facts.used_bash = True
                    commands[call.id] = str(call.input.get("command") or "")
            if msg.meta.final and msg.content.strip():
                answered = True
                answer = msg.content.strip().splitlines()[0]
                goal = _short(current_goal or "answered", 80)
                facts.milestones.append(f"{goal} - {_short(answer, 120)}")
            for sentence in re.split(r"(?<=[.!?])\s+|\n+", msg.content):
                if _DECISION.search(sentence):
                    facts.decisions.append(_short(sentence))
        elif msg.role == "tool":
            learning = _error_of(msg, commands)
            if learning is not None:
                facts.learnings.append(learning)
    if not answered and current_goal:
        facts.open_goal = _short(current_goal)

    if focus:
        words = {w.lower() for w in re.findall(r"[A-Za-z0-9_]{4,}", focus)}
        relevant = [
            _short(_user_text(m) if m.role == "user" else m.content)
            for m in messages
            if m.role in ("user", "assistant") and any(w in m.content.lower() for w in words)
        ]
        facts.decisions.insert(0, f"Focus requested: {_short(focus)}")
        facts.decisions[1:1] = relevant[:5]
    return facts


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
        return _short(text, limits.item)

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
    decisions = [_short(d, max(limits.item, DECISION_KEY_CHARS + 1)) for d in facts.decisions]
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


class Summariser(Protocol):
    """What SummaryCompressor needs from a provider (see engine.llm.base.Provider)."""

    is_model: bool

    def summarize(
        self,
        messages: list[Message],
        prompt: str,
        focus: str | None,
        timeout: float,
        render: Callable[[Sequence[Message]], str] | None = None,
    ) -> str: ...


def _not_empty(content: str) -> str | None:
    return None if content.strip() else "the summary is empty"


@dataclass(frozen=True)
class SummarySpec:
    """How one strategy's summary is written, checked, and replaced when the call fails."""

    form: str
    """What the summary is: ``A5 template``, ``XML tags``, ``JSON``, ``structured text``."""
    prompt: str
    """The summary call's instructions (the system prompt of a separate call)."""
    extractive: Callable[[list[Message], str | None], str]
    """The deterministic summary in this form: the offline provider's, and the fallback."""
    finish: Callable[[str, list[Message]], str] = lambda content, _messages: content.strip()
    """Applied to a model's answer before it is checked (A5: restore a lost heading)."""
    check: Callable[[str], str | None] = _not_empty
    """A problem with a model's answer, or None when it is acceptable."""
    render: Callable[[Sequence[Message]], str] | None = None
    """How the archived messages are written for the call; None: the seed-000 E1 text form."""
    on_failure: str = "extractive"
    """``extractive``: the extractive summary stands in (seed 000); ``skip``: no compaction,
    history untouched (seed 004 F-007)."""
    max_retries: int = 0
    """Further attempts after a failed call (seed 004: ``COMPACT_MAX_RETRIES`` = 2)."""
    retry_delay: float = 1.0
    """First wait between attempts; doubled each time (seed 004 F-007's simple backoff)."""


A5_SPEC = SummarySpec(
    form="A5 template",
    prompt=SUMMARY_PROMPT,
    extractive=lambda messages, focus: extractive_summary(messages, focus),
    finish=lambda content, messages: ensure_template(content, messages),
)
"""Seed 000's summary: the A5 template from SUMMARY_PROMPT, extractive fallback."""


@dataclass
class SummaryOutcome:
    content: str
    fallback: bool
    error: str | None = None
    """Why the fallback was used (the notice shown to the user)."""
    duration_s: float = 0.0
    attempts: int = 1
    """Calls made (retries included); 0 when no model was asked (offline)."""


class SummaryCompressor:
    """Produce the summary of an archive segment by a strategy's :class:`SummarySpec`.

    Each model call runs in a separate thread bounded by ``timeout``. On a timeout, an error or
    an answer the spec's check refuses, the call is retried ``spec.max_retries`` times with a
    doubling wait; then the spec decides: the extractive summary stands in, marked as a
    fallback (seed 000, C2/E2), or the compaction is skipped (seed 004, F-007) and
    :meth:`summarize` returns None. Without a model (the offline provider) the extractive
    summary is the summary.
    """

    def __init__(
        self,
        summariser: Summariser,
        timeout: float,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.summariser = summariser
        self.timeout = timeout
        self.sleep = sleep

    def summarize(
        self,
        messages: list[Message],
        focus: str | None = None,
        on_notice: Callable[[str], None] | None = None,
        spec: SummarySpec = A5_SPEC,
        call: Callable[[float], str] | None = None,
        raw: list[Message] | None = None,
    ) -> SummaryOutcome | None:
        """The summary of ``messages``; None when the spec says to skip after failures.

        ``call`` replaces the default separate summary call (seed 002 asks the live
        conversation instead); it gets the timeout and returns the model's text. ``raw``: the
        raw messages ``messages`` stand for, when some of them are earlier summaries being
        re-compacted — the extractive form is written from these (a deterministic summary
        extracts from what happened, not from another summary's wording); a model gets
        ``messages``, as the seeds say.
        """
        began = time.monotonic()
        source = messages if raw is None else raw
        if not self.summariser.is_model:
            content = spec.extractive(source, focus)
            return SummaryOutcome(content, False, duration_s=time.monotonic() - began, attempts=0)
        ask = call or self._separate_call(messages, spec, focus)
        notice = ""
        attempts = 0
        for attempt in range(spec.max_retries + 1):
            if attempt:
                self.sleep(spec.retry_delay * 2 ** (attempt - 1))
            attempts += 1
            content, notice = self._attempt(ask, spec, messages)
            if not notice:
                return SummaryOutcome(
                    content, False, duration_s=time.monotonic() - began, attempts=attempts
                )
            if attempt < spec.max_retries and on_notice is not None:
                on_notice(f"{notice} Retrying ({attempt + 1} of {spec.max_retries}).")
        if on_notice is not None:
            on_notice(notice)
        if spec.on_failure == "skip":
            return None
        reason = (
            "the summary call timed out" if notice == TIMEOUT_NOTICE else "the summary call failed"
        )
        return SummaryOutcome(
            content=mark_fallback(spec.extractive(source, focus), reason),
            fallback=True,
            error=notice,
            duration_s=time.monotonic() - began,
            attempts=attempts,
        )

    def _separate_call(
        self, messages: list[Message], spec: SummarySpec, focus: str | None
    ) -> Callable[[float], str]:
        summarize = self.summariser.summarize
        if spec.render is None:
            return lambda timeout: summarize(messages, spec.prompt, focus, timeout)
        render = spec.render
        return lambda timeout: summarize(messages, spec.prompt, focus, timeout, render=render)

    def _attempt(
        self, ask: Callable[[float], str], spec: SummarySpec, messages: list[Message]
    ) -> tuple[str, str]:
        """One bounded call: (content, "") on success, ("", notice) on failure."""
        # Not a `with` block: on timeout we must return without waiting for the stuck call.
        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="summary")
        future = pool.submit(ask, self.timeout)
        pool.shutdown(wait=False)
        try:
            content = spec.finish(future.result(timeout=self.timeout), messages)
        except (TimeoutError, concurrent.futures.TimeoutError):
            return "", TIMEOUT_NOTICE
        except Exception as exc:  # noqa: BLE001 - any provider failure is a failed attempt
            return "", FAILURE_NOTICE.format(error=_short(str(exc) or type(exc).__name__, 200))
        problem = spec.check(content)
        if problem is not None:
            return "", FAILURE_NOTICE.format(error=problem)
        return content, ""


def mark_fallback(summary: str, reason: str) -> str:
    """Insert the fallback marker after the heading and time range, keeping the A5 layout."""
    head, _, rest = summary.partition("\n\n")
    return f"{head}\n{FALLBACK_MARK.format(reason=reason)}\n\n{rest}"


def ensure_template(content: str, messages: list[Message]) -> str:
    """A model summary that lost the A5 heading gets it back, with the time range; every A5
    summary ends with the note that its raw messages can be recalled."""
    content = content.strip()
    if not content.startswith(SUMMARY_HEADING):
        start = time_label(messages[0].created_at) if messages else "unknown"
        cutoff = time_label(messages[-1].created_at) if messages else "unknown"
        content = f"{SUMMARY_HEADING}\n*(Contains context from {start} to {cutoff})*\n\n{content}"
    return with_recall_note(content)


def with_recall_note(content: str) -> str:
    """``content`` ending with :data:`RECALL_NOTE` (the segment still to be numbered)."""
    note = RECALL_NOTE.format(segment=SEGMENT_PENDING)
    return content if content.rstrip().endswith(note) else f"{content.rstrip()}\n\n{note}"
