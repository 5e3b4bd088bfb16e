"""Claude Code's requests, built from their documented shape: system blocks (the billing
header, the identity line, the instructions, with 1-hour cache markers), tool definitions,
``metadata.user_id`` naming the session, and a cache marker on the last message's last block.
"""

from __future__ import annotations

import copy
import json
from typing import Any

SESSION = "4f1c2a9e-7d3b-4c55-9a1e-0b8f6d2e3c71"
ACCOUNT = "0d9e8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b"
LEGACY_USER_ID = f"user_{'ab12' * 16}_account_{ACCOUNT}_session_{SESSION}"
"""``metadata.user_id`` before Claude Code 2.1.78."""
JSON_USER_ID = json.dumps(
    {"device_id": "cd34" * 16, "account_uuid": ACCOUNT, "session_id": SESSION}
)
"""``metadata.user_id`` since Claude Code 2.1.78: a JSON string."""

ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}

SYSTEM = [
    {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.90; cc_entrypoint=cli"},
    {
        "type": "text",
        "text": "You are Claude Code, Anthropic's official CLI for Claude.",
        "cache_control": ONE_HOUR,
    },
    {
        "type": "text",
        "text": "You are an interactive CLI tool that helps users with software engineering "
        "tasks. Use the instructions below and the tools available to you.",
        "cache_control": ONE_HOUR,
    },
]


def tool(name: str, description: str, **properties: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": {k: {"type": v} for k, v in properties.items()},
            "required": list(properties),
        },
    }


TOOLS = [
    tool("Bash", "Executes a bash command.", command="string"),
    tool("Read", "Reads a file from the local filesystem.", file_path="string"),
    tool("Edit", "Performs exact string replacements in files.", file_path="string"),
]


def request(
    messages: list[dict[str, Any]],
    user_id: str = LEGACY_USER_ID,
    tools: list[dict[str, Any]] | None = None,
    system: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A streamed Claude Code request over ``messages`` (copied), the last block marked."""
    sent = copy.deepcopy(messages)
    last = sent[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 32000,
        "system": copy.deepcopy(SYSTEM if system is None else system),
        "tools": copy.deepcopy(TOOLS if tools is None else tools),
        "messages": sent,
        "metadata": {"user_id": user_id},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "stream": True,
    }


def user(*texts: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


REMINDER = (
    "<system-reminder>\nAs you answer, use this context: CLAUDE.md says run make test.\n"
    "</system-reminder>"
)
