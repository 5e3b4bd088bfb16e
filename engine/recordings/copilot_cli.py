"""GitHub Copilot CLI sessions (``~/.copilot/session-state/<session id>/events.jsonl``).

Each line is an event ``{type, data, id, timestamp, parentId}``. Shapes read (checked against
the event shapes other readers of real files test with: copilot-usage, agentsview, claude-tap):

- ``session.start`` ``{sessionId, version, producer: "copilot-agent", copilotVersion,
  startTime, context: {cwd, gitRoot, branch, repository}, selectedModel}``: the session's id,
  working directory, the agent's version (:attr:`Parsed.agent_version`) and first model;
  ``session.model_change`` ``{newModel}`` and ``session.resume`` ``{selectedModel}`` change
  the model the next requests are answered by.
- ``user.message`` ``{content, transformedContent, attachments, source}``: a user input (its
  ``content``: what the user typed; ``transformedContent`` adds what the CLI wraps around it);
  one with ``source: "system"`` (a ``<system_reminder>`` the CLI adds) is marked as the
  harness's, not the user's words; one with ``source: "agent-…"`` is a subagent's prompt.
- A subagent (``task`` call) writes into the same file: its events are read as its own session
  (:func:`split_subagents`), a child of this one.
- ``assistant.message`` ``{messageId, content, toolRequests: [{toolCallId, name, arguments}],
  reasoningText, outputTokens, model}``: one model response, a step; its tool requests are its
  calls (``arguments`` an object or a JSON string), ``reasoningText`` its thinking.
- ``tool.execution_complete`` ``{toolCallId, success, result: {content, detailedContent},
  model}``: a call's result (an error when ``success`` is false); ``detailedContent`` when
  there is one (the whole output), else ``content``.
- ``session.shutdown`` ``{modelMetrics: {<model>: {requests: {count, cost}, usage:
  {inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens}}}, totalPremiumRequests}``:
  the session's own totals, kept in ``recorded`` (``model_metrics``) to compare.
- ``system.message`` ``{role, content}``: the system prompt the CLI sends, kept as the hidden
  prefix (``Parsed.hidden``), not conversation.
- The other events (``assistant.turn_start`` / ``turn_end``, ``tool.execution_start``,
  ``session.info``, ``session.error``, ``hook.start`` / ``hook.end`` (the user's hooks running),
  ``session.mode_changed``, ``session.permissions_changed``, ``abort``…) are counted by kind.

**No input tokens.** Copilot CLI writes only each response's ``outputTokens``: what each request
sent is not recorded (only the shutdown's total by model). Each step's usage is its output;
its input is ctxscope's own count of the conversation up to that request (texts, call inputs,
results; not the agent's system prompt or tool definitions, which the file does not hold),
stored as the request's ``local_estimate`` and said so in a warning, never as the API's figure.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from engine.messages.harness import INPUT_KEY
from engine.messages.tokens import count_text
from engine.models import ToolCall, Usage, utcnow
from engine.recordings.base import (
    ImportError_,
    Item,
    JsonLines,
    Known,
    Parsed,
    parse_time,
    title_of,
)

FORMAT = "copilot-cli"
Record = tuple[int, dict[str, Any]]
EVENT_TYPES = {
    "session.start",
    "session.resume",
    "session.model_change",
    "session.info",
    "session.error",
    "session.shutdown",
    "session.truncation",
    "session.compaction_start",
    "session.compaction_complete",
    "user.message",
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.message",
    "assistant.reasoning",
    "assistant.usage",
    "tool.execution_start",
    "tool.execution_partial_result",
    "tool.execution_complete",
    "tool.user_requested",
    "subagent.started",
    "subagent.completed",
    "subagent.failed",
    "session.mode_changed",
    "session.permissions_changed",
    "hook.start",
    "hook.end",
    "system.message",
    "abort",
}
"""Event kinds of Copilot CLI's ``events.jsonl`` (read, or counted for what they are)."""
NO_INPUT = (
    "Copilot CLI records no input tokens per request (only each response's output): the "
    "input of each of the {n} requests is ctxscope's own estimate of the conversation sent, "
    "kept as its local estimate, not as a recorded figure"
)


def looks_like(obj: Any) -> bool:
    """A Copilot CLI event: ``{type, data}`` with a known kind (a ``session.start`` names its
    producer ``copilot-agent``)."""
    if not (isinstance(obj, dict) and isinstance(obj.get("data"), dict)):
        return False
    kind = obj.get("type")
    if kind == "session.start":
        return obj["data"].get("producer") in ("copilot-agent", None)
    return kind in ("user.message", "assistant.message", "assistant.turn_start")


