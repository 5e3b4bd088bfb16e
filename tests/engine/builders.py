"""Builders for engine tests."""

from __future__ import annotations

import json
from pathlib import Path

from engine.context.history import HistoryManager
from engine.models import Message, MessageMeta, RoundStatus, ToolCall
from engine.store import Store


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


def round_with_an_answer_in_the_middle(store: Store, workspace: Path) -> int:
    """One round whose second recorded call is a plain answer, with two calls after it (a
    recording where the agent went on after text without an action)."""
    session = store.create_session(str(workspace), "t")
    assert session.id is not None
    rnd, _ = store.open_round(session.id, Message(role="user", content="list the files"))
    for step, kind in enumerate(["call", "answer", "call", "final"], 1):
        if kind == "call":
            call = ToolCall(id=f"toolu_{step}", name="LS", input={})
            store.append_message(session.id, rnd.index, Message(
                role="assistant", content=f"step {step}", tool_calls=[call],
                meta=MessageMeta(step=step)))  # fmt: skip
            store.append_message(session.id, rnd.index, Message(
                role="tool", content='{"status":"success","data":{}}',
                meta=MessageMeta(step=step, tool_name="LS", tool_use_id=call.id)))  # fmt: skip
        else:
            store.append_message(session.id, rnd.index, Message(
                role="assistant", content=f"answer {step}",
                meta=MessageMeta(step=step, final=kind == "final")))  # fmt: skip
    store.finish_round(session.id, rnd.index, RoundStatus.FINISHED)
    return session.id
