"""aider chat transcripts (``.aider.chat.history.md``).

aider appends to one Markdown file (Aider-AI/aider, ``aider/io.py``): ``# aider chat started at
YYYY-mm-dd HH:MM:SS`` when it starts; each user input as ``#### `` lines (one per input line,
each ending in two spaces, ``#### <blank>`` for an empty one); each answer as plain Markdown;
its own messages (tool output, warnings, errors, confirmations and their answers) as ``> ``
lines. Decisions:

- Each ``# aider chat started at`` block is a session of its own; a block without any input or
  answer is counted (``empty_session``). Text before the first heading is tolerated and counted
  (``text_before_first_session``, lines), unless it holds inputs: a file whose head was cut
  begins with that session, dated by the first heading. A block that cannot be read (a
  heading whose time is not a time) is left out, counted (``unreadable_session``) and named in
  a warning; the other blocks are read.
- Consecutive ``#### `` lines are one user input, which opens a round; the Markdown after it is
  the answer (a step).
- A block that opens with an answer (aider sent the model something it never writes as an
  input: lint errors after ``Attempt to fix lint errors? y``, a ``--message``) becomes a
  session whose first round has no recorded input: its user message is :data:`NO_INPUT`, the
  session's ``recorded`` says ``first_input: not recorded`` and a warning names the line.
- A run of ``> `` lines inside a round is what aider did with the answer (applied edits,
  commits, lint and test output, ``/run`` output): a synthetic ``aider`` tool call on the step
  before it (an empty step when the round has no answer yet, as after ``/add``) and its result,
  after which the round is finished (aider applies edits itself; the model is not asked
  again). A ``Tokens: N sent, … M received`` line is that step's usage, not output. aider has
  printed its counts two ways: with thousands separators (``8,985 sent``, 2024) and through
  ``format_tokens`` (``aider/utils.py``: ``883``, ``2.3k`` below 10 000, ``12k`` above).
- Inside an answer's code fence, ``> `` and ``#### `` lines are the answer's. An answer cut off
  by ^C leaves its fence open: a ``#### `` line as aider writes an input (ending in the two
  spaces of its line break) ends such a fence, so it never swallows later inputs; the
  block's next heading ends it too. Counted in a warning.
- ``> `` lines before a block's first input are aider's start-up report: ``Main model:`` (or
  ``Model:``, ``Models:``) gives the session's model, ``Aider vX.Y.Z`` the agent's version,
  ``Git repo:`` is kept as recorded; they are counted (``startup_line``). A blank input
  (``#### <blank>``) sends the model nothing: counted (``blank_input``).
- Timestamps: only the block's start is recorded; every message gets it.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from typing import Any

from engine.models import ToolCall, Usage
from engine.recordings.base import (
    ImportError_,
    Item,
    Parsed,
    numbered_lines,
    parse_time,
    title_of,
)
from engine.recordings.writer import check

FORMAT = "aider"
HEADING = re.compile(r"# aider chat started at (.*\S)")
"""With ``match``: the heading and its time, trailing blanks left out. No lazy group before a
``\\s*$`` (each place it stops, the blanks after it are read again: a 300 KB line of spaces
took hours); ``.*\\S`` backtracks once, over the trailing blanks."""
NO_INPUT = (
    "[no recorded input] This aider session opens with an answer: the message aider sent "
    "for it (lint or test errors to fix, a --message) is not in its history."
)
"""The user message of a session whose first round has no recorded input."""
_MODEL = re.compile(r"^(?:Main model|Models?):\s*(\S+)")
_VERSION = re.compile(r"^Aider v(\S+)")
_COUNT = re.compile(
    r"(?<![\d,.])(\d[\d,]*(?:\.\d+)?)([kKmM]?)\s+(sent|cache write|cache hit|received)\b"
)
"""A count and what it counts. The look-behind starts a match only at the first digit of a run
of digits and commas: without it each digit of a 100 KB run was a new start that read the
rest of the run again (quadratic)."""


def looks_like(raw: str) -> bool:
    """A heading in the first 200 lines (taken one at a time, not the whole file split)."""
    return any(HEADING.match(line) for _, line, _ in numbered_lines(raw, 200))


def _count(number: str, unit: str) -> int:
    """``8,985`` → 8985, ``2.3k`` → 2300, ``12k`` → 12000."""
    scale = {"k": 1_000, "m": 1_000_000}.get(unit.lower(), 1)
    return round(float(number.replace(",", "")) * scale)


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


def _closes_open_fence(line: str) -> bool:
    """A ``#### `` line as aider writes an input: every one ends in two spaces (its line
    break); a heading an answer writes inside a code fence does not."""
    return line.startswith("####") and line.endswith("  ")


class _Block:
    """One ``# aider chat started at`` block being read."""

    def __init__(self, stamp: datetime, started: str) -> None:
        self.stamp = stamp
        self.items: list[Item] = []
        self.skipped: Counter[str] = Counter()
        self.warnings: list[str] = []
        self.recorded: dict[str, Any] = {"started_at": started}
        self.model = ""
        self.version = ""
        self.answer: list[str] = []
        self.answer_line = 0
        self.output: list[str] = []
        self.output_line = 0
        self.calls = 0
        self.step: Item | None = None  # the round's last step
        self.in_fence = False  # inside a ``` block of the answer being read
        self.placeholder: Item | None = None  # the first round's user message, not recorded
        self.cut_fences: list[int] = []  # lines where an input ended an open fence

    def has_input(self) -> bool:
        return any(i.kind == "user" for i in self.items)

    def flush_answer(self) -> None:
        self.in_fence = False
        text = "\n".join(self.answer).strip()
        self.answer = []
        if not text:
            return
        if not self.has_input():
            self.placeholder = Item("user", self.answer_line, self.stamp, text=NO_INPUT)
            self.items.append(self.placeholder)
            self.recorded["first_input"] = "not recorded"
            self.warnings.append(
                f"line {self.answer_line}: the session opens with an answer (aider did not "
                "write the message it sent); its first round has no recorded input"
            )
        self.step = Item("assistant", self.answer_line, self.stamp, text=text)
        self.items.append(self.step)

    def flush_output(self) -> None:
        lines, self.output = self.output, []
        if not any(line.strip() for line in lines):
            return
        if not self.has_input():
            for line in lines:
                if line.strip():
                    self.startup(line)
            return
        kept = []
        for line in lines:
            tokens = line.startswith("Tokens:")
            usage = _usage(line[len("Tokens:") :].strip()) if tokens else None
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
        version = _VERSION.match(line)
        if version and not self.version:
            self.version = version[1]
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

    def read(self, lines: list[str], first: int) -> None:
        """The block's lines after its heading; ``first`` is the first one's line number."""
        pending_input: list[str] = []
        input_line = 0

        def end_input() -> None:
            nonlocal pending_input
            if pending_input:
                self.user(input_line, "\n".join(pending_input))
            pending_input = []

        for number, line in enumerate(lines, start=first):
            if line.startswith("####") and (not self.in_fence or _closes_open_fence(line)):
                if self.in_fence:
                    self.cut_fences.append(number)
                    self.in_fence = False
                if not pending_input:
                    input_line = number
                pending_input.append(_input_line(line))
                continue
            end_input()
            if not self.in_fence and (line.startswith("> ") or line == ">"):
                self.flush_answer()
                if not self.output:
                    self.output_line = number
                self.output.append(line[1:].removeprefix(" ").rstrip())
            elif not line.strip() and self.output and not self.in_fence:
                continue  # blank lines between aider's messages
            else:
                self.flush_output()
                if not self.answer:
                    self.answer_line = number
                self.answer.append(line)
                if line.lstrip().startswith("```"):
                    self.in_fence = not self.in_fence  # its "> " lines are the answer's
        end_input()
        self.flush_answer()
        self.flush_output()
        if self.cut_fences:
            shown = ", ".join(map(str, self.cut_fences[:5]))
            self.warnings.append(
                f"{len(self.cut_fences)} answers cut off inside a code fence (the input at "
                f"line {shown}{', …' if len(self.cut_fences) > 5 else ''} ends it)"
            )