def parse(raw: str, name: str, known: Known | None = None) -> Parsed:
    """A whole ``events.jsonl`` (the one tolerant line reader: damaged, repeated and cut lines
    left out and named); refused only without a user message. ``known``: what reading the
    file made of ``raw`` already (:meth:`JsonLines.read`)."""
    reader = JsonLines()
    return parse_records(reader.read(raw, known), reader, name)


def parse_records(records: list[tuple[int, dict[str, Any]]], given: JsonLines, name: str) -> Parsed:
    """The session from its lines read as JSON (a whole file, or what ``watch`` read so far:
    the reader's bookkeeping is copied, never changed), with the subagents its ``task`` calls
    started (:func:`split_subagents`) as its children."""
    reader = JsonLines()
    reader.lines, reader.warnings = given.lines, list(given.warnings)
    reader.skipped, reader.not_read = Counter(given.skipped), given.not_read.copy()
    main, groups, names = split_subagents(records)
    parsed = _thread(main, reader, name)
    for call_id, group in groups.items():
        agent = names.get(call_id, "subagent")
        try:
            child = _thread(group, JsonLines(), f"{name} ({agent})")
        except ImportError_ as exc:
            parsed.warnings.append(f"subagent {agent} ({call_id}): not imported: {exc}")
            parsed.skipped["subagent event"] += len(group)
            continue
        child.agent_id = call_id
        parsed.children.append(child)
    return parsed


def split_subagents(
    records: list[tuple[int, dict[str, Any]]],
) -> tuple[list[Record], dict[str, list[Record]], dict[str, str]]:
    """The session's own events, and each subagent's, by the ``task`` call that started it.

    A subagent writes into its parent's file, its events between the parent's (a background
    one goes on while the parent works): its ``assistant.message`` and ``tool.execution_*``
    events name the call in ``parentToolCallId``; its prompt, a ``user.message`` with
    ``source: "agent-<session id>"``, follows the ``subagent.started``
    ``{toolCallId, agentName}`` that announced it. Read as the parent's, its results answer
    calls the parent never made (polecatspeaks/StarCar's real file, tests/data/corpus). The
    user's own prompt carries a ``parentAgentTaskId`` too: only ``source`` tells them apart."""
    main: list[Record] = []
    groups: dict[str, list[Record]] = {}
    names: dict[str, str] = {}
    started = ""
    for number, obj in records:
        data = obj.get("data")
        owner = data.get("parentToolCallId") if isinstance(data, dict) else None
        if isinstance(data, dict) and obj.get("type") == "subagent.started":
            call = data.get("toolCallId")
            if isinstance(call, str) and call:
                started = call
                agent = data.get("agentName")
                names[call] = agent if isinstance(agent, str) and agent else "subagent"
        elif isinstance(data, dict) and obj.get("type") == "user.message" and started:
            source = data.get("source")
            if isinstance(source, str) and source.startswith("agent-"):
                owner = started
        if isinstance(owner, str) and owner:
            groups.setdefault(owner, []).append((number, obj))
        else:
            main.append((number, obj))
    return main, groups, names


