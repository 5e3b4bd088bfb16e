"""Gemini CLI saved chats (``~/.gemini/tmp/<project hash>/chats/session-*.json``).

One JSON object ``{sessionId, projectHash, startTime, lastUpdated, messages[]}``
(google-gemini/gemini-cli, ``packages/core/src/services/chatRecordingService.ts``:
``ConversationRecord`` / ``MessageRecord`` / ``ToolCallRecord``). Decisions:

- A ``user`` message opens a round. Its ``content`` is a string, or (newer versions) parts
  whose texts are joined.
- A ``gemini`` message is one step: ``content`` its text, ``thoughts`` (``{subject,
  description}``) its thinking, ``toolCalls`` its calls under their recorded names
  (``write_file``, ``replace``, ``run_shell_command``...) with ``args`` as input. Each call's
  ``result`` (``functionResponse.response.output`` or ``.error``) follows as its result; a call
  whose ``status`` is not ``success`` is an error (``cancelled`` ones too), and a call with no
  recorded result gets one saying so.
- ``tokens`` ``{input, output, cached, thoughts, tool, total}`` is the step's usage: input
  ``input - cached + tool``, cache read ``cached``, output ``output + thoughts`` (thinking is
  billed as output). An all-zero count (the first answer of a chat) is no usage.
- ``info`` / ``error`` / ``warning`` messages (the CLI's own notices) are counted by type.
- ``sessionId`` and ``projectHash`` are kept as recorded facts; the file names no working
  directory, only its hash.
- Tolerant: fields it does not know are ignored; a message of a type it does not know is
  counted (``message:<type>``); an entry that is not a message (``not_a_message``), a call
  without a string id and name (``call_without_id``, with its result) and a message in a shape
  not expected (``unexpected_shape:<type>``) are left out, counted and named in a warning; a
  bad timestamp takes the previous message's time. The file is refused only without a user
  message.

Gemini's API form, ``{"role": "user" | "model", "parts": [...]}`` per line (or a JSON list of
them: a ``/chat save`` checkpoint), is not a session recording: no timestamps, no usage, and
calls without ids. It is recognised and refused by name (:data:`CONTENTS`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from engine.models import MISSING_RESULT, ToolCall, Usage, utcnow
from engine.recordings.base import (
    ImportError_,
    Item,
    Parsed,
    numbers_named,
    parse_time,
    title_of,
)

FORMAT = "gemini-cli"
CONTENTS = "gemini-contents"
"""Gemini API ``{role, parts}`` messages: recognised, refused."""


def looks_like(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("messages"), list)
        and "sessionId" in obj
        and ("projectHash" in obj or "startTime" in obj)
    )


def looks_like_contents(obj: Any) -> bool:
    """One Gemini API message (``{"role": "user" | "model", "parts": [...]}``)."""
    return isinstance(obj, dict) and obj.get("role") in ("user", "model") and "parts" in obj


def refuse_contents() -> ImportError_:
    return ImportError_(
        [
            "Gemini API messages ({role, parts}: a /chat save checkpoint or a request log) "
            "hold no timestamps, usage or call ids; import the Gemini CLI chat recording "
            "instead (~/.gemini/tmp/<project hash>/chats/session-*.json)"
        ],
        CONTENTS,
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        return "\n".join(
            str(p["text"]) if isinstance(p, dict) and "text" in p else str(p)
            for p in content
            if isinstance(p, (dict, str))
        )
    return ""


def _usage(tokens: Any) -> Usage | None:
    if not isinstance(tokens, dict):
        return None

    def n(key: str) -> int:
        value = tokens.get(key)
        return value if isinstance(value, int) else 0

    usage = Usage(
        input_tokens=max(n("input") - n("cached"), 0) + n("tool"),
        cache_read_input_tokens=n("cached"),
        output_tokens=n("output") + n("thoughts"),
    )
    return usage if usage.input_side or usage.output_tokens else None


def _result(call: dict[str, Any]) -> str:
    """What the model was sent back for ``call``: its ``functionResponse.response``."""
    result = call.get("result")
    parts = result if isinstance(result, list) else [result]
    texts = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        response = (part.get("functionResponse") or {}).get("response")
        if isinstance(response, dict):
            for key in ("output", "error"):
                if key in response:
                    texts.append(_text(response[key]))
                    break
            else:
                texts.append(json.dumps(response, ensure_ascii=False))
        elif "text" in part:
            texts.append(str(part["text"]))
    return "\n".join(texts)


def parse(obj: dict[str, Any], name: str) -> Parsed:
    items: list[Item] = []
    skipped: Counter[str] = Counter()
    left: dict[str, list[int]] = {}
    bad_times: list[int] = []
    models: list[str] = []
    messages = obj["messages"]
    last_time = utcnow()

    def time_of(value: Any, where: int, default: Any) -> Any:
        bad: list[str] = []
        stamp = parse_time(value, where, bad)
        if bad:
            bad_times.append(where)
        return stamp or default

    def leave_out(why: str, where: int) -> None:
        skipped[why] += 1
        left.setdefault(why, []).append(where)

    for n, msg in enumerate(messages):
        where = n + 1  # "line" of the report: the message's ordinal
        if not isinstance(msg, dict):
            leave_out("not_a_message", where)
            continue
        created = last_time = time_of(msg.get("timestamp"), where, last_time)
        kind = msg.get("type")
        if kind == "user":
            items.append(Item("user", where, created, text=_text(msg.get("content"))))
            continue
        if kind != "gemini":
            skipped[f"message:{kind}"] += 1
            continue
        try:
            items.extend(_step(msg, where, created, models, leave_out, time_of))
        except (TypeError, ValueError, AttributeError, KeyError):
            leave_out(f"unexpected_shape:{kind}", where)
    if not any(i.kind == "user" for i in items):
        raise ImportError_([f"{name} holds no user message"], FORMAT)
    recorded: dict[str, Any] = {
        k: obj[k] for k in ("sessionId", "projectHash", "startTime", "lastUpdated") if k in obj
    }
    if models:
        recorded["models"] = models
    warnings = [
        f"{numbers_named('message', numbers)}: {why}; left out" for why, numbers in left.items()
    ]
    if bad_times:
        warnings.append(
            f"{numbers_named('message', bad_times)}: bad timestamp;"
            " the previous message's time used"
        )
    return Parsed(
        fmt=FORMAT,
        items=items,
        title=title_of(items, name),
        records=len(messages),
        skipped=skipped,
        warnings=warnings,
        model=models[0] if models else "",
        recorded=recorded,
        source_session=str(obj.get("sessionId", "")),
    )


def _step(
    msg: dict[str, Any],
    where: int,
    created: Any,
    models: list[str],
    leave_out: Callable[[str, int], None],
    time_of: Callable[[Any, int, Any], Any],
) -> list[Item]:
    """A ``gemini`` message's step and its calls' results."""
    model = msg.get("model")
    if isinstance(model, str) and model not in models:
        models.append(model)
    thoughts = msg.get("thoughts") or []
    thinking = [
        {
            "type": "thinking",
            "thinking": f"{t.get('subject', '')}\n{t.get('description', '')}".strip(),
        }
        for t in thoughts
        if isinstance(t, dict)
    ]
    raw_calls = []
    calls = []
    for c in msg.get("toolCalls") or []:
        if not isinstance(c, dict):
            continue
        if not isinstance(c.get("id"), str) or not isinstance(c.get("name"), str):
            leave_out("call_without_id", where)
            continue
        args = c.get("args")
        raw_calls.append(c)
        calls.append(
            ToolCall(id=c["id"], name=c["name"], input=args if isinstance(args, dict) else {})
        )
    out = [
        Item(
            "assistant",
            where,
            created,
            text=_text(msg.get("content")),
            calls=calls,
            thinking=thinking,
            usage=_usage(msg.get("tokens")),
            model=model if isinstance(model, str) else "",
        )
    ]
    for c in raw_calls:
        status = str(c.get("status", ""))
        text = _result(c)
        if c.get("result") is None:
            text = f"{MISSING_RESULT} (status {status or 'unknown'})"
        out.append(
            Item(
                "result",
                where,
                time_of(c.get("timestamp"), where, created),
                text=text,
                tool_use_id=c["id"],
                is_error=status != "success",
                recorded={k: c[k] for k in ("status", "displayName", "resultDisplay") if k in c},
            )
        )
    return out
