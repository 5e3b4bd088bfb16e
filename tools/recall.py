"""Recall: full-text search over the session's archived raw segments (the tenth tool), and
over the observations of the round in progress that the engine set aside to fit the window
(``engine.session.fitting``: their pointers name them, Recall finds their full text).

The search itself belongs to the store (SQLite FTS5, ``engine.store.search``); the agent hands
it to the tool as ``ctx.recall``, bound to its session, so tools never open the database.

``data``: ``{query, limit, total, hits: [{segment_id, round, message_id, role, tool_name,
snippet, score}]}``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from prompts.tools.recall import DESCRIPTION
from tools.base import ToolContext, ToolResult
from tools.common import BaseTool, ToolFailure, ToolInput, plural

MAX_LIMIT = 20


class RecallInput(ToolInput):
    query: str = Field(min_length=1, description="Words to search the archive for.")
    limit: int = Field(5, ge=1, le=MAX_LIMIT, description="Passages to return, best first.")


def hit_line(hit: dict[str, Any]) -> str:
    """``segment #3 · round 7 · message 52 (tool Read): …[retry]_delay = 0.5…``; an observation
    set aside in the round in progress says ``set aside`` in place of its segment."""
    who = hit["role"] + (f" {hit['tool_name']}" if hit.get("tool_name") else "")
    where = "set aside" if hit["segment_id"] is None else f"segment #{hit['segment_id']}"
    return f"{where} · round {hit['round']} · message {hit['message_id']} ({who}): {hit['snippet']}"


class RecallTool(BaseTool):
    name: ClassVar[str] = "Recall"
    description: ClassVar[str] = DESCRIPTION
    input_model = RecallInput

    def execute(self, args: RecallInput, ctx: ToolContext) -> ToolResult:
        if ctx.recall is None:
            raise ToolFailure(
                "unavailable", "Recall needs a stored session; this run has no archive to search."
            )
        hits = [h.model_dump() for h in ctx.recall(args.query, args.limit)]
        data = {"query": args.query, "limit": args.limit, "total": len(hits), "hits": hits}
        if not hits:
            text = f'No archived message matches "{args.query}".'
        else:
            head = f'{plural(len(hits), "archived passage")} for "{args.query}", best first:'
            text = "\n".join([head, *(hit_line(h) for h in hits)])
        return ToolResult(status="success", data=data, text=text)
