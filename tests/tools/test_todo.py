"""TodoWrite and the recap the context builder shows."""

from __future__ import annotations

from typing import Any

from engine.models import TodoItem
from tools.base import ToolContext
from tools.todo import todo_recap


def test_recap_format() -> None:
    todos = [
        TodoItem(content="a", status="completed"),
        TodoItem(content="b", status="in_progress"),
        TodoItem(content="c"),
    ]
    assert todo_recap(todos) == "Todo: 1/3 done — [x] a; [>] b; [ ] c"
    assert todo_recap([]) == ""


def test_todowrite_sets_the_list_and_notifies(call: Any, ctx: ToolContext) -> None:
    seen: list[list[TodoItem]] = []
    ctx.on_todos = seen.append
    result = call(
        "TodoWrite",
        todos=[
            {"content": "Read the code", "status": "completed"},
            {"content": "Fix the bug", "status": "in_progress"},
            {"content": "Run the tests"},
        ],
    )
    assert result.ok
    assert [t.content for t in ctx.todos] == ["Read the code", "Fix the bug", "Run the tests"]
    assert seen == [ctx.todos]
    assert result.data["recap"] == (
        "Todo: 1/3 done — [x] Read the code; [>] Fix the bug; [ ] Run the tests"
    )
    assert result.data["counts"] == {"pending": 1, "in_progress": 1, "completed": 1}
    assert result.data["todos"][2] == {"content": "Run the tests", "status": "pending"}
    assert result.text.splitlines()[1:] == [
        "[x] Read the code",
        "[>] Fix the bug",
        "[ ] Run the tests",
    ]


def test_todowrite_replaces_and_clears(call: Any, ctx: ToolContext) -> None:
    call("TodoWrite", todos=[{"content": "one"}])
    result = call("TodoWrite", todos=[])
    assert result.ok and ctx.todos == []
    assert result.data["recap"] == "Todo: list cleared."


def test_todowrite_validates_status(call: Any, ctx: ToolContext) -> None:
    result = call("TodoWrite", todos=[{"content": "x", "status": "doing"}])
    assert result.error is not None and result.error.code == "invalid_input"
    assert "todos.0.status" in result.error.message
    empty = call("TodoWrite", todos=[{"content": ""}])
    assert empty.error is not None and "todos.0.content" in empty.error.message
    assert ctx.todos == []