def _input_line(line: str) -> str:
    text = line[4:].removeprefix(" ").rstrip()
    return "" if text == "<blank>" else text


def _start(lines: list[str], start: int) -> tuple[datetime, str]:
    """The time the heading ``lines[start]`` names, and its text; ImportError_ when it names
    none."""
    heading = HEADING.match(lines[start])
    assert heading is not None
    problems: list[str] = []
    stamp = parse_time(heading[1].replace(" ", "T"), start + 1, problems)
    if stamp is None:
        raise ImportError_(problems or [f"line {start + 1}: no start time"], FORMAT)
    return stamp, heading[1]


def _read_block(
    lines: list[str], first: int, end: int, name: str, stamp: datetime, started: str
) -> Parsed | None:
    """The session of ``lines[first:end]`` (the lines after a heading), None when it holds no
    conversation; raises :class:`ImportError_` when it cannot be read."""
    block = _Block(stamp, started)
    block.read(lines[first:end], first + 1)
    if not block.items:
        return None
    inputs = [i for i in block.items if i.kind == "user" and i is not block.placeholder]
    parsed = Parsed(
        fmt=FORMAT,
        items=block.items,
        title=title_of(inputs, name),
        records=len(block.items) - (block.placeholder is not None) + sum(block.skipped.values()),
        skipped=block.skipped,
        warnings=block.warnings,
        model=block.model,
        recorded=block.recorded,
        agent_version=block.version,
    )
    problems = check(parsed)
    if problems:
        raise ImportError_(problems, FORMAT)
    return parsed


