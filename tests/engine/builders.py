"""Builders for engine tests."""

from __future__ import annotations

import json

from engine.context.history import HistoryManager
from engine.models import Message, MessageMeta, RoundStatus, ToolCall


def write_round(manager: HistoryManager, n: int, tools: int = 1) -> int:
    """A whole round: the user input, ``tools`` tool steps (each a pair), the final answer."""
    rnd, _ = manager.open_round(f"question {n}: please edit src/mod{n}.py")
    for step in range(1, tools + 1):
        call = ToolCall(id=f"toolu_{n}_{step}", name="Edit", input={"file_path": f"src/mod{n}.py"})
        manager.append(
            rnd.index,
            Message(
                role="assistant",
                content=f"Thought: step {step}",
                tool_calls=[call],
                meta=MessageMeta(step=step),
            ),
        )
        manager.append(
            rnd.index,
            Message(
                role="tool",
                content=json.dumps({"status": "success", "data": {"file": f"src/mod{n}.py"}}),
                meta=MessageMeta(step=step, tool_name="Edit", tool_use_id=call.id),
            ),
        )
    manager.append(
        rnd.index,
        Message(
            role="assistant", content=f"answer {n}", meta=MessageMeta(step=tools + 1, final=True)
        ),
    )
    manager.finish_round(rnd.index, RoundStatus.FINISHED)
    return rnd.index
