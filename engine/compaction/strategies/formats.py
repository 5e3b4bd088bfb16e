"""The summary of each non-default strategy: the seed's prompt, its form, and its check.

Every form has an extractive twin written from
:func:`engine.compaction.extractive.segment_facts`, so each strategy runs end to end offline (and
falls back to it where its seed allows a fallback).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from engine.compaction.extractive import segment_facts, segment_ledger, time_label
from engine.compaction.ledger import Ledger
from engine.compaction.summary import SummarySpec
from engine.models import Message
from prompts.agents_prompts.summary_prompt import RECALL_NOTE, SEGMENT_PENDING

RECALL = RECALL_NOTE.format(segment=SEGMENT_PENDING)
"""Every summary names its archived segment (``Store.apply_compaction`` writes the id)."""


def _inventory(messages: list[Message]) -> dict[str, list[str]]:
    """The segment's artifact ledger by kind: files read and changed, commands, errors."""
    ledger: Ledger = segment_ledger(messages)
    changed = [f"{i.key} ({i.detail})" if i.detail else i.key for i in ledger.of("file_changed")]
    return {
        "files_read": [i.key for i in ledger.of("file_read")],
        "files_changed": changed,
        "commands": [i.key for i in ledger.of("command")],
        "errors": [i.key for i in ledger.of("error")],
    }


# ------------------------------------------------------------------ seed 001: XML tags
RESET_HINT_PROMPT = """你是一个 Agent 执行历史压缩器。将以下执行历史总结为结构化摘要，\
输出格式如下（使用 XML 标签）：

<completed>...</completed>
<remaining>...</remaining>
<current_state>...</current_state>
<notes>...</notes>"""
"""Seed 001's ``COMPRESS_SYSTEM``, word for word."""

XML_TAGS = ("completed", "remaining", "current_state", "notes")


def render_history_text(messages: Sequence[Message]) -> str:
    """Seed 001's ``historyText``: ``[role]\\ncontent`` per message, joined by ``---`` lines
    (structured content as JSON, as the seed's ``JSON.stringify``)."""
    parts = []
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            blocks: list[dict[str, object]] = []
            if m.content.strip():
                blocks.append({"type": "text", "text": m.content})
            blocks += [
                {"type": "tool-call", "toolName": c.name, "args": c.input} for c in m.tool_calls
            ]
            content = json.dumps(blocks, ensure_ascii=False)
        else:
            content = m.content
        parts.append(f"[{m.role}]\n{content}")
    return "\n\n---\n\n".join(parts)


def check_xml(content: str) -> str | None:
    """The seed's four tags, each opened and closed, or what is missing (a warning: seed 001
    uses the model's text as it comes)."""
    missing = [t for t in XML_TAGS if not re.search(rf"<{t}>.*?</{t}>", content, re.S)]
    return f"the summary lacks the tags {', '.join(missing)}" if missing else None


def _bullets(items: list[str], empty: str = "none recorded") -> str:
    uniq = list(dict.fromkeys(items))
    return "\n".join(f"- {i}" for i in uniq) if uniq else empty


def extractive_xml(messages: list[Message], focus: str | None) -> str:
    facts = segment_facts(messages, focus)
    inv = _inventory(messages)
    remaining = [facts.open_goal] if facts.open_goal else []
    state = (
        [f"goal: {facts.goal_text}"]
        + [f"changed {f}" for f in inv["files_changed"]]
        + [f"read {f}" for f in inv["files_read"]]
    )
    notes = (
        facts.decisions
        + [f"error: {e}" for e in inv["errors"]]
        + [f"ran `{c}`" for c in inv["commands"]]
        + facts.preferences
        + [RECALL]
    )
    return "\n".join(
        [
            f"<completed>\n{_bullets(facts.milestones)}\n</completed>",
            f"<remaining>\n{_bullets(remaining, 'nothing left open')}\n</remaining>",
            f"<current_state>\n{_bullets(state)}\n</current_state>",
            f"<notes>\n{_bullets(notes)}\n</notes>",
        ]
    )


RESET_HINT_SPEC = SummarySpec(
    form="XML tags",
    prompt=RESET_HINT_PROMPT,
    extractive=extractive_xml,
    warn=check_xml,
    render=render_history_text,
    framed=False,
)
"""Seed 001's summary: ``COMPRESS_SYSTEM`` as the system prompt and ``historyText`` as the whole
user text; the answer is used as it comes (an empty one fails the call, and the extractive XML
stands in), a missing tag only warned about."""

# ------------------------------------------------------------------ seed 002: JSON
SUMMARY_KEYWORDS = ("current", "progress", "pending", "execution_output_dir")
"""Seed 002's ``validate_summary``: the answer must mention one of these."""


def check_json_summary(content: str) -> str | None:
    if not content.strip():
        return "the summary is empty"
    if not any(k in content.lower() for k in SUMMARY_KEYWORDS):
        return "the summary names none of current / progress / pending / execution_output_dir"
    return None


