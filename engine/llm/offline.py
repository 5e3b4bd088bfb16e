"""The offline provider: deterministic rules in place of a language model.

Without ``ANTHROPIC_API_KEY`` ctxscope still runs whole ReAct rounds, so every part of the
engine (history, compression, compaction, the TUI) can be seen working on a machine with no
network. The rules, applied to the *current round* (the last user message with words of its own
and everything after it):

1. every file the @file system-reminder names is Read, in order, one per step;
2. then the user's commands are run, all in one answer (parallel tool calls). A command is one
   of ``ls [dir]``, ``glob PATTERN [in PATH]``, ``grep PATTERN [in PATH]``, ``read FILE``,
   ``run `CMD```, ``run: CMD``, ``todo: a; b; c``, ``recall QUERY``; several are joined by
   newlines or "then";
3. once every call has its result, a short report of what each tool returned ends the round;
4. input with no command and no mention gets a list of what this provider understands.

Usage figures are ctxscope's local token counts (``engine.messages.tokens``), with no cache
figures. Given settings, a request over ``context_window`` is refused as the Messages API
refuses it (``prompt is too long: N tokens > M maximum``), so the engine's paths for a request
that does not fit run offline too.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.llm.base import (
    OFFLINE_NAME,
    Cancelled,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    StreamEvent,
    StreamText,
    StreamToolUse,
)
from engine.messages.tokens import count_blocks, count_request
from engine.models import ToolCall, Usage
from engine.settings.config import Settings

_REMINDER = re.compile(r"<system-reminder>(.*?)</system-reminder>", re.S)
_MENTION_LINE = re.compile(r"^\s*The user mentioned (@.*)$", re.M)
_MENTION = re.compile(r"@([a-zA-Z0-9/._-]+)")
_QUOTED = re.compile(r"`[^`]*`")
_SEPARATOR = re.compile(r"\s*\n\s*|,?\s+(?:and\s+)?then\s+", re.I)
_NUMBERED_LINE = re.compile(r"^\s*\d+[\t→|:]", re.M)
_EXIT_CODE = re.compile(r"exit code (-?\d+)")
_STATUS_LINE = re.compile(r"^\[.*\]$")
_GREP_SUMMARY = re.compile(r"(\d+) (?:matching lines?|matches?) in (\d+) files?")
_OWN_ID = re.compile(r"toolu_off_[0-9a-f]+_\d+")
_GREP_HIT = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+)[:-]", re.M)

CAPABILITIES = (
    f"I am the {OFFLINE_NAME} provider: I follow fixed rules instead of a language model. "
    "I understand:\n"
    "- ls [dir]\n"
    "- glob PATTERN [in PATH]\n"
    "- grep PATTERN [in PATH]\n"
    "- read FILE\n"
    "- run `CMD`  (or run: CMD)\n"
    "- todo: first; second; third\n"
    "- recall QUERY  (search the archived rounds)\n"
    'Join several with "then" or new lines to run them together. Files you mention as @path '
    "are read first. Set ANTHROPIC_API_KEY to work with Claude."
)
"""The answer to anything the rules do not cover."""


@dataclass(frozen=True)
class PlannedCall:
    """A tool call the rules decided on."""

    name: str
    input: dict[str, Any]

    @property
    def label(self) -> str:
        return label_for(self.name, self.input)


@dataclass
class RoundView:
    """The current round as the request shows it."""

    start: int
    """Index of the round's user message in ``request.messages``."""
    text: str
    """The user's words, system-reminders removed."""
    mentions: list[str]
    calls: list[ToolCall] = field(default_factory=list)
    """Tool calls already made in this round, in order."""
    results: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """``tool_use_id`` → (result text, is_error)."""


