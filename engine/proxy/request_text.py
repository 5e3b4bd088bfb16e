"""One proxied request as sent, and the text that changed since the request before
(``ctxscope show ID --request N`` / ``--diff N``, Enter on the workbench's Requests screen).

The body is the stored one: the JSON values the agent sent, every ``cache_control`` marker in
its place (no key, token or cookie: those are never stored). The diff compares the request
with the one before it in its conversation, as ``show``'s ``requests[]`` does (a compaction's
call with the conversation): the changed lines of each system block and tool definition,
each message removed or edited with its changed lines, the messages appended, and where the
cache markers moved.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from engine.exchanges import Exchange
from engine.proxy.identity import without_cache_control
from engine.proxy.report import view

CONTEXT_LINES = 2
"""Unchanged lines shown around each change (as ``diff -U2``)."""


class NoSuchRequest(LookupError):
    """The session holds no request with that number."""


def find(exchanges: list[Exchange], number: int) -> tuple[Exchange | None, Exchange]:
    """Request ``number`` (its id, as ``show`` prints it: ``#12``) and the one it is
    compared with (None for the first)."""
    previous: Exchange | None = None
    for exchange in exchanges:
        if exchange.id == number:
            return previous, exchange
        if exchange.kind == "main" or previous is None:
            previous = exchange
    ids = ", ".join(f"#{e.id}" for e in exchanges[:5]) + (" …" if len(exchanges) > 5 else "")
    raise NoSuchRequest(f"no request #{number} in this session (its requests: {ids or 'none'})")


def request_json(exchange: Exchange) -> dict[str, Any]:
    """``show --request N --json``: the request as sent and the two headers kept with it."""
    return {
        "id": exchange.id,
        "kind": exchange.kind,
        "path": exchange.path,
        "created_at": exchange.created_at.isoformat(),
        "headers": dict(exchange.headers),
        "body": exchange.request,
    }


def request_text(exchange: Exchange) -> str:
    """The request as text: a heading, then its body as indented JSON."""
    headers = " ".join(f"{k}: {v}" for k, v in sorted(exchange.headers.items()))
    return (
        f"request #{exchange.id} ({exchange.kind}) {exchange.method} {exchange.path}"
        f" at {exchange.created_at:%Y-%m-%d %H:%M:%S}" + (f"; {headers}" if headers else "")
        + "\n"
        + json.dumps(exchange.request, ensure_ascii=False, indent=2)
    )  # fmt: skip


def _lines(value: Any) -> list[str]:
    """A piece as lines to compare: a text as its lines, anything else as indented JSON."""
    if isinstance(value, str):
        return value.splitlines()
    return json.dumps(value, ensure_ascii=False, indent=2).splitlines()


def _block_text(block: Any) -> Any:
    """What a content block says, cache marker aside: its text, else the block."""
    plain = without_cache_control(block)
    if isinstance(plain, dict) and plain.get("type") == "text" and len(plain) == 2:
        return plain.get("text", "")
    return plain


def _message_lines(message: Any) -> list[str]:
    if not isinstance(message, dict):
        return _lines(message)
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    out = [f"[{message.get('role', message.get('type', '?'))}]"]
    for block in blocks:
        out += _lines(_block_text(block))
    return out


def _changed(before: list[str], after: list[str], name: str) -> list[str]:
    return list(
        difflib.unified_diff(
            before, after, f"{name} (before)", f"{name} (now)", n=CONTEXT_LINES, lineterm=""
        )
    )


def _pieces(body: dict[str, Any], key: str) -> list[Any]:
    value = body.get(key)
    if isinstance(value, list):
        return value
    if isinstance(value, str) and value:
        return [value]
    return []


def _markers(body: dict[str, Any]) -> list[str]:
    """Where the request's ``cache_control`` markers are: ``system[2]``, ``messages[5][0]``."""
    out: list[str] = []
    for key in ("tools", "system"):
        out += [
            f"{key}[{i}]"
            for i, piece in enumerate(_pieces(body, key))
            if isinstance(piece, dict) and "cache_control" in piece
        ]
    for i, message in enumerate(_pieces(body, "messages")):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            out += [
                f"messages[{i}][{j}]"
                for j, block in enumerate(content)
                if isinstance(block, dict) and "cache_control" in block
            ]
    return out


def request_diff(previous: Exchange | None, exchange: Exchange) -> dict[str, Any]:
    """``show --diff N --json``: what changed since the request before, as text."""
    body = view(exchange.request)
    before = view(previous.request) if previous is not None else {}
    out: dict[str, Any] = {
        "id": exchange.id,
        "compared_with": None if previous is None else previous.id,
        "system": [],
        "tools": [],
        "messages": [],
        "appended": [],
        "cache_markers": {"before": _markers(before), "now": _markers(body)},
    }
    for key in ("system", "tools"):
        old, new = _pieces(before, key), _pieces(body, key)
        for i in range(max(len(old), len(new))):
            a = without_cache_control(old[i]) if i < len(old) else None
            b = without_cache_control(new[i]) if i < len(new) else None
            if previous is None or a == b:
                continue
            name = f"{key}[{i}]"
            state = "added" if a is None else "removed" if b is None else "changed"
            lines = _changed([] if a is None else _lines(_block_text(a)),
                             [] if b is None else _lines(_block_text(b)), name)  # fmt: skip
            out[key].append({"at": name, "change": state, "lines": lines})
    old_messages, messages = _pieces(before, "messages"), _pieces(body, "messages")
    kept = 0
    for mine, theirs in zip(messages, old_messages, strict=False):
        if without_cache_control(mine) != without_cache_control(theirs):
            break
        kept += 1
    for i in range(kept, len(old_messages)):
        name = f"messages[{i}]"
        if i < len(messages):
            lines = _changed(_message_lines(old_messages[i]), _message_lines(messages[i]), name)
            out["messages"].append({"at": name, "change": "edited", "lines": lines})
        else:
            lines = _changed(_message_lines(old_messages[i]), [], name)
            out["messages"].append({"at": name, "change": "removed", "lines": lines})
    first_new = max(kept, len(old_messages))
    out["appended"] = [
        {"at": f"messages[{i}]", "lines": _message_lines(messages[i])}
        for i in range(first_new, len(messages))
    ]
    out["steering"] = _steering(exchange)
    return out


def _steering(exchange: Exchange) -> dict[str, Any] | None:
    """What ``--steer`` changed before sending this request: each rewrite as a diff of the
    agent's content against what was sent, with the tokens it removed."""
    steering = exchange.steering
    if not steering:
        return None
    messages = _pieces(exchange.request, "messages")
    rewrites = []
    for r in steering.get("rewrites", []):
        at = str(r.get("at", ""))
        before: Any = None
        try:
            i = int(at.split("[")[1].split("]")[0])
            if ".content[" in at:
                j = int(at.split(".content[")[1].rstrip("]"))
                before = messages[i]["content"][j].get("content")
        except (IndexError, ValueError, KeyError, AttributeError, TypeError):
            before = None
        lines = _changed(
            [] if before is None else _lines(_block_text(before)),
            _lines(_block_text(r.get("content"))),
            at,
        )
        rewrites.append({**{k: v for k, v in r.items() if k != "content"}, "lines": lines})
    return {
        "floor": steering.get("floor"),
        "held": steering.get("held"),
        "failed": steering.get("failed") or None,
        "rewrites": rewrites,
        "tokens_removed": sum(
            r["tokens_before"] - r["tokens_after"] for r in steering.get("rewrites", [])
        ),
    }


def diff_text(diff: dict[str, Any]) -> str:
    """``show --diff N``: the changes as unified diffs, then the appended messages."""
    head = (
        f"request #{diff['id']}: the first request of its conversation"
        if diff["compared_with"] is None
        else f"request #{diff['id']} against #{diff['compared_with']}"
    )
    lines = [head]
    changes = [*diff["system"], *diff["tools"], *diff["messages"]]
    if diff["compared_with"] is not None and not changes:
        lines.append("nothing sent before changed (cache markers aside)")
    for change in changes:
        lines.append(f"{change['at']} {change['change']}:")
        lines += [f"  {line}" for line in change["lines"]]
    for message in diff["appended"]:
        lines.append(f"{message['at']} appended:")
        lines += [f"  + {line}" for line in message["lines"]]
    steering = diff.get("steering")
    if steering:
        if steering["failed"]:
            lines.append(
                f"steering: a rule failed, the request went as it came: {steering['failed']}"
            )
        else:
            lines.append(
                f"steering: {len(steering['rewrites'])} rewrite(s) before sending, "
                f"{steering['tokens_removed']:,} tokens removed; the cache held "
                f"{steering['held']} messages, {steering['floor']} went as before"
            )
        for r in steering["rewrites"]:
            made = "made here" if r["first"] else "carried from an earlier request"
            lines.append(
                f"{r['at']} {r['rule']} ({made}): {r['tokens_before']:,} → "
                f"{r['tokens_after']:,} tokens"
            )
            lines += [f"  {line}" for line in r["lines"]]
    markers = diff["cache_markers"]
    if diff["compared_with"] is not None and markers["before"] != markers["now"]:
        lines.append(
            f"cache markers: {', '.join(markers['before']) or 'none'} → "
            f"{', '.join(markers['now']) or 'none'}"
        )
    else:
        lines.append(f"cache markers: {', '.join(markers['now']) or 'none'}")
    return "\n".join(lines)
