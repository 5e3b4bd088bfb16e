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
- Tolerant: fields it does not know are ignored; an entry that is not an event
  (``not_an_event``), an observation that answers no call of the step before it
  (``observation_without_call``) and an event in a shape not expected
  (``unexpected_shape:<action or observation>``) are left out, counted and named in a warning;
  a bad timestamp takes the previous event's time. The file is refused only without a user
  message.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from engine.models import ToolCall, Usage, utcnow
from engine.recordings.base import (
    ImportError_,
    Item,
    Parsed,
    numbers_named,
    parse_time,
    title_of,
)

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


class _Reader:
    """The state of one pass over the events."""

    def __init__(self) -> None:
        self.items: list[Item] = []
        self.skipped: Counter[str] = Counter()
        self.left: dict[str, list[int]] = {}
        self.models: list[str] = []
        self.recorded: dict[str, Any] = {}
        self.calls_by_event: dict[Any, str] = {}  # action event id -> tool_call_id
        self.awaiting: set[str] = set()  # calls of the latest step not yet answered
        self.step: Item | None = None
        self.step_response: Any = None

    def leave_out(self, why: str, where: int) -> None:
        self.skipped[why] += 1
        self.left.setdefault(why, []).append(where)

    def add(self, item: Item) -> None:
        if item.kind in ("user", "assistant"):
            self.awaiting.clear()  # the writer pairs results with the latest step only
        self.items.append(item)

    def action(self, event: dict[str, Any], where: int, created: Any) -> None:
        action = str(event["action"])
        meta = event.get("tool_call_metadata")
        raw_args = event.get("args")
        args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
        source = event.get("source")
        if isinstance(meta, dict) and isinstance(meta.get("tool_call_id"), str):
            response = meta.get("model_response")
            response = response if isinstance(response, dict) else {}
            call_id = meta["tool_call_id"]
            name = str(meta.get("function_name") or action)
            call = ToolCall(
                id=call_id, name=name, input=_arguments(response, call_id) or dict(args)
            )
            rid = response.get("id")
            if self.step is None or rid is None or rid != self.step_response:
                model = response.get("model")
                if isinstance(model, str) and model not in self.models:
                    self.models.append(model)
                content = _message(response).get("content")
                step = Item(
                    "assistant",
                    where,
                    created,
                    text=str(content or args.get("thought") or ""),
                    usage=_usage(response),
                )
                self.step, self.step_response = step, rid
                self.add(step)
            assert self.step is not None
            self.step.calls.append(call)
            self.calls_by_event[event.get("id")] = call_id
            self.awaiting.add(call_id)
            return
        self.step = None
        if action == "message" and source == "user":
            self.add(Item("user", where, created, text=str(args.get("content", ""))))
        elif action in ("message", "finish") and source == "agent":
            text = args.get("content") or args.get("final_thought") or event.get("message")
            self.add(Item("assistant", where, created, text=str(text or "")))
        else:
            self.skipped[f"action:{action}"] += 1

    def observation(self, event: dict[str, Any], where: int, created: Any) -> None:
        observation = str(event["observation"])
        call_id = self.calls_by_event.pop(event.get("cause"), None)
        if call_id is None:
            self.skipped[f"observation:{observation}"] += 1
            return
        if call_id not in self.awaiting:
            self.leave_out("observation_without_call", where)
            return
        self.awaiting.discard(call_id)
        self.step = None
        code = _exit_code(event)
        extras = event.get("extras")
        cwd = (
            (extras.get("metadata") or {}).get("working_dir") if isinstance(extras, dict) else None
        )
        if isinstance(cwd, str):
            self.recorded.setdefault("cwd", cwd)
        self.add(
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


def parse(events: list[Any], name: str) -> Parsed:
    reader = _Reader()
    bad_times: list[int] = []
    last_time = utcnow()
    for n, event in enumerate(events):
        if not isinstance(event, dict):
            reader.leave_out("not_an_event", n)
            continue
        where: int = event["id"] if isinstance(event.get("id"), int) else n
        bad: list[str] = []
        created = last_time = parse_time(event.get("timestamp"), where, bad) or last_time
        if bad:
            bad_times.append(where)
        kind = "action" if "action" in event else "observation" if "observation" in event else ""
        if not kind:
            reader.skipped["other_event"] += 1
            continue
        try:
            if kind == "action":
                reader.action(event, where, created)
            else:
                reader.observation(event, where, created)
        except (TypeError, ValueError, AttributeError, KeyError):
            reader.leave_out(f"unexpected_shape:{event[kind]}", where)
    if not any(i.kind == "user" for i in reader.items):
        raise ImportError_([f"{name} holds no user message"], FORMAT)
    recorded = reader.recorded
    if reader.models:
        recorded["models"] = reader.models
    warnings = [
        f"{numbers_named('event', numbers)}: {why}; left out"
        for why, numbers in reader.left.items()
    ]
    if bad_times:
        warnings.append(
            f"{numbers_named('event', bad_times)}: bad timestamp; the previous event's time used"
        )
    return Parsed(
        fmt=FORMAT,
        items=reader.items,
        title=title_of(reader.items, name),
        records=len(events),
        skipped=reader.skipped,
        warnings=warnings,
        model=reader.models[0] if reader.models else "",
        recorded=recorded,
        cwd=str(recorded.get("cwd", "")),
    )
