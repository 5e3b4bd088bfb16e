"""aider chat transcripts (``.aider.chat.history.md``).

aider appends to one Markdown file (Aider-AI/aider, ``aider/io.py``): ``# aider chat started at
YYYY-mm-dd HH:MM:SS`` when it starts; each user input as ``#### `` lines (one per input line,
``#### <blank>`` for an empty one); each answer as plain Markdown; its own messages (tool output,
warnings, errors, confirmations and their answers) as ``> `` lines. Decisions:

- Each ``# aider chat started at`` block is a session of its own; a block without any input is
  counted (``empty_session``). Text before the first heading is tolerated and counted
  (``text_before_first_session``, lines).
- Consecutive ``#### `` lines are one user input, which opens a round; the Markdown after it is
  the answer (a step).
- A run of ``> `` lines inside a round is what aider did with the answer (applied edits,
  commits, lint and test output, ``/run`` output): a synthetic ``aider`` tool call on the step
  before it (an empty step when the round has no answer yet, as after ``/add``) and its result,
  after which the round is finished (aider applies edits itself; the model is not asked
  again). A ``Tokens: N sent, … M received`` line is that step's usage (aider rounds it to
  thousands: ``2.3k``), not output.
- ``> `` lines before a block's first input are aider's start-up report: ``Main model:`` (or
  ``Model:``) gives the session's model, ``Git repo:`` is kept as recorded; they are counted
  (``startup_line``). A blank input (``#### <blank>``) sends the model nothing: counted
  (``blank_input``).
- Timestamps: only the block's start is recorded; every message gets it.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from typing import Any

from engine.models import ToolCall, Usage, utcnow
from engine.recordings.base import ImportError_, Item, Parsed, parse_time, title_of

FORMAT = "aider"
HEADING = re.compile(r"^# aider chat started at (.+?)\s*$")
_MODEL = re.compile(r"^(?:Main model|Model):\s*(\S+)")
_TOKENS = re.compile(r"^Tokens:\s*(.+?)\s*$")
_COUNT = re.compile(r"([\d.]+)([kKmM]?)\s+(sent|cache write|cache hit|received)")


def looks_like(raw: str) -> bool:
    return any(HEADING.match(line) for line in raw.splitlines()[:200])


def _count(number: str, unit: str) -> int:
    scale = {"k": 1_000, "m": 1_000_000}.get(unit.lower(), 1)
    return round(float(number) * scale)


def _usage(line: str) -> Usage | None:
    """``Tokens: 2.3k sent, 1.1k cache write, 56 received. Cost: …`` as a usage."""
    found = {kind: _count(n, unit) for n, unit, kind in _COUNT.findall(line)}
    if not found:
        return None
    write, hit = found.get("cache write", 0), found.get("cache hit", 0)
    return Usage(
        input_tokens=max(found.get("sent", 0) - write - hit, 0),
        cache_creation_input_tokens=write,
        cache_read_input_tokens=hit,
        output_tokens=found.get("received", 0),
    )


class _Block:
    """One ``# aider chat started at`` block being read."""

    def __init__(self, stamp: datetime, started: str) -> None:
        self.stamp = stamp
        self.items: list[Item] = []
        self.skipped: Counter[str] = Counter()
        self.recorded: dict[str, Any] = {"started_at": started}
        self.model = ""
        self.answer: list[str] = []
        self.answer_line = 0
        self.output: list[str] = []
        self.output_line = 0
        self.calls = 0
        self.step: Item | None = None  # the round's last step
        self.in_fence = False  # inside a ``` block of the answer being read

    def flush_answer(self) -> None:
        self.in_fence = False
        text = "\n".join(self.answer).strip()
        self.answer = []
        if text:
            self.step = Item("assistant", self.answer_line, self.stamp, text=text)
            self.items.append(self.step)

    def flush_output(self) -> None:
        lines, self.output = self.output, []
        if not any(line.strip() for line in lines):
            return
        if not any(i.kind == "user" for i in self.items):
            for line in lines:
                if line.strip():
                    self.startup(line)
            return
        kept = []
        for line in lines:
            tokens = _TOKENS.match(line)
            usage = _usage(tokens[1]) if tokens else None
            if usage is not None and self.step is not None:
                self.step.usage = usage
                self.skipped["usage_line"] += 1
            else:
                kept.append(line)
        text = "\n".join(kept).strip()
        if not text:
            return
        step = self.step
        if step is None or step.calls:
            step = Item("assistant", self.output_line, self.stamp)
            self.items.append(step)
            self.step = step
        self.calls += 1
        call_id = f"aider_{self.calls}"
        step.calls.append(ToolCall(id=call_id, name="aider", input={}))
        self.items.append(
            Item(
                "result",
                self.output_line,
                self.stamp,
                text=text,
                tool_use_id=call_id,
                closes_round=True,
            )
        )

    def startup(self, line: str) -> None:
        self.skipped["startup_line"] += 1
        model = _MODEL.match(line)
        if model and not self.model:
            self.model = model[1]
        if line.startswith("Git repo:"):
            self.recorded["git_repo"] = line.removeprefix("Git repo:").strip()

    def user(self, number: int, text: str) -> None:
        self.flush_answer()
        self.flush_output()
        self.step = None
        if not text.strip():
            self.skipped["blank_input"] += 1  # aider sends the model nothing for it
            return
        self.items.append(Item("user", number, self.stamp, text=text))


