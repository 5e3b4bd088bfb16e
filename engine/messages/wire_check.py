"""What the Messages API refuses, checked before a request leaves the engine.

The live agent runs these on every request in debug mode (``validate_requests``, on in the test
suite); the fake Messages API server of the tests refuses the same things.
"""

from __future__ import annotations

from typing import Any

from engine.messages.request import MAX_CACHE_BREAKPOINTS, ProviderRequest
from engine.messages.tokens import has_text


def validate_conversation(
    messages: list[dict[str, Any]], *, require_user_last: bool = False
) -> list[str]:
    """Problems that would make the Messages API refuse ``messages`` (empty when valid).

    Checks: non-empty; starts with user; roles alternate; no empty content or blank text block;
    ``tool_use`` only from the assistant, ``tool_result`` only from the user and before any
    other block; every ``tool_use`` answered in the very next user message and every
    ``tool_result`` answering the message before; unique ids. A trailing assistant message is
    valid (the API continues it, a "prefill"); ``require_user_last`` flags it, for a request
    that must ask the model for a new turn.
    """
    if not messages:
        return ["the conversation is empty; the API needs at least one message"]
    problems: list[str] = []
    seen_uses: set[str] = set()
    prev_uses: list[str] = []
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"message {i}: role {role!r} is not user or assistant")
        if i == 0 and role != "user":
            problems.append("message 0: the conversation must start with a user message")
        if i > 0 and role == messages[i - 1].get("role"):
            problems.append(f"messages {i - 1} and {i}: two {role} messages in a row")
        content = msg.get("content")
        blocks = (
            [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        )
        if not blocks:
            problems.append(f"message {i}: empty content")
        uses: list[str] = []
        results: list[str] = []
        other_seen = False
        for j, block in enumerate(blocks):
            kind = block.get("type")
            if kind == "tool_result":
                if role != "user":
                    problems.append(f"message {i} block {j}: tool_result outside a user message")
                if other_seen:
                    problems.append(f"message {i} block {j}: tool_result after other content")
                results.append(str(block.get("tool_use_id")))
                continue
            other_seen = True
            if kind == "text" and not has_text(str(block.get("text", ""))):
                problems.append(f"message {i} block {j}: empty text block")
            elif kind == "tool_use":
                use_id = str(block.get("id"))
                if role != "assistant":
                    problems.append(f"message {i} block {j}: tool_use outside an assistant message")
                if use_id in seen_uses:
                    problems.append(f"message {i} block {j}: duplicate tool_use id {use_id}")
                seen_uses.add(use_id)
                uses.append(use_id)
        if role == "user":
            for rid in results:
                if rid not in prev_uses:
                    problems.append(f"message {i}: tool_result {rid} answers no tool_use before it")
            if len(set(results)) != len(results):
                problems.append(f"message {i}: a tool_use is answered twice")
            for uid in prev_uses:
                if uid not in results:
                    problems.append(f"message {i - 1}: tool_use {uid} has no tool_result after it")
        prev_uses = uses if role == "assistant" else []
    for uid in prev_uses:
        problems.append(f"message {len(messages) - 1}: tool_use {uid} has no tool_result after it")
    if require_user_last and messages[-1].get("role") != "user":
        problems.append("the conversation ends with an assistant message (a prefill)")
    return problems


def count_cache_breakpoints(request: ProviderRequest) -> int:
    """How many blocks of ``request`` carry ``cache_control`` (the API allows 4)."""
    blocks: list[dict[str, Any]] = [*request.system, *request.tools]
    for msg in request.messages:
        if isinstance(msg["content"], list):
            blocks.extend(msg["content"])
    return sum(1 for block in blocks if "cache_control" in block)


def validate_request(request: ProviderRequest) -> list[str]:
    """:func:`validate_conversation` plus the system blocks and the breakpoint limit."""
    problems = validate_conversation(request.messages)
    for i, block in enumerate(request.system):
        if block.get("type") == "text" and not has_text(str(block.get("text", ""))):
            problems.append(f"system block {i}: empty text block")
    n = count_cache_breakpoints(request)
    if n > MAX_CACHE_BREAKPOINTS:
        problems.append(f"{n} cache_control breakpoints; the API allows {MAX_CACHE_BREAKPOINTS}")
    return problems
