"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``).

Each line is a ``RolloutLine`` ``{timestamp, type, payload}`` (openai/codex,
``codex-rs/protocol/src/protocol.rs``: ``RolloutItem`` is tagged by ``type`` with its content
in ``payload``). Decisions:

- ``session_meta`` gives the recorded session's id, ``cwd``, ``cli_version`` (the agent's
  version, :attr:`Parsed.agent_version`, which the report names), ``originator`` (``git`` and
  newer fields such as ``model_provider`` too; ``base_instructions`` is counted, not kept).
  ``turn_context`` gives the model (the session's model is the first one; every model named
  is listed in ``recorded.models``); ``task_started`` and ``token_count`` the context window.
- ``response_item`` ``message``: a ``user`` message opens a round, an ``assistant`` message is
  (part of) a step. ``developer`` messages and the user messages Codex writes itself
  (``<environment_context>``, ``<user_instructions>``, ``# AGENTS.md instructions``) are
  context, not input: before the first input they are the hidden prefix (kept in the first
  user message's ``meta.origin``); later ones are counted (``context_message``). So are the
  other user-role messages Codex marks as "not user intent" (``codex-rs/core``
  ``contextual_user_message.rs``: ``<skill>``, ``<user_shell_command>``,
  ``<subagent_notification>``, ``<additional_context>``), and a message any of whose content
  items is one (0.147's ``<recommended_plugins>`` + AGENTS.md + environment message). A
  ``<turn_aborted>`` message (Codex's note to the model that the user interrupted the turn)
  opens no round: it ends the step and is counted (``turn_aborted``).
- Consecutive assistant-side items (``reasoning``, assistant ``message``, ``function_call``,
  ``custom_tool_call``, ``local_shell_call``) are one step: one model response. A
  ``reasoning`` item's summary texts are its thinking (``encrypted_content`` is opaque and
  counted when it is all there is: ``reasoning_encrypted``; an item with neither, as Entire
  stores them, ``reasoning_empty``).
- ``function_call`` (arguments: a JSON string) and ``custom_tool_call`` (``input``: raw text,
  ``apply_patch``'s patch) are tool calls under their recorded names (``shell``,
  ``exec_command``, ``update_plan``, ``apply_patch``...); their ``*_output`` items the
  results. A ``tool_search_call`` the client runs (``execution`` not ``server``) is a
  ``tool_search`` call (its ``arguments``), its ``tool_search_output`` the result (the tools it
  found). Calls the server runs inside the response (``web_search_call``, a server
  ``tool_search_call``, ``image_generation_call``) have no output item: they belong to the
  step and are counted by kind. An output that is JSON ``{output, metadata: {exit_code}}``
  gives the text and the exit code (an error when not 0); newer plain outputs say ``Process
  exited with code N``;
  an ``apply_patch`` output that is not JSON and does not start with ``Success`` is Codex's
  verification failure, an error.
- ``event_msg/token_count``: ``info.last_token_usage`` is one model call's usage. Only events
  whose ``total_token_usage`` changed count (the others repeat it: ``token_count_repeat``).
  OpenAI's ``input_tokens`` include the cached ones, so the input is ``input - cached`` and
  the cache read ``cached``. Where the count goes depends on the version, read from the file
  itself at its first count: 0.47 writes a response's count before the response's items (the
  turn's first count comes before any step), so a count after a step's own items and outputs
  goes to the next step; newer versions write it after the response, before its tool outputs
  (0.104-0.130) or after them (0.140, 0.142), so a count goes to the latest step that has none
  (the call it measures), never to the next one; a count when the latest step has one already is
  the compaction's own call when a compaction follows (``recorded_call`` of its summary), else
  ``token_count_unmatched``.
- Each step is answered by the model the last ``turn_context`` names (``Item.model``).
- ``compacted`` (``message``, ``replacement_history``) is a recorded compaction: its summary
  is the replacement history's conversation messages (what the model saw afterwards), or the
  message when there is no history. ``event_msg/context_compacted`` next to it is the same
  compaction; alone (a compaction made on the server, whose summary is encrypted) it is a
  compaction with a placeholder summary. The context size before it is the last call's
  ``total_tokens``. Codex does not record whether a compaction was automatic: ``auto``.
- ``event_msg`` mirrors of items (``user_message``, ``agent_message``, ``agent_reasoning``...)
  and the other records are counted by kind.
- Tolerant, as the rollout changes with every release: a record of a type this version does
  not know is counted by its type; a line that is not JSON (``not_json``), a line that is not
  a rollout record (``not_a_rollout_line``), a record of a known type in a shape not expected
  (``unexpected_shape:<type>``), a call without an id (``call_without_id``) and an output
  that answers no call of the step before it (``output_without_call``) are left out, counted
  and named by line in a warning; a bad timestamp takes the previous record's time. The file
  is refused only when it holds no user input.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from engine.models import ToolCall, Usage, utcnow
from engine.recordings.base import (
    ImportError_,
    Item,
    JsonLines,
    Known,
    NotRead,
    Parsed,
    numbers_named,
    parse_time,
    title_of,
)

FORMAT = "codex"
LINE_TYPES = ("session_meta", "response_item", "compacted", "turn_context", "event_msg")
_CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<skill>",
    "<user_shell_command>",
    "<subagent_notification>",
    "<additional_context>",
)
TURN_ABORTED = "<turn_aborted>"
"""How Codex's note that the user interrupted a turn begins (a user-role message)."""
_ASSISTANT_ITEMS = ("reasoning", "function_call", "custom_tool_call", "local_shell_call")
_SERVER_ITEMS = ("web_search_call", "image_generation_call", "tool_search_call")
"""Items of a response the server ran itself: part of the step, with no output item."""
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")
_EXIT = re.compile(r"(?:Process exited with code|Exit code:?)\s*(-?\d+)")
Record = tuple[int, dict[str, Any]]
"""A rollout line read as JSON, with its line number."""
SERVER_SUMMARY = "(Codex compacted the conversation on the server; its summary is encrypted.)"


def looks_like(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and obj.get("type") in LINE_TYPES
        and isinstance(obj.get("payload"), dict)
        and "role" not in obj
    )


def _texts(content: Any) -> str:
    """The text of a message's ``content`` (``input_text`` / ``output_text`` items)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for part in content:
        if isinstance(part, dict):
            if isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif part.get("type") == "input_image":
                parts.append("[image]")
    return "\n".join(parts)


def is_context(role: str, text: str, content: Any = None) -> bool:
    """A message Codex writes itself (instructions, environment), not the user's input: as
    Codex judges it (``is_contextual_user_fragment``), a message one of whose ``content`` items
    is such a fragment is context as a whole (0.147 sends a plugin list, AGENTS.md and the
    environment as three items of one user message)."""
    if role in ("developer", "system") or text.lstrip().startswith(_CONTEXT_PREFIXES):
        return True
    return isinstance(content, list) and any(
        isinstance(part, dict)
        and isinstance(part.get("text"), str)
        and part["text"].lstrip().startswith(_CONTEXT_PREFIXES)
        for part in content
    )


def _usage(last: dict[str, Any]) -> Usage:
    cached = int(last.get("cached_input_tokens") or 0)
    return Usage(
        input_tokens=max(int(last.get("input_tokens") or 0) - cached, 0),
        cache_read_input_tokens=cached,
        output_tokens=int(last.get("output_tokens") or 0),
    )


def _output(raw: Any) -> tuple[str, dict[str, Any] | None]:
    """A tool output's text and its recorded metadata (exit code, duration) if any."""
    if isinstance(raw, dict):  # newer: FunctionCallOutputPayload {content, success}
        raw = raw.get("content", raw.get("output", json.dumps(raw)))
    if isinstance(raw, list):
        return _texts(raw), None
    text = "" if raw is None else str(raw)
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            return text, None
        if isinstance(obj, dict) and "output" in obj:
            meta = obj.get("metadata")
            return str(obj["output"]), meta if isinstance(meta, dict) else {}
    return text, None


def _found_tools(tools: Any) -> str:
    """A ``tool_search_output``'s text: the tools it found, by name (one a line)."""
    if not isinstance(tools, list):
        return json.dumps(tools)
    names = []
    for tool in tools:
        name = tool.get("name") if isinstance(tool, dict) else None
        names.append(str(name) if name else json.dumps(tool))
    return "\n".join(names)


def _is_error(name: str, text: str, meta: dict[str, Any] | None) -> bool:
    if meta is not None:
        code = meta.get("exit_code")
        return isinstance(code, int) and code != 0
    found = _EXIT.search(text[:400])
    if found:
        return int(found[1]) != 0
    return name == "apply_patch" and not text.startswith("Success")


def _call(payload: dict[str, Any]) -> ToolCall | None:
    kind = payload.get("type")
    call_id = payload.get("call_id") or payload.get("id")
    if not isinstance(call_id, str):
        return None
    if kind == "function_call":
        raw = payload.get("arguments")
        try:
            args = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            args = None
        return ToolCall(
            id=call_id,
            name=str(payload.get("name", "")),
            input=args if isinstance(args, dict) else {"arguments": raw},
        )
    if kind == "custom_tool_call":
        return ToolCall(
            id=call_id, name=str(payload.get("name", "")), input={"input": payload.get("input")}
        )
    if kind == "tool_search_call":
        args = payload.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = {"arguments": args}
        return ToolCall(
            id=call_id, name="tool_search", input=args if isinstance(args, dict) else {}
        )
    action = payload.get("action")
    return ToolCall(
        id=call_id, name="local_shell", input=action if isinstance(action, dict) else {}
    )


class _Reader:
    """The state of one pass over a rollout's lines."""

    def __init__(self) -> None:
        self.items: list[Item] = []
        self.skipped: Counter[str] = Counter()
        self.left_out: dict[str, list[int]] = {}  # why -> line numbers, for the warnings
        self.problems: list[str] = []
        self.last_time = utcnow()
        self.bad_times: list[int] = []
        self.awaiting: set[str] = set()  # call ids of the current step not yet answered
        self.hidden: list[dict[str, Any]] = []
        self.recorded: dict[str, Any] = {}
        self.models: list[str] = []
        self.names: dict[str, str] = {}  # call id -> tool name
        self.step: Item | None = None  # the step being built (consecutive assistant items)
        self.last_step: Item | None = None
        self.since_step = False  # something other than the step's own items came after it
        self.pending_usage: Usage | None = None
        self.last_total: Any = None
        self.last_call_tokens: int | None = None
        self.compacted_here = False  # a compaction was recorded since the last step
        self.started = False  # the first genuine user input was read
        self.step_in_turn = False  # a step was read since the last user input
        self.count_after: bool | None = None
        """Whether this version writes a response's count after its items (decided at the
        first count: after a step of the turn, or before any)."""
        self.model = ""  # the model the last turn_context names

    def leave_out(self, why: str, number: int) -> None:
        """A line not read: counted under ``why`` and named by line in a warning."""
        self.skipped[why] += 1
        self.left_out.setdefault(why, []).append(number)

    def line(self, number: int, obj: dict[str, Any]) -> None:
        kind, payload = obj["type"], obj["payload"]
        bad: list[str] = []
        created = parse_time(obj.get("timestamp"), number, bad)
        if created is None:
            if bad:
                self.bad_times.append(number)  # the record is read; its time is not
            created = self.last_time
        self.last_time = created
        if kind not in LINE_TYPES:
            self.skipped[kind] += 1  # a record type this version does not read
        elif kind == "session_meta":
            self.session_meta(payload)
        elif kind == "turn_context":
            self.skipped["turn_context"] += 1
            model = payload.get("model")
            if isinstance(model, str) and model:
                self.model = model
                if model not in self.models:
                    self.models.append(model)
            if isinstance(payload.get("cwd"), str):
                self.recorded.setdefault("cwd", payload["cwd"])
        elif kind == "event_msg":
            self.event(number, created, payload)
        elif kind == "compacted":
            self.compacted(number, created, payload)
        else:
            self.response_item(number, created, payload)

    def session_meta(self, payload: dict[str, Any]) -> None:
        nested = payload.get("meta")
        meta: dict[str, Any] = nested if isinstance(nested, dict) else payload
        for key in (
            "id",
            "session_id",
            "cwd",
            "cli_version",
            "originator",
            "model_provider",
            "history_mode",  # 0.144+: "legacy", or "paginated" (fewer event mirrors)
        ):
            if isinstance(meta.get(key), str):
                self.recorded["session_id" if key == "id" else key] = meta[key]
        source = meta.get("source")
        if isinstance(source, str):
            self.recorded["source"] = source
        git = payload.get("git")
        if isinstance(git, dict):
            self.recorded["git"] = git
        if meta.get("instructions") or meta.get("base_instructions"):
            self.skipped["base_instructions"] += 1

    def close_step(self) -> None:
        self.step = None

    def event(self, number: int, created: Any, payload: dict[str, Any]) -> None:
        kind = str(payload.get("type"))
        if kind == "token_count":
            info = payload.get("info")
            if not isinstance(info, dict) or info.get("total_token_usage") == self.last_total:
                self.skipped["token_count_repeat"] += 1
                return
            self.last_total = info.get("total_token_usage")
            window = info.get("model_context_window")
            if isinstance(window, int):
                self.recorded["context_window"] = window
            last = info.get("last_token_usage")
            if not isinstance(last, dict):
                self.skipped["token_count_repeat"] += 1
                return
            usage = _usage(last)
            total = last.get("total_tokens")
            self.last_call_tokens = total if isinstance(total, int) else None
            if self.count_after is None:
                self.count_after = self.step_in_turn
            step = self.last_step
            if self.count_after:
                if step is not None and step.usage is None:
                    step.usage = usage
                    return
                if self.pending_usage is not None:
                    self.skipped["token_count_unmatched"] += 1
                self.pending_usage = usage  # the next compaction's call, if one comes
            elif step is not None and step.usage is None and not self.since_step:
                step.usage = usage
            else:
                self.pending_usage = usage
        elif kind == "task_started" and isinstance(payload.get("model_context_window"), int):
            self.recorded["context_window"] = payload["model_context_window"]
            self.skipped["event_msg:task_started"] += 1
        elif kind == "context_compacted":
            if self.compacted_here:
                self.skipped["event_msg:context_compacted"] += 1
            else:
                self.summary(number, created, SERVER_SUMMARY, {})
        else:
            self.skipped[f"event_msg:{kind}"] += 1

    def summary(self, number: int, created: Any, text: str, figures: dict[str, Any]) -> None:
        self.close_step()
        self.since_step = True
        self.compacted_here = True
        item = Item(
            "summary",
            number,
            created,
            text=text,
            pre_tokens=self.last_call_tokens,
            compaction=figures or None,
        )
        if self.count_after and self.pending_usage is not None:
            # A count after the last step had its own: the compaction's own call.
            item.recorded_call = {"model": self.model, "usage": self.pending_usage.model_dump()}
            self.pending_usage = None
        self.items.append(item)

    def compacted(self, number: int, created: Any, payload: dict[str, Any]) -> None:
        history = payload.get("replacement_history")
        text = str(payload.get("message") or "")
        figures = {
            k: payload[k]
            for k in ("window_number", "window_id", "previous_window_id")
            if isinstance(payload.get(k), (int, str)) and not isinstance(payload.get(k), bool)
        }
        kept: list[str] = []
        if isinstance(history, list):
            for wrapped in history:
                # An entry is a response item, or (newer) an envelope holding one.
                inner = wrapped.get("item") if isinstance(wrapped, dict) else None
                entry = inner if isinstance(inner, dict) else wrapped
                if not isinstance(entry, dict) or entry.get("type") != "message":
                    continue
                role = str(entry.get("role", ""))
                body = _texts(entry.get("content"))
                if body and not is_context(role, body, entry.get("content")):
                    kept.append(f"[{role}]\n{body}")
            text = "\n\n".join(kept) or text
        last = self.items[-1] if self.items else None
        if self.compacted_here and last is not None and last.kind == "summary":
            last.text = text or last.text  # the event came first; this is its record
            last.compaction = {**(last.compaction or {}), **figures} or None
            self.skipped["event_msg:context_compacted"] += 1
        else:
            self.summary(number, created, text or SERVER_SUMMARY, figures)
        if isinstance(history, list):  # its size, for the degenerate flags (issue 41)
            counts = {"items": len(history), "conversation": len(kept)}
            last = self.items[-1]
            last.recorded_call = {**(last.recorded_call or {}), "replacement_history": counts}

    def response_item(self, number: int, created: Any, payload: dict[str, Any]) -> None:
        kind = str(payload.get("type"))
        if kind == "message":
            role = str(payload.get("role", ""))
            text = _texts(payload.get("content"))
            if role == "assistant":
                step = self.assistant(number, created)
                step.text = "\n".join(t for t in (step.text, text) if t)
                return
            if role == "user" and text.lstrip().startswith(TURN_ABORTED):
                self.close_step()
                self.awaiting.clear()
                self.skipped["turn_aborted"] += 1
                return
            if is_context(role, text, payload.get("content")):
                if self.started:
                    self.skipped["context_message"] += 1
                else:
                    self.hidden.append({"line": number, "role": role, "text": text})
                return
            self.close_step()
            self.awaiting.clear()
            self.since_step = True
            self.started = True
            self.step_in_turn = False
            self.items.append(Item("user", number, created, text=text))
        elif kind == "reasoning":
            parts = payload.get("summary")
            texts = [
                str(p.get("text", ""))
                for p in (parts if isinstance(parts, list) else [])
                if isinstance(p, dict) and p.get("text")
            ]
            content = payload.get("content")
            if isinstance(content, list):
                texts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
            step = self.assistant(number, created)
            if texts:
                step.thinking.append({"type": "thinking", "thinking": "\n".join(texts)})
            elif payload.get("encrypted_content"):
                self.skipped["reasoning_encrypted"] += 1
            else:  # nothing kept at all (Entire drops the encrypted part from its copies)
                self.skipped["reasoning_empty"] += 1
        elif kind in _SERVER_ITEMS and (
            kind != "tool_search_call" or payload.get("execution") == "server"
        ):
            self.assistant(number, created)  # run by the server within the response
            self.skipped[f"response_item:{kind}"] += 1
        elif kind in (*_ASSISTANT_ITEMS, "tool_search_call"):
            call = _call(payload)
            if call is None:
                self.leave_out("call_without_id", number)
                return
            self.names[call.id] = call.name
            self.assistant(number, created).calls.append(call)
            self.awaiting.add(call.id)
        elif kind in _OUTPUTS:
            if kind == "tool_search_output" and payload.get("execution") == "server":
                self.skipped[f"response_item:{kind}"] += 1
                return
            call_id = str(payload.get("call_id", ""))
            if call_id not in self.awaiting:
                # The writer pairs a result with a call of the step just before it; one that
                # answers nothing there (a resumed or cut rollout) is left out, not refused.
                self.leave_out("output_without_call", number)
                return
            self.awaiting.discard(call_id)
            self.close_step()
            self.since_step = True
            name = self.names.get(call_id, "")
            if kind == "tool_search_output":
                text, meta = _found_tools(payload.get("tools")), None
            else:
                text, meta = _output(payload.get("output"))
            self.items.append(
                Item(
                    "result",
                    number,
                    created,
                    text=text,
                    tool_use_id=call_id,
                    is_error=_is_error(name, text, meta),
                    recorded=meta or None,
                )
            )
        else:  # web_search_call, compaction (encrypted), ghost_snapshot, other
            self.skipped[f"response_item:{kind}"] += 1

    def assistant(self, number: int, created: Any) -> Item:
        """The step being built, or a new one (which takes a usage read before it)."""
        if self.step is None:
            self.awaiting.clear()  # the writer pairs results with the latest step only
            self.step = Item("assistant", number, created, model=self.model)
            if not self.count_after:
                self.step.usage = self.pending_usage
            elif self.pending_usage is not None:
                self.skipped["token_count_unmatched"] += 1
            self.pending_usage = None
            self.step_in_turn = True
            self.items.append(self.step)
            self.last_step = self.step
            self.since_step = False
            self.compacted_here = False
        return self.step


def parse(raw: str, name: str, given: Known | None = None) -> Parsed:
    """A whole rollout, read by the one tolerant line reader (:class:`JsonLines`: a BOM, CRLF,
    blank, comment, damaged, repeated and cut lines left out and named): lines of kinds this
    parser does not know are named, not refused; it reads what it knows. ``given``: what
    reading the file made of ``raw`` already (:meth:`JsonLines.read`)."""
    reader = JsonLines()
    return parse_records(known(reader.read(raw, given), reader.not_read), reader, name)


def known(records: list[Record], not_read: NotRead) -> list[Record]:
    """The rollout lines of kinds this parser reads; the others named in ``not_read``."""
    out = []
    for number, obj in records:
        if looks_like(obj):
            out.append((number, obj))
        elif isinstance(obj.get("type"), str):
            not_read.kind(obj["type"], number)
        else:
            not_read.line("not a record (no type)", number)
    return out


def parse_records(records: list[Record], reader: JsonLines, name: str) -> Parsed:
    """A rollout from its known lines, with what the reader left out (copied: ``watch``
    parses the same reader's records again at every look)."""
    parsed = parse_read(records, reader.lines, name, Counter(reader.skipped), list(reader.warnings))
    parsed.not_read.merge(reader.not_read)
    version = parsed.recorded.get("cli_version")
    parsed.agent_version = parsed.agent_version or (version if isinstance(version, str) else "")
    return parsed


def parse_read(
    records: list[Record],
    n_lines: int,
    name: str,
    skipped: Counter[str],
    warnings: list[str],
    problems: list[str] | None = None,
) -> Parsed:
    """A rollout from its lines read as JSON (``(line number, object)``): the one parser of a
    whole file (:func:`parse`) and of a file being followed (:mod:`engine.recordings.follow`)."""
    reader = _Reader()
    reader.skipped.update(skipped)
    reader.problems.extend(problems or [])
    for number, obj in records:
        if not (
            isinstance(obj, dict)
            and isinstance(obj.get("type"), str)
            and isinstance(obj.get("payload"), dict)
        ):
            reader.leave_out("not_a_rollout_line", number)
            continue
        try:
            reader.line(number, obj)
        except (TypeError, ValueError, AttributeError, KeyError):
            reader.leave_out(f"unexpected_shape:{obj['type']}", number)
    if reader.pending_usage is not None:
        reader.skipped["token_count_unmatched"] += 1
    if not any(i.kind == "user" for i in reader.items) and not reader.problems:
        reader.problems.append(f"{name} holds no user input")
    if reader.problems:
        raise ImportError_(reader.problems, FORMAT)
    if reader.models:
        reader.recorded["models"] = reader.models
    warnings = list(warnings)
    for why, numbers in reader.left_out.items():
        head, _, tail = why.partition(":")
        why_text = head.replace("_", " ") + (f" ({tail})" if tail else "")
        warnings.append(f"{numbers_named('line', numbers)}: {why_text}; left out")
    if reader.bad_times:
        warnings.append(
            f"{numbers_named('line', reader.bad_times)}: bad timestamp;"
            " the previous record's time used"
        )
    return Parsed(
        fmt=FORMAT,
        items=reader.items,
        title=title_of(reader.items, name),
        records=n_lines,
        skipped=reader.skipped,
        warnings=warnings,
        model=reader.models[0] if reader.models else "",
        recorded=reader.recorded,
        hidden=reader.hidden,
        cwd=str(reader.recorded.get("cwd", "")),
        source_session=str(reader.recorded.get("session_id", "")),
        agent_version=str(reader.recorded.get("cli_version", "")),
    )
