"""The extractive A5 summariser: every heading, and the facts it must carry."""

from __future__ import annotations

import json

from engine.models import Message, MessageMeta, ToolCall
from engine.summary import ensure_template, extractive_summary, render_messages_for_summary

HEADINGS = [
    "## 📌 Archived Session Summary",
    "*(Contains context from ",
    "### 🎯 Objectives & Status",
    "* **Original Goal**: ",
    "### 🏗️ Technical Context (Static)",
    '### ✅ Completed Milestones (The "Done" Pile)',
    "### 🧠 Key Insights & Decisions (Persistent Memory)",
    "* **Decisions**: ",
    "* **Learnings**: ",
    "* **User Preferences**: ",
    "### 📂 File System State (Snapshot)",
    "*(Modified files in this archive segment)*",
]


def segment() -> list[Message]:
    return [
        Message(
            role="user",
            content="Add login to src/auth.ts. Never commit secrets.\n"
            "<system-reminder>\nThe user mentioned @src/auth.ts.\n</system-reminder>",
        ),
        Message(
            role="assistant",
            content="Thought: read first",
            tool_calls=[ToolCall(id="a", name="Read", input={"file_path": "src/auth.ts"})],
        ),
        Message(
            role="tool",
            meta=MessageMeta(tool_name="Read", tool_use_id="a"),
            content=json.dumps(
                {"status": "error", "error": {"code": "not_found", "message": "no src/auth.ts"}}
            ),
        ),
        Message(
            role="assistant",
            content="Thought: create it",
            tool_calls=[
                ToolCall(id="b", name="Write", input={"file_path": "src/auth.ts"}),
                ToolCall(id="c", name="Edit", input={"file_path": "package.json"}),
            ],
        ),
        Message(
            role="assistant",
            content="Done. I decided to use zod instead of joi.",
            meta=MessageMeta(final=True),
        ),
    ]


def test_every_a5_heading_in_order() -> None:
    text = extractive_summary(segment())
    positions = [text.index(h) for h in HEADINGS]
    assert positions == sorted(positions)


def test_facts_goal_files_errors_decisions_preferences() -> None:
    text = extractive_summary(segment())
    assert "**Original Goal**: Add login to src/auth.ts. Never commit secrets." in text
    assert "system-reminder" not in text  # reminders are not the user's goal
    assert "* `src/auth.ts`: written in this segment." in text
    assert "* `package.json`: edited in this segment." in text
    assert "Read failed: not_found: no src/auth.ts" in text
    assert "I decided to use zod instead of joi." in text
    assert "Never commit secrets." in text.split("**User Preferences**")[1]
    assert "* [✓] Add login to src/auth.ts." in text
    assert "TypeScript" in text


def test_empty_fields_say_none_recorded() -> None:
    text = extractive_summary([Message(role="user", content="hi")])
    assert "* **Learnings**: none recorded" in text
    assert "* none modified" in text


def test_model_summary_without_heading_gets_it_back() -> None:
    fixed = ensure_template("### 🎯 Objectives & Status\n...", segment())
    assert fixed.startswith("## 📌 Archived Session Summary\n*(Contains context from ")


def test_render_for_summary_uses_react_form() -> None:
    text = render_messages_for_summary(segment())
    assert '[assistant] Thought: read first\nAction: Read[{"file_path": "src/auth.ts"}]' in text
    assert text.count("[tool] ") == 1