def extractive_json(messages: list[Message], focus: str | None) -> str:
    facts = segment_facts(messages, focus)
    inv = _inventory(messages)
    summary = {
        "current_goal": facts.open_goal or facts.goal_text,
        "progress": list(dict.fromkeys(facts.milestones)),
        "analysis_conclusions": list(dict.fromkeys(facts.decisions)),
        "identified_issues": inv["errors"] or list(dict.fromkeys(facts.learnings)),
        "pending_actions": [facts.open_goal] if facts.open_goal else [],
        "key_paths": {"changed": inv["files_changed"], "read": inv["files_read"]},
        "commands": inv["commands"],
        "time_range": [time_label(facts.start), time_label(facts.cutoff)],
        "archive": RECALL,
    }
    body = json.dumps(summary, ensure_ascii=False, indent=2)
    return f"<compact_summary>\n{body}\n</compact_summary>"


MOCK_USER_SPEC = SummarySpec(
    form="JSON",
    prompt="",  # asked by the mock user turn on the live conversation, not a separate call
    extractive=extractive_json,
    check=check_json_summary,
)

# ------------------------------------------------------------------ seed 003: one message
MESSAGE_WINDOW_PROMPT = """You condense the older part of an agent's conversation into one \
message that the agent will read as its own earlier turn. Write plain text: what the user asked, \
what was done and found (files, commands, results, errors), decisions, and what is still open. \
Keep exact paths and commands. Be brief."""


def extractive_plain(messages: list[Message], focus: str | None) -> str:
    facts = segment_facts(messages, focus)
    inv = _inventory(messages)
    lines = [
        f"Summary of the earlier conversation ({time_label(facts.start)} to "
        f"{time_label(facts.cutoff)}).",
        f"Requests: {facts.joined(facts.goals, 8)}",
        f"Done: {facts.joined(facts.milestones, 8)}",
        f"Files changed: {facts.joined(inv['files_changed'], 40)}",
        f"Files read: {facts.joined(inv['files_read'], 40)}",
        f"Commands: {facts.joined(inv['commands'], 20)}",
        f"Errors: {facts.joined(inv['errors'] or facts.learnings, 20)}",
        f"Decisions: {facts.joined(facts.decisions)}",
    ]
    if facts.open_goal:
        lines.append(f"Still open: {facts.open_goal}")
    lines.append(RECALL)
    return "\n".join(lines)


MESSAGE_WINDOW_SPEC = SummarySpec(
    form="plain text",
    prompt=MESSAGE_WINDOW_PROMPT,
    extractive=extractive_plain,
)

# ------------------------------------------------------------------ seed 004: structured text
HEAD_MIDDLE_TAIL_PROMPT = """You compress the middle of a long agent conversation. You receive \
the messages to compress between <archive> tags. Write a structured plain-text summary (no \
Markdown tables, no JSON) with exactly these sections, keeping exact file paths, commands and \
error messages:

GOAL AND KEY DECISIONS:
FILE OPERATIONS (read, created, modified, deleted):
TOOL CALLS (name, key result, success or failure):
TASK STATUS (progress, what is still to do):
ERRORS AND RESOLUTIONS:"""
"""Seed 004 F-004 rule 2: the five dimensions the summary must keep."""

HMT_SECTIONS = (
    "GOAL AND KEY DECISIONS:",
    "FILE OPERATIONS",
    "TOOL CALLS",
    "TASK STATUS",
    "ERRORS AND RESOLUTIONS:",
)


def check_structured(content: str) -> str | None:
    """F-004: an empty answer is a failure."""
    return None if content.strip() else "the model returned an empty summary"


def extractive_structured(messages: list[Message], focus: str | None) -> str:
    facts = segment_facts(messages, focus)
    inv = _inventory(messages)
    calls: dict[str, list[int]] = {}
    for m in messages:
        if m.role == "tool":
            ok = 0 if m.meta.is_error else 1
            counts = calls.setdefault(m.meta.tool_name or "tool", [0, 0])
            counts[ok] += 1
    tool_lines = [f"- {name}: {ok} ok, {bad} failed" for name, (bad, ok) in calls.items()]
    status = [f"- done: {m}" for m in dict.fromkeys(facts.milestones)]
    if facts.open_goal:
        status.append(f"- in progress: {facts.open_goal}")
    return "\n".join(
        [
            "GOAL AND KEY DECISIONS:",
            f"- goal: {facts.goal_text}",
            *(f"- {d}" for d in dict.fromkeys(facts.decisions)),
            "FILE OPERATIONS (read, created, modified, deleted):",
            _bullets(
                [f"changed {f}" for f in inv["files_changed"]]
                + [f"read {f}" for f in inv["files_read"]]
            ),
            "TOOL CALLS (name, key result, success or failure):",
            "\n".join(tool_lines) or "none recorded",
            "TASK STATUS (progress, what is still to do):",
            "\n".join(status) or "none recorded",
            "ERRORS AND RESOLUTIONS:",
            _bullets(inv["errors"] or facts.learnings),
            *(f"- ran `{c}`" for c in inv["commands"]),
            RECALL,
        ]
    )


def head_middle_tail_spec(max_retries: int) -> SummarySpec:
    """Seed 004's summary: retries with a doubling wait, then skip (F-007)."""
    return SummarySpec(
        form="structured text",
        prompt=HEAD_MIDDLE_TAIL_PROMPT,
        extractive=extractive_structured,
        check=check_structured,
        on_failure="skip",
        max_retries=max_retries,
        retries_itself=True,
    )