class OfflineProvider:
    """A :class:`~engine.llm.base.Provider` that needs no network and no model."""

    name = OFFLINE_NAME
    model = "offline"
    is_model = False
    """No model writes summaries here: each strategy's extractive summariser does."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings

    def complete(
        self,
        request: ProviderRequest,
        on_event: Callable[[StreamEvent], None],
        cancel: threading.Event | None = None,
    ) -> ProviderResponse:
        """Answer by the rules in this module's docstring; text is streamed in a few pieces."""
        if cancel is not None and cancel.is_set():
            raise Cancelled("cancelled")
        usage_in = count_request(request.system, request.messages, request.tools)
        window = self.settings.context_window if self.settings is not None else None
        if window is not None and usage_in > window:
            # As the Messages API answers a request over the model's window (HTTP 400).
            raise ProviderError(
                "prompt_too_long",
                f"prompt is too long: {usage_in} tokens > {window} maximum",
                status=400,
            )
        current = find_round(request.messages)
        text, planned = decide(current)
        digest = _round_digest(request, current.start if current else len(request.messages))
        issued = _issued(current.calls) if current else 0
        calls = [
            ToolCall(id=f"toolu_off_{digest}_{issued + n}", name=p.name, input=p.input)
            for n, p in enumerate(planned, 1)
        ]
        for piece in _pieces(text):
            on_event(StreamText(text=piece))
        for call in calls:
            on_event(StreamToolUse(call=call))
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        content += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in calls
        ]
        usage = Usage(
            input_tokens=usage_in,
            output_tokens=count_blocks(content),
        )
        return ProviderResponse(
            content=content,
            stop_reason="tool_use" if calls else "end_turn",
            usage=usage,
            usage_source="local",  # ctxscope's own count: there is no API here
        )

    def ask_text(
        self,
        system: str,
        text: str,
        timeout: float,
        *,
        model: str | None = None,
        retries: int | None = None,
    ) -> str:
        """There is no model to ask: summaries offline are each strategy's extractive ones
        (``is_model`` is False, so nothing asks)."""
        raise ProviderError("bad_request", "the offline provider has no model to ask")


# --- reading the request ------------------------------------------------------------------


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))


def mentions_in(text: str) -> list[str]:
    """The files the @file system-reminders of ``text`` name, in order, de-duplicated."""
    found: list[str] = []
    for reminder in _REMINDER.findall(text):
        for line in _MENTION_LINE.findall(reminder):
            for path in _MENTION.findall(line):
                path = _strip_dots(path)
                if path and path not in found:
                    found.append(path)
    return found


def find_round(messages: list[dict[str, Any]]) -> RoundView | None:
    """The current round: the last user message with words of its own, and what follows.

    A user message that only carries tool results (and perhaps the todo-recap reminder) is a
    step of a round, not the start of one.
    """
    for start in range(len(messages) - 1, -1, -1):
        message = messages[start]
        if message.get("role") != "user":
            continue
        texts = [b.get("text", "") for b in _blocks(message) if b.get("type") == "text"]
        # The input is the last block with words of its own: a summary placed as a user
        # message (seed 004) can share the turn, before it.
        own = [t for t in texts if _REMINDER.sub("", t).strip()]
        words = _REMINDER.sub("", own[-1]).strip() if own else ""
        has_results = any(b.get("type") == "tool_result" for b in _blocks(message))
        if words or (texts and not has_results):
            return _collect(messages, start, words, mentions_in(own[-1] if own else ""))
    return None


def _collect(
    messages: list[dict[str, Any]], start: int, words: str, mentions: list[str]
) -> RoundView:
    view = RoundView(start=start, text=words, mentions=mentions)
    for message in messages[start + 1 :]:
        for block in _blocks(message):
            if message.get("role") == "assistant" and block.get("type") == "tool_use":
                view.calls.append(
                    ToolCall(id=block["id"], name=block["name"], input=block.get("input") or {})
                )
            elif block.get("type") == "tool_result":
                view.results[block.get("tool_use_id", "")] = (
                    _result_text(block),
                    bool(block.get("is_error")),
                )
    return view


# --- the rules ----------------------------------------------------------------------------


def decide(current: RoundView | None) -> tuple[str, list[PlannedCall]]:
    """The answer text and the tool calls for the next step of ``current``."""
    if current is None:
        return CAPABILITIES, []
    pending = pending_mentions(current)
    if pending:
        path = pending[0]
        order = ""
        if len(current.mentions) > 1:
            order = f" (file {current.mentions.index(path) + 1} of {len(current.mentions)})"
        thought = f"Thought: the user mentioned {path}{order}; I must read it first."
        return thought, [PlannedCall("Read", {"file_path": path})]

    commands, unknown = parse_commands(current.text)
    # "look at @a.py" was answered by reading a.py: not a request left unanswered.
    unknown = [u for u in unknown if not any(f"@{m}" in u for m in current.mentions)]
    # A mentioned file was read by rule 1 already; reading it again would add nothing.
    commands = [
        c for c in commands if not (c.name == "Read" and c.input["file_path"] in current.mentions)
    ]
    mention_reads = {c.id for c in current.calls if _is_mention_read(c, current.mentions)}
    if commands and not [c for c in current.calls if c.id not in mention_reads]:
        if len(commands) == 1:
            thought = f"Thought: the user asked for {commands[0].label}; I will call it."
        else:
            names = ", ".join(c.label for c in commands)
            thought = (
                f"Thought: the user asked for {len(commands)} things; "
                f"I will call them together: {names}."
            )
        return thought, commands
    if current.calls:
        return report(current, unknown), []
    return CAPABILITIES, []