def _thread(records: list[Record], reader: JsonLines, name: str) -> Parsed:
    """One conversation (the session's, or one subagent's) from its events."""
    items: list[Item] = []
    skipped: Counter[str] = Counter(reader.skipped)
    recorded: dict[str, Any] = {}
    model = ""
    models: list[str] = []
    calls: dict[str, ToolCall] = {}
    last_time = utcnow()
    context = 0  # ctxscope's count of the conversation so far (the input estimate)
    estimates: list[int] = []
    hidden: list[dict[str, Any]] = []
    for number, obj in records:
        kind = obj.get("type")
        data = obj.get("data")
        if not isinstance(kind, str) or not isinstance(data, dict):
            reader.not_read.line("not an event (no type or data)", number)
            continue
        created = parse_time(obj.get("timestamp"), number, []) or last_time
        last_time = created
        if kind not in EVENT_TYPES:
            reader.not_read.kind(kind, number)
        elif kind in ("session.start", "session.resume", "session.model_change"):
            skipped[kind] += 1
            named = data.get("newModel") or data.get("selectedModel")
            if isinstance(named, str) and named:
                model = named
            if kind == "session.start":
                _session_start(data, recorded)
        elif kind == "user.message":
            text = data.get("content")
            if not isinstance(text, str):
                reader.not_read.line("unexpected shape: user.message", number)
                continue
            item = Item("user", number, created, text=text)
            if data.get("source") == "system":  # the CLI's own reminder, not the user's words
                item.origin = {INPUT_KEY: "harness"}
            items.append(item)
            context += count_text(text)
        elif kind == "assistant.message":
            step = _step(data, number, created, model, calls)
            if step is None:
                reader.not_read.line("unexpected shape: assistant.message", number)
                continue
            if step.model and step.model not in models:
                models.append(step.model)
            step.input_estimate = context
            estimates.append(context)
            items.append(step)
            context += count_text(step.text) + sum(
                count_text(json.dumps(c.input)) for c in step.calls
            )
        elif kind == "tool.execution_complete":
            result = _result(data, number, created, calls)
            if result is None:
                reader.not_read.line("tool result answering no call", number)
                continue
            items.append(result)
            context += count_text(result.text)
            answered = data.get("model")
            step = next((i for i in reversed(items) if i.kind == "assistant"), None)
            if isinstance(answered, str) and answered and step is not None and not step.model:
                step.model = answered
                if answered not in models:
                    models.append(answered)
        elif kind == "system.message":
            # The system prompt the CLI sends: context, not conversation (kept as Codex's
            # developer messages are, with the first user message).
            skipped[kind] += 1
            text = data.get("content")
            if isinstance(text, str) and text:
                hidden.append({"line": number, "role": "system", "text": text})
        elif kind == "session.shutdown":
            skipped[kind] += 1
            metrics = data.get("modelMetrics")
            if isinstance(metrics, dict):
                recorded["model_metrics"] = metrics
            if isinstance(data.get("totalPremiumRequests"), (int, float)):
                recorded["premium_requests"] = data["totalPremiumRequests"]
        else:
            skipped[kind] += 1
    if not any(i.kind == "user" for i in items):
        raise ImportError_([f"{name} holds no user message"], FORMAT)
    steps = [i for i in items if i.kind == "assistant"]
    warnings = list(reader.warnings)
    if steps:
        warnings.append(NO_INPUT.format(n=len(steps)))
        recorded["input_estimates"] = estimates
    if models:
        recorded["models"] = models
    version = str(recorded.get("copilot_version", ""))
    return Parsed(
        fmt=FORMAT,
        items=items,
        title=title_of(items, name),
        records=reader.lines,
        skipped=skipped,
        warnings=warnings,
        cwd=str(recorded.get("cwd", "")),
        source_session=str(recorded.get("session_id", "")),
        model=models[0] if models else model,
        recorded=recorded,
        not_read=reader.not_read,
        agent_version=version,
        hidden=hidden,
    )


def _session_start(data: dict[str, Any], recorded: dict[str, Any]) -> None:
    for key, name in (("sessionId", "session_id"), ("copilotVersion", "copilot_version")):
        if isinstance(data.get(key), str):
            recorded[name] = data[key]
    context = data.get("context")
    if isinstance(context, dict):
        for key in ("cwd", "branch", "repository"):
            if isinstance(context.get(key), str):
                recorded[key] = context[key]


def _step(
    data: dict[str, Any], number: int, created: Any, model: str, calls: dict[str, ToolCall]
) -> Item | None:
    """An ``assistant.message`` as a step: its text, calls, thinking and output tokens."""
    text = data.get("content", "")
    requests = data.get("toolRequests") or []
    if not isinstance(text, str) or not isinstance(requests, list):
        return None
    step = Item("assistant", number, created, text=text)
    for request in requests:
        if not isinstance(request, dict) or not isinstance(request.get("toolCallId"), str):
            continue
        args = request.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = {"arguments": args}
        call = ToolCall(
            id=request["toolCallId"],
            name=str(request.get("name", "")),
            input=args if isinstance(args, dict) else {},
        )
        step.calls.append(call)
        calls[call.id] = call
    reasoning = data.get("reasoningText")
    if isinstance(reasoning, str) and reasoning.strip():
        step.thinking.append({"type": "thinking", "thinking": reasoning})
    output = data.get("outputTokens")
    if isinstance(output, int) and not isinstance(output, bool) and output > 0:
        step.usage = Usage(output_tokens=output)
    named = data.get("model")
    step.model = named if isinstance(named, str) and named else model
    return step


def _result(
    data: dict[str, Any], number: int, created: Any, calls: dict[str, ToolCall]
) -> Item | None:
    """A ``tool.execution_complete`` as the result of the call it names."""
    call_id = data.get("toolCallId")
    if not isinstance(call_id, str) or call_id not in calls:
        return None
    result = data.get("result")
    text = ""
    if isinstance(result, dict):
        body = result.get("detailedContent") or result.get("content")
        text = body if isinstance(body, str) else json.dumps(body) if body is not None else ""
    elif isinstance(data.get("error"), dict):
        text = str(data["error"].get("message", ""))
    return Item(
        "result",
        number,
        created,
        text=text,
        tool_use_id=call_id,
        is_error=data.get("success") is False,
    )
