"""The extractive A5 summariser: every heading, and the facts it must carry."""

from __future__ import annotations

import json

from engine.compaction.extractive import extractive_summary
from engine.compaction.summary import ensure_template, render_messages_for_summary
from engine.messages.tokens import count_text, ensure_counted
from engine.models import Message, MessageMeta, ToolCall

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
    assert "Read failed (not_found): no src/auth.ts" in text
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


def test_the_ledger_goes_into_the_summary() -> None:
    ide = "<ide_opened_file>The user opened src/app.py in the IDE.</ide_opened_file>"
    wrapped = (
        "<returncode>1</returncode> <output> Traceback (most recent call last):\n"
        "  File \"app.py\", line 3\nKeyError: 'port'\n</output>"
    )
    bash_form = {
        "status": "error",
        "data": {"command": "pytest -q", "exit_code": 1, "error_line": "AssertionError: 0.5"},
        "error": {"code": "nonzero_exit", "message": "The command exited with code 1."},
    }
    msgs = [
        Message(role="user", content=f"{ide}Why does the app crash?", meta=MessageMeta(round=1)),
        Message(
            role="assistant",
            tool_calls=[
                ToolCall(id="r", name="Read", input={"file_path": "src/config.py"}),
                ToolCall(id="s", name="Bash", input={"command": "sed -i 's/a/b/' src/app.py"}),
                ToolCall(id="p", name="Bash", input={"command": "python app.py"}),
                ToolCall(id="q", name="Bash", input={"command": "pytest -q"}),
            ],
            meta=MessageMeta(round=1, step=1),
        ),
        Message(
            role="tool",
            content=json.dumps({"status": "error", "error": {"code": "x", "message": wrapped}}),
            meta=MessageMeta(round=1, step=1, tool_name="Bash", tool_use_id="p", is_error=True),
        ),
        Message(
            role="tool",
            content=json.dumps(bash_form),
            meta=MessageMeta(round=1, step=1, tool_name="Bash", tool_use_id="q", is_error=True),
        ),
    ]
    text = extractive_summary(msgs)
    assert "**Original Goal**: Why does the app crash?" in text
    assert "ide_opened_file" not in text
    assert "* `src/app.py`: changed through Bash (sed -i) in this segment." in text
    assert "* Read, not modified: `src/config.py`." in text
    assert "`sed -i 's/a/b/' src/app.py`; `python app.py`; `pytest -q`" in text
    assert "Bash `python app.py` failed (x): KeyError: 'port'" in text  # command from its call
    assert "Bash `pytest -q` failed (nonzero_exit): AssertionError: 0.5" in text
    assert "returncode" not in text
    assert text.endswith(
        "*(Raw messages archived as segment #next; the Recall tool searches them.)*"
    )


def test_a_big_segment_summary_stays_within_a_tenth_and_names_every_file() -> None:
    msgs: list[Message] = []
    body = "\n".join(f"{n}: value_{n} = compute(value_{n - 1}) + offset" for n in range(300))
    for r in range(1, 21):
        msgs += [
            Message(role="user", content=f"look at module number {r}", meta=MessageMeta(round=r)),
            Message(
                role="assistant",
                tool_calls=[ToolCall(id=f"t{r}", name="Read", input={"file_path": f"m/f{r}.py"})],
                meta=MessageMeta(round=r, step=1),
            ),
            Message(
                role="tool",
                content=json.dumps({"status": "success", "data": {"content": body}}),
                meta=MessageMeta(round=r, step=1, tool_name="Read", tool_use_id=f"t{r}"),
            ),
            Message(role="assistant", content="Read it.", meta=MessageMeta(round=r, final=True)),
        ]
    text = extractive_summary(msgs)
    segment_tokens = sum(ensure_counted(m) for m in msgs)
    assert segment_tokens > 60_000  # 20 reads of ~3 500 tokens
    assert count_text(text) <= segment_tokens // 10
    assert all(f"`m/f{r}.py`" in text for r in range(1, 21))
    assert all(f"look at module number {r}" in text for r in range(1, 21))