def pending_mentions(current: RoundView) -> list[str]:
    """The mentioned files still to read: the round's plan is its input (the mentions, in
    order), and where it stands is the furthest mention read among the calls the request
    still shows. A compaction inside the round archives its older steps, never its newest,
    so the plan survives it; a command call means every mention was read before it."""
    if any(not _is_mention_read(c, current.mentions) for c in current.calls):
        return []
    read = [current.mentions.index(c.input["file_path"]) for c in current.calls]
    return current.mentions[max(read, default=-1) + 1 :]


def _issued(calls: list[ToolCall]) -> int:
    """How many calls this provider issued in the round: the highest number its ids carry
    (after a compaction inside the round the request shows fewer calls than were made, and a
    number used again would repeat a ``tool_use`` id)."""
    numbers = [int(c.id.rsplit("_", 1)[1]) for c in calls if _OWN_ID.fullmatch(c.id)]
    return max([len(calls), *numbers])


def _is_mention_read(call: ToolCall, mentions: list[str]) -> bool:
    return call.name == "Read" and call.input.get("file_path") in mentions


def _strip_dots(path: str) -> str:
    """Trailing dots are sentence punctuation, unless nothing else would remain (``..``)."""
    stripped = path.rstrip(".,")
    return stripped if any(c.isalnum() for c in stripped) else path


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        return text[1:-1]
    return text


def split_requests(text: str) -> list[str]:
    """The separate requests of one input: split at newlines and "then", not inside `…`."""
    quoted: list[str] = []

    def stash(match: re.Match[str]) -> str:
        quoted.append(match.group(0))
        return f"\x00{len(quoted) - 1}\x00"

    masked = _QUOTED.sub(stash, text)
    pieces = _SEPARATOR.split(masked)
    restored = [re.sub(r"\x00(\d+)\x00", lambda m: quoted[int(m.group(1))], p) for p in pieces]
    return [p.strip() for p in restored if p.strip()]


def parse_command(request: str) -> PlannedCall | None:
    """One request as a tool call, or None when it is not a command this provider knows."""
    if m := re.fullmatch(r"ls(?:\s+(\S+))?", request, re.I):
        path = _strip_dots(m.group(1) or ".")
        return PlannedCall("LS", {"path": path})
    if m := re.fullmatch(r"glob\s+(\S+)(?:\s+in\s+(\S+))?", request, re.I):
        args = {"pattern": _unquote(m.group(1))}
        if m.group(2):
            args["path"] = _strip_dots(m.group(2))
        return PlannedCall("Glob", args)
    if m := re.fullmatch(r"grep\s+(.+?)(?:\s+in\s+(\S+))?", request, re.I | re.S):
        args = {"pattern": _unquote(m.group(1))}
        if m.group(2):
            args["path"] = _strip_dots(m.group(2))
        return PlannedCall("Grep", args)
    if m := re.fullmatch(r"read\s+@?(\S+)", request, re.I):
        path = _strip_dots(m.group(1))
        return PlannedCall("Read", {"file_path": path})
    if m := re.fullmatch(r"run\s+`([^`]+)`\.?|run:\s*(.+)", request, re.I | re.S):
        command = (m.group(1) or m.group(2)).strip()
        return PlannedCall("Bash", {"command": command})
    if m := re.fullmatch(r"recall\s+(.+)", request, re.I | re.S):
        return PlannedCall("Recall", {"query": _unquote(m.group(1))})
    if m := re.fullmatch(r"todo:\s*(.+)", request, re.I | re.S):
        items = [item.strip() for item in m.group(1).split(";") if item.strip()]
        todos = [{"content": item, "status": "pending"} for item in items]
        return PlannedCall("TodoWrite", {"todos": todos})
    return None