def parse_all(raw: str, name: str) -> list[Parsed]:
    """Every session of the file (one per ``# aider chat started at`` block), in order.

    A block that cannot be read is left out and named in the first session's warnings; the
    file is refused only when no block holds a conversation. A file that begins inside a
    session (its head cut off: inputs before the first heading) begins with that session,
    dated by the first heading.
    """
    lines = raw.removeprefix("\ufeff").splitlines()
    starts = [n for n, line in enumerate(lines) if HEADING.match(line)]
    head_end = starts[0] if starts else len(lines)
    before = sum(1 for line in lines[:head_end] if line.strip())
    out: list[Parsed] = []
    empty = 0
    left_out: list[str] = []
    times: dict[int, tuple[datetime, str]] = {}
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        try:
            times[start] = _start(lines, start)
            parsed = _read_block(lines, start + 1, end, name, *times[start])
        except ImportError_ as exc:
            left_out.append(
                f"line {start + 1}: a session that cannot be read, left out: "
                + "; ".join(exc.problems[:2])
            )
            continue
        if parsed is None:
            empty += 1
        else:
            out.append(parsed)
    if times and any(line.startswith("####") for line in lines[:head_end]):
        stamp = next(iter(times.values()))[0]
        try:
            headless = _read_block(lines, 0, head_end, name, stamp, "not recorded")
        except ImportError_ as exc:
            left_out.append(
                f"lines 1-{head_end}: a session that cannot be read, left out: "
                + "; ".join(exc.problems[:2])
            )
        else:
            if headless is not None:
                headless.warnings.insert(
                    0,
                    f"lines 1-{head_end}: the file begins inside a session (no "
                    "'# aider chat started at' heading above it); read as one, dated by the "
                    "first heading",
                )
                out.insert(0, headless)
                before = 0
    if not out:
        raise ImportError_(
            left_out or [f"{name} holds no conversation (no '#### ' input, no answer)"], FORMAT
        )
    first = out[0]
    if before:
        first.skipped["text_before_first_session"] += before
        first.warnings.append(
            f"{before} lines before the first '# aider chat started at' heading left out"
        )
    if empty:
        first.skipped["empty_session"] += empty
    if left_out:
        first.skipped["unreadable_session"] += len(left_out)
        first.warnings.extend(left_out)
    return out
