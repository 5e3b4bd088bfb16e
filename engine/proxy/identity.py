"""Which conversation a request belongs to, and what it was to it.

Claude Code names its session in ``metadata.user_id``: before 2.1.78 as
``user_<hash>_account_<uuid>_session_<uuid>``, since as a JSON string
``{"device_id": …, "account_uuid": …, "session_id": …}``. Within one session id, the requests
whose first message is the same are one thread (a conversation); the first thread with tools is
the conversation itself, another thread with tools a subagent's, a request without tools a side
call (a title, a quota check). A compaction is recognised by its prompt: the last user message
asks to "create a detailed summary of the conversation" (Claude Code's compact prompt opens
"Your task is to create a detailed summary of the conversation so far"), and the conversation
then continues in a new first message that opens "This session is being continued from a
previous conversation"."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from engine.store.exchanges import canonical, digest

CLAUDE_CODE = "claude-code"
"""The agents' registry name of Claude Code (``engine.recordings.agents``)."""
_CLAUDE_CLI = re.compile(r"^claude-cli/([0-9][0-9A-Za-z.+-]*)")
CLAUDE_CODE_BETA = "claude-code-20250219"
"""The beta Claude Code names in ``anthropic-beta`` on its Messages calls."""
CLAUDE_CODE_SYSTEM = "You are Claude Code, Anthropic's official CLI for Claude"
"""How Claude Code's system prompt opens (its own or the Agent SDK's: "…, running within the
Claude Agent SDK")."""

_LEGACY_SESSION = re.compile(r"_session_([0-9A-Za-z-]+)$")
_COMPACTION = re.compile(r"create a detailed summary of the\b[^.]{0,40}\bconversation", re.I)
CONTINUATION = "This session is being continued from a previous conversation"
"""How Claude Code's first message after a compaction opens."""


def client_session(body: dict[str, Any]) -> str | None:
    """The client's own session id from ``metadata.user_id``, either shape; None without."""
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if not isinstance(user_id, str) or not user_id:
        return None
    if user_id.startswith("{"):
        try:
            parsed = json.loads(user_id)
        except json.JSONDecodeError:
            return None
        session = parsed.get("session_id") if isinstance(parsed, dict) else None
        return session if isinstance(session, str) and session else None
    match = _LEGACY_SESSION.search(user_id)
    return match.group(1) if match else None


def agent_of_request(headers: Mapping[str, str], body: dict[str, Any]) -> tuple[str, str]:
    """The agent that sent a Messages request, and its version where it says it: Claude Code
    by its ``User-Agent`` (``claude-cli/2.1.92 (external, cli)``; ``sdk-cli``,
    ``claude-vscode`` and the Agent SDK's too), else by the ``claude-code-20250219`` beta
    in ``anthropic-beta``, else by its system prompt's opening; ``("", "")`` for another
    client. ``headers`` are lower-cased names."""
    found = _CLAUDE_CLI.match(headers.get("user-agent", ""))
    if found:
        return CLAUDE_CODE, found.group(1)
    betas = {b.strip() for b in headers.get("anthropic-beta", "").split(",")}
    if CLAUDE_CODE_BETA in betas:
        return CLAUDE_CODE, ""
    system = body.get("system")
    blocks = [{"content": system}] if isinstance(system, str) else system
    if isinstance(blocks, list):
        for block in blocks[:3]:  # after a billing line, Claude Code's opening comes first
            text = block.get("text", block.get("content")) if isinstance(block, dict) else None
            if isinstance(text, str) and text.lstrip().startswith(CLAUDE_CODE_SYSTEM):
                return CLAUDE_CODE, ""
    return "", ""


def texts(message: Any) -> list[str]:
    """The text of a message's content: the string, or its text blocks."""
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        ]
    return []


def is_compaction(body: dict[str, Any]) -> bool:
    """The request asks for a summary of the conversation (a compaction's call)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return False
    last = messages[-1]
    return (
        isinstance(last, dict)
        and last.get("role") == "user"
        and any(_COMPACTION.search(t) for t in texts(last))
    )


def continues_after_compaction(body: dict[str, Any]) -> bool:
    """The request's first message is a compaction's summary carried into a new thread."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return False
    return any(t.lstrip().startswith(CONTINUATION) for t in texts(messages[0]))


def without_cache_control(value: Any) -> Any:
    """``value`` with every ``cache_control`` marker removed (a marker moves from request to
    request; the content it marks does not)."""
    if isinstance(value, dict):
        return {k: without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_control(v) for v in value]
    return value


def thread_of(body: dict[str, Any]) -> str:
    """The digest of the request's first message (cache markers aside): its thread."""
    messages = body.get("messages")
    first = messages[0] if isinstance(messages, list) and messages else None
    return digest(canonical(without_cache_control(first)))


def system_of(body: dict[str, Any]) -> str:
    """The digest of the request's system prompt (cache markers aside)."""
    return digest(canonical(without_cache_control(body.get("system"))))


def title_of(body: dict[str, Any]) -> str:
    """A session title: the first line of the first user text that is not a reminder."""
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        for text in texts(message):
            line = text.strip().splitlines()[0] if text.strip() else ""
            if line and not line.startswith("<"):
                return line[:80]
    return ""


def api_of(path: str) -> str:
    """``messages``, ``responses``, ``responses-compact`` or ``""`` (not recorded)."""
    bare = path.split("?", 1)[0].rstrip("/")
    if bare.endswith("/v1/messages"):
        return "messages"
    if bare.endswith("/responses"):
        return "responses"
    if bare.endswith("/responses/compact"):
        return "responses-compact"
    return ""
