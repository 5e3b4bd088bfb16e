"""TodoWrite: replace the session's todo list; ``todo_recap`` is its one-line form.

The recap is what history keeps of a TodoWrite call (A3) and what the context builder shows
as layer 5, "Todo recap".

``data``: ``{todos: [{content, status}], recap, counts: {pending, in_progress, completed}}``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from prompts.tools.todo_write import DESCRIPTION
from tools.base import TodoItem, ToolContext, ToolResult
from tools.common import BaseTool, ToolInput

MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
"""How each status shows in the recap."""

EMPTY_RECAP = "Todo: list cleared."


class TodoWriteInput(ToolInput):
    todos: list[TodoItem] = Field(description="The complete new todo list.")


def todo_recap(todos: list[TodoItem]) -> str:
    """``Todo: 1/3 done — [x] a; [>] b; [ ] c``; empty string for an empty list."""
    if not todos:
        return ""
    done = sum(1 for item in todos if item.status == "completed")
    items = "; ".join(f"{MARKS[item.status]} {item.content}" for item in todos)
    return f"Todo: {done}/{len(todos)} done — {items}"


class TodoWriteTool(BaseTool):
    name: ClassVar[str] = "TodoWrite"
    description: ClassVar[str] = DESCRIPTION
    input_model = TodoWriteInput

    def execute(self, args: TodoWriteInput, ctx: ToolContext) -> ToolResult:
        todos = [item.model_copy() for item in args.todos]
        ctx.todos = todos
        if ctx.on_todos is not None:
            ctx.on_todos(list(todos))
        recap = todo_recap(todos) or EMPTY_RECAP
        counts = {status: sum(1 for t in todos if t.status == status) for status in MARKS}
        data: dict[str, Any] = {
            "todos": [item.model_dump() for item in todos],
            "recap": recap,
            "counts": {s: counts[s] for s in ("pending", "in_progress", "completed")},
        }
        lines = [recap, *(f"{MARKS[item.status]} {item.content}" for item in todos)]
        return ToolResult(status="success", data=data, text="\n".join(lines))
