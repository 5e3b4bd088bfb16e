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

from engine.models import Message
from engine.render import render_messages
from prompts.agents_prompts.summary_prompt import (
    SUMMARY_HEADING,
    SUMMARY_PROMPT,
    SUMMARY_TEMPLATE,
)

TIMEOUT_NOTICE = "Summary generation timed out, keeping recent history only."
FAILURE_NOTICE = "Summary generation failed ({error}), keeping recent history only."
FALLBACK_MARK = "*(Fallback: extractive summary written by ctxscope; {reason}.)*"

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_WRITE_TOOLS = {"Edit": "edited", "MultiEdit": "edited", "Write": "written"}
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
    return _REMINDER.sub("", msg.content).strip()


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
    strategies) renders these same facts in its own format.
    """

    start: datetime | None
    cutoff: datetime | None
    goals: list[str] = field(default_factory=list)
    milestones: list[str] = field(default_factory=list)
    """``goal - first line of the answer`` for each finished round."""
    decisions: list[str] = field(default_factory=list)
    learnings: list[str] = field(default_factory=list)
    preferences: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    """Path -> ``edited`` / ``written``."""
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

    def note_stack(path: str) -> None:
        for suffix, name in _STACK_BY_SUFFIX.items():
            if path.endswith(suffix) and name not in facts.stack:
                facts.stack.append(name)

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
                if call.name in _WRITE_TOOLS and path:
                    facts.files[path] = _WRITE_TOOLS[call.name]
                if call.name == "Bash":
                    facts.used_bash = True
            if msg.meta.final and msg.content.strip():
                answered = True
                answer = msg.content.strip().splitlines()[0]
                goal = _short(current_goal or "answered", 80)
                facts.milestones.append(f"{goal} - {_short(answer, 120)}")
            for sentence in re.split(r"(?<=[.!?])\s+", msg.content):
                if _DECISION.search(sentence):
                    facts.decisions.append(_short(sentence))
        elif msg.role == "tool":
            data = _parse_tool(msg)
            error = data.get("error") if isinstance(data.get("error"), dict) else None
            if data.get("status") == "error" and error:
                tool = msg.meta.tool_name or "tool"
                facts.learnings.append(
                    _short(f"{tool} failed: {error.get('code')}: {error.get('message')}")
                )
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


def extractive_summary(
    messages: list[Message],
    focus: str | None = None,
    start: datetime | None = None,
    cutoff: datetime | None = None,
) -> str:
    """Fill the A5 template deterministically from ``messages``."""
    facts = segment_facts(messages, focus, start, cutoff)
    file_lines = [f"* `{p}`: {what} in this segment." for p, what in facts.files.items()]
    return SUMMARY_TEMPLATE.format(
        start=time_label(facts.start),
        cutoff=time_label(facts.cutoff),
        goal=facts.goal_text,
        stack=", ".join(facts.stack) if facts.stack else "none recorded",
        environment="shell commands run through Bash" if facts.used_bash else "none recorded",
        milestones="\n".join(f"* [✓] {m}" for m in facts.milestones[-12:]) or "* none recorded",
        decisions=facts.joined(facts.decisions, 8),
        learnings=facts.joined(facts.learnings),
        preferences=facts.joined(facts.preferences),
        files="\n".join(file_lines) or "* none modified",
    )


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
    ) -> SummaryOutcome | None:
        """The summary of ``messages``; None when the spec says to skip after failures.

        ``call`` replaces the default separate summary call (seed 002 asks the live
        conversation instead); it gets the timeout and returns the model's text.
        """
        began = time.monotonic()
        if not self.summariser.is_model:
            content = spec.extractive(messages, focus)
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
            content=mark_fallback(spec.extractive(messages, focus), reason),
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
    """A model summary that lost the A5 heading gets it back, with the time range."""
    content = content.strip()
    if content.startswith(SUMMARY_HEADING):
        return content
    start = time_label(messages[0].created_at) if messages else "unknown"
    cutoff = time_label(messages[-1].created_at) if messages else "unknown"
    return f"{SUMMARY_HEADING}\n*(Contains context from {start} to {cutoff})*\n\n{content}"
