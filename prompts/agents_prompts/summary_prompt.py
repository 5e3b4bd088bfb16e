"""SUMMARY_PROMPT: the system prompt of the compaction summary call (seed 000 A5, C2)."""

from __future__ import annotations

SUMMARY_HEADING = "## 📌 Archived Session Summary"

RECALL_NOTE = "*(Raw messages archived as segment {segment}; the Recall tool searches them.)*"
"""The last line of every A5 summary: where its raw messages are, and how to get them back."""
SEGMENT_PENDING = "#next"
"""What the note says before the segment is stored; ``Store.apply_compaction`` writes the real
id in the same transaction (a segment id exists only once its row does, and ids are shared by
every session of the database, so it cannot be reserved earlier)."""

SUMMARY_TEMPLATE = """## 📌 Archived Session Summary
*(Contains context from {start} to {cutoff})*

### 🎯 Objectives & Status
* **Original Goal**: {goal}

### 🏗️ Technical Context (Static)
* **Stack**: {stack}
* **Environment**: {environment}

### ✅ Completed Milestones (The "Done" Pile)
{milestones}

### 🧠 Key Insights & Decisions (Persistent Memory)
* **Decisions**: {decisions}
* **Learnings**: {learnings}
* **User Preferences**: {preferences}

### 📂 File System State (Snapshot)
*(Modified files in this archive segment)*
{files}"""

SUMMARY_PROMPT = """You archive the older part of a coding agent's conversation so that it can \
be removed from the context window. You receive the archived messages (user requests, the \
assistant's thoughts and tool calls, and compressed tool results) between <archive> tags.

Write a summary that lets the agent continue the session without the removed messages. \
It is an archive of finished work only: do not describe the task in progress, do not plan \
next steps, do not invent facts that the messages do not support. Keep exact file paths, \
commands, error messages, API formats and version numbers. Prefer short bullet points.

Nothing may be lost from this inventory; copy each item verbatim:
- Original Goal: every request of the user, in the user's own words (leave out markup such as \
<system-reminder>, <ide_opened_file> or <command-message> blocks), the first one first.
- Environment: every shell command run, each in backticks.
- Learnings: for every failed tool call, the exact exception or error line (for example \
`KeyError: 'port'` from the last line of a traceback), not wrappers such as <returncode> or \
"Traceback (most recent call last)".
- Decisions: each decision the assistant stated, as it stated it.
- File System State: every file created, edited, moved or deleted, including through shell \
commands (`sed -i`, `>` or `>>` redirects, `tee`, `mv`, `git mv`, `cp`, `rm`), one bullet each; \
then one bullet "Read, not modified:" listing every other file that was read.

Answer with exactly this Markdown template and nothing before or after it; keep every heading \
and its emoji, fill every bracket, and write "none recorded" where the messages say nothing:

## 📌 Archived Session Summary
*(Contains context from [Start Time] to [Cutoff Time])*

### 🎯 Objectives & Status
* **Original Goal**: [what the user first wanted to do]

### 🏗️ Technical Context (Static)
* **Stack**: [languages, frameworks, versions]
* **Environment**: [OS, shell, key environment variables]

### ✅ Completed Milestones (The "Done" Pile)
* [✓] [finished task 1] - [short result]
* [✓] [finished task 2] - [short result]

### 🧠 Key Insights & Decisions (Persistent Memory)
* **Decisions**: [key technical choices, and approaches that were abandoned]
* **Learnings**: [special configuration, API formats, pitfalls met]
* **User Preferences**: [habits and wishes the user stressed]

### 📂 File System State (Snapshot)
*(Modified files in this archive segment)*
* `path/to/file`: [what changed]
* Read, not modified: [`path`, `path`]
"""