def _input_line(line: str) -> str:
    text = line[4:].removeprefix(" ").rstrip()
    return "" if text == "<blank>" else text


def parse_all(raw: str, name: str) -> list[Parsed]:
    """Every session of the file (one per ``# aider chat started at`` block), in order."""
    lines = raw.splitlines()
    blocks: list[_Block] = []
    before = 0
    problems: list[str] = []
    block: _Block | None = None
    pending_input: list[str] = []
    input_line = 0

    def end_input() -> None:
        nonlocal pending_input
        if pending_input and block is not None:
            block.user(input_line, "\n".join(pending_input))
        pending_input = []

    for number, line in enumerate(lines, start=1):
        heading = HEADING.match(line)
        if heading:
            end_input()
            if block is not None:
                block.flush_answer()
                block.flush_output()
            started = heading[1]
            stamp = parse_time(started.replace(" ", "T"), number, problems) or utcnow()
            block = _Block(stamp, started)
            blocks.append(block)
            continue
        if block is None:
            before += bool(line.strip())
            continue
        if line.startswith("####") and not block.in_fence:
            if not pending_input:
                input_line = number
            pending_input.append(_input_line(line))
            continue
        end_input()
        if not block.in_fence and (line.startswith("> ") or line == ">"):
            block.flush_answer()
            if not block.output:
                block.output_line = number
            block.output.append(line[1:].removeprefix(" ").rstrip())
        elif not line.strip() and block.output and not block.in_fence:
            continue  # blank lines between aider's messages
        else:
            block.flush_output()
            if not block.answer:
                block.answer_line = number
            block.answer.append(line)
            if line.lstrip().startswith("```"):
                block.in_fence = not block.in_fence  # its "> " lines are the answer's
    end_input()
    if block is not None:
        block.flush_answer()
        block.flush_output()
    if problems:
        raise ImportError_(problems, FORMAT)
    out: list[Parsed] = []
    empty = 0
    for b in blocks:
        if not any(i.kind == "user" for i in b.items):
            empty += 1
            continue
        out.append(
            Parsed(
                fmt=FORMAT,
                items=b.items,
                title=title_of(b.items, name),
                records=sum(1 for i in b.items) + sum(b.skipped.values()),
                skipped=b.skipped,
                model=b.model,
                recorded=b.recorded,
            )
        )
    if not out:
        raise ImportError_([f"{name} holds no user input (no '#### ' line)"], FORMAT)
    if before:
        out[0].skipped["text_before_first_session"] += before
        out[0].warnings.append(
            f"{before} lines before the first '# aider chat started at' heading left out"
        )
    if empty:
        out[0].skipped["empty_session"] += empty
    return out
