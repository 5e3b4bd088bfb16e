"""OpenHands event lists (a JSON list of serialised events, as ``event_to_dict`` writes them).

Each event is ``{id, timestamp, source, message, cause?, tool_call_metadata?}`` plus
``action`` + ``args`` or ``observation`` + ``content`` + ``extras`` (All-Hands-AI/OpenHands,
``openhands/events/serialization/event.py``). Decisions:

- A ``message`` action from the ``user`` opens a round; from the ``agent`` it is an answer
  (a step without calls). ``finish`` is the agent's last answer (its ``final_thought`` or
  message).
- An action with ``tool_call_metadata`` is a tool call: ``function_name`` its name
  (``execute_bash``, ``str_replace_editor``...), ``tool_call_id`` (``toolu_…``) its id, the
  arguments the model sent (found in ``model_response``'s ``tool_calls``; the action's
  ``args`` when missing) its input. Actions of one ``model_response.id`` are one step, whose
  text is the response's message content and whose usage is the response's: LiteLLM's
  ``prompt_tokens`` include the cache, so the input is ``prompt - cache read - cache
  creation``.
- The observation whose ``cause`` is the action's id is its result: ``content`` (with the
  command's ``metadata.suffix`` OpenHands appends for the model), an error when the
  observation is ``error`` or a command's exit code is above 0 (``-1`` is a command still
  running when OpenHands stopped waiting, not a failure).
- ``agent_state_changed`` / ``change_agent_state`` events, ``null`` observations ("No
  observation") and other events without a call are counted by kind.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from engine.models import ToolCall, Usage, utcnow
from engine.recordings.base import ImportError_, Item, Parsed, parse_time, title_of

FORMAT = "openhands"


def looks_like(obj: Any) -> bool:
    if not isinstance(obj, list) or not obj:
        return False
    head = obj[0]
    return (
        isinstance(head, dict)
        and "source" in head
        and "id" in head
        and ("action" in head or "observation" in head)
    )


def _usage(response: dict[str, Any]) -> Usage | None:
    usage = response.get("usage")
    if not isinstance(usage, dict):
        return None
    read = int(usage.get("cache_read_input_tokens") or 0)
    if not read:
        details = usage.get("prompt_tokens_details")
        read = int((details or {}).get("cached_tokens") or 0) if isinstance(details, dict) else 0
    made = int(usage.get("cache_creation_input_tokens") or 0)
    out = Usage(
        input_tokens=max(int(usage.get("prompt_tokens") or 0) - read - made, 0),
        cache_read_input_tokens=read,
        cache_creation_input_tokens=made,
        output_tokens=int(usage.get("completion_tokens") or 0),
    )
    return out if out.input_side or out.output_tokens else None


def _message(response: dict[str, Any]) -> dict[str, Any]:
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        msg = choices[0].get("message")
        if isinstance(msg, dict):
            return msg
    return {}


def _arguments(response: dict[str, Any], call_id: str) -> dict[str, Any] | None:
    for call in _message(response).get("tool_calls") or []:
        if isinstance(call, dict) and call.get("id") == call_id:
            raw = (call.get("function") or {}).get("arguments")
            try:
                args = json.loads(raw) if isinstance(raw, str) else raw
            except json.JSONDecodeError:
                return {"arguments": raw}
            return args if isinstance(args, dict) else None
    return None


def _result_text(event: dict[str, Any]) -> str:
    text = str(event.get("content") or "")
    extras = event.get("extras")
    meta = extras.get("metadata") if isinstance(extras, dict) else None
    if isinstance(meta, dict):
        text = str(meta.get("prefix") or "") + text + str(meta.get("suffix") or "")
    return text


def _exit_code(event: dict[str, Any]) -> int | None:
    extras = event.get("extras")
    meta = extras.get("metadata") if isinstance(extras, dict) else None
    code = meta.get("exit_code") if isinstance(meta, dict) else None
    if code is None and isinstance(extras, dict):
        code = extras.get("exit_code")
    return code if isinstance(code, int) else None


def parse(events: list[Any], name: str) -> Parsed:
    problems: list[str] = []
    items: list[Item] = []
    skipped: Counter[str] = Counter()
    models: list[str] = []
    recorded: dict[str, Any] = {}
    calls_by_event: dict[Any, str] = {}  # action event id -> tool_call_id
    step: Item | None = None
    step_response: Any = None
    for n, event in enumerate(events):
        if not isinstance(event, dict):
            problems.append(f"event {n}: expected an object")
            continue
        where: int = event["id"] if isinstance(event.get("id"), int) else n
        created = parse_time(event.get("timestamp"), where, problems) or utcnow()
        meta = event.get("tool_call_metadata")
        if "action" in event:
            action = str(event["action"])
            raw_args = event.get("args")
            args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
            source = event.get("source")
            if isinstance(meta, dict) and isinstance(meta.get("tool_call_id"), str):
                response = meta.get("model_response")
                response = response if isinstance(response, dict) else {}
                call_id = meta["tool_call_id"]
                name_ = str(meta.get("function_name") or action)
                call = ToolCall(
                    id=call_id, name=name_, input=_arguments(response, call_id) or dict(args)
                )
                calls_by_event[event.get("id")] = call_id
                rid = response.get("id")
                if step is None or rid is None or rid != step_response:
                    model = response.get("model")
                    if isinstance(model, str) and model not in models:
                        models.append(model)
                    content = _message(response).get("content")
                    step = Item(
                        "assistant",
                        where,
                        created,
                        text=str(content or args.get("thought") or ""),
                        usage=_usage(response),
                    )
                    step_response = rid
                    items.append(step)
                step.calls.append(call)
                continue
            step = None
            if action == "message" and source == "user":
                items.append(Item("user", where, created, text=str(args.get("content", ""))))
            elif action in ("message", "finish") and source == "agent":
                text = args.get("content") or args.get("final_thought") or event.get("message")
                items.append(Item("assistant", where, created, text=str(text or "")))
            else:
                skipped[f"action:{action}"] += 1
            continue
        if "observation" in event:
            observation = str(event["observation"])
            call_id = calls_by_event.pop(event.get("cause"), None)
            if call_id is None:
                skipped[f"observation:{observation}"] += 1
                continue
            step = None
            code = _exit_code(event)
            extras = event.get("extras")
            cwd = (
                (extras.get("metadata") or {}).get("working_dir")
                if isinstance(extras, dict)
                else None
            )
            if isinstance(cwd, str):
                recorded.setdefault("cwd", cwd)
            items.append(
                Item(
                    "result",
                    where,
                    created,
                    text=_result_text(event),
                    tool_use_id=call_id,
                    is_error=observation == "error" or (code is not None and code > 0),
                    recorded={"observation": observation, "exit_code": code},
                )
            )
            continue
        skipped["other_event"] += 1
    if not any(i.kind == "user" for i in items) and not problems:
        problems.append(f"{name} holds no user message")
    if problems:
        raise ImportError_(problems, FORMAT)
    if models:
        recorded["models"] = models
    return Parsed(
        fmt=FORMAT,
        items=items,
        title=title_of(items, name),
        records=len(events),
        skipped=skipped,
        model=models[0] if models else "",
        recorded=recorded,
        cwd=str(recorded.get("cwd", "")),
    )