def parse_commands(text: str) -> tuple[list[PlannedCall], list[str]]:
    """The commands of ``text`` and the requests that were not commands."""
    commands: list[PlannedCall] = []
    unknown: list[str] = []
    for request in split_requests(text):
        call = parse_command(request)
        if call is None:
            unknown.append(request)
        else:
            commands.append(call)
    return commands, unknown


# --- the report ---------------------------------------------------------------------------


def _first_line(text: str, limit: int = 120) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def describe_result(call: ToolCall, text: str, is_error: bool) -> str:
    """One report line: what ``call`` returned, with the figures a reader looks for."""
    label = label_for(call.name, call.input)
    if is_error or text.startswith("Error"):
        return f'{label}: error "{_error_line(text)}"'
    if not text.strip():
        return f"{label}: no output"
    if call.name == "Bash" and (code := _EXIT_CODE.search(text)):
        output = [ln for ln in text.splitlines() if ln.strip() and not _STATUS_LINE.match(ln)]
        shown = _first_line(output[0]) if output and output[0] != "(no output)" else "no output"
        more = f" (+{_plural(len(output) - 1, 'line')})" if len(output) > 1 else ""
        return f"{label}: exit code {code.group(1)}, {shown}{more}"
    if call.name == "Read" and (lines := len(_NUMBERED_LINE.findall(text))):
        return f"{label}: {_plural(lines, 'line')}"
    if call.name == "Grep" and (summary := _GREP_SUMMARY.search(text)):
        # The tool's own totals: the lines it shows may be capped.
        matches, files = int(summary.group(1)), int(summary.group(2))
        return f"{label}: {_plural(matches, 'match', 'matches')} in {_plural(files, 'file')}"
    if call.name == "Grep" and (hits := _GREP_HIT.findall(text)):
        files = len({file for file, _ in hits})
        return f"{label}: {_plural(len(hits), 'match', 'matches')} in {_plural(files, 'file')}"
    return f"{label}: {_first_line(text)}"


def _error_line(text: str) -> str:
    """The line saying what went wrong: an ``Error …`` line, a ``[status]`` line, or the first."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in lines:
        if line.startswith("Error"):
            return _first_line(line)
    if lines and _STATUS_LINE.match(lines[-1]):
        return _first_line(lines[-1][1:-1])
    return _first_line(text)


def label_for(name: str, args: dict[str, Any]) -> str:
    """How thoughts and the report name a call: ``Read README.md``, ``Bash `ls```…"""
    if name == "LS":
        return f"LS {args.get('path', '.')}"
    if name in ("Glob", "Grep"):
        return f"{name} {args.get('pattern', '')}"
    if name == "Read":
        return f"Read {args.get('file_path', '')}"
    if name == "Bash":
        return f"Bash `{args.get('command', '')}`"
    if name == "Recall":
        return f"Recall {args.get('query', '')}"
    if name == "TodoWrite":
        return f"TodoWrite ({_plural(len(args.get('todos') or []), 'item')})"
    return name


def report(current: RoundView, unknown: list[str]) -> str:
    """The final answer of a round: one line per tool call made."""
    lines = ["Done. What the tools returned:"]
    for call in current.calls:
        if call.id in current.results:
            text, is_error = current.results[call.id]
            lines.append(f"- {describe_result(call, text, is_error)}")
        else:
            lines.append(f"- {label_for(call.name, call.input)}: no result")
    if unknown:
        skipped = "; ".join(f'"{u}"' for u in unknown)
        lines.append(f"I could not act on {skipped}: it is not a command I know.")
    return "\n".join(lines)


# --- output -------------------------------------------------------------------------------


def _round_digest(request: ProviderRequest, start: int) -> str:
    """A short hash of everything up to the round's user message: unique per round."""
    prefix = json.dumps(
        [request.system, request.messages[: start + 1]], sort_keys=True, default=str
    )
    return hashlib.sha1(prefix.encode(), usedforsecurity=False).hexdigest()[:10]


def _pieces(text: str, parts: int = 3) -> list[str]:
    """``text`` in a few pieces cut at spaces, as a stream would deliver it."""
    words = re.split(r"(?<= )", text)
    size = max(1, -(-len(words) // parts))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]
