"""The result envelope, the per-call context and the tool interface shared by every tool."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from engine.config import Settings
from engine.models import RecallHit, TodoItem


class ToolError(BaseModel):
    """Why a tool call failed: a stable machine code and a sentence for the model."""

    code: str
    message: str


class ToolResult(BaseModel):
    """One envelope for every tool result (seed C1 names these fields).

    ``text`` is what the model sees in the scratchpad; history keeps ``status``, ``error`` and a
    compressed ``data`` and drops ``text``, ``stats`` and ``context``.
    """

    status: Literal["success", "error"]
    data: dict[str, Any] = Field(default_factory=dict)
    error: ToolError | None = None
    text: str = ""
    stats: dict[str, Any] = Field(default_factory=dict)
    context: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def fail(
        cls, code: str, message: str, *, context: dict[str, Any] | None = None, **data: Any
    ) -> ToolResult:
        """An error result whose ``text`` repeats the message for the model."""
        return cls(
            status="error",
            error=ToolError(code=code, message=message),
            text=f"Error [{code}]: {message}",
            data=data,
            context=context or {},
        )

    @property
    def ok(self) -> bool:
        return self.status == "success"


@dataclass(frozen=True)
class PermissionRequest:
    """A tool asks the user before running (policy ``ask``)."""

    tool_name: str
    kind: Literal["bash", "edit"]
    summary: str
    """One line: the command, or "Edit path/to/file"."""
    detail: str
    """The whole command, or the unified diff the change would make."""


PermissionAnswer = Literal["allow", "always", "deny"]
"""allow once, always for this session, or deny."""

Asker = Callable[[PermissionRequest], PermissionAnswer]


@dataclass
class ToolContext:
    """What a tool call may use: the workspace, the settings and the session's small state.

    One instance lives for a whole session (the mtime map of C4 is per session, in memory).
    """

    workspace: Path
    settings: Settings
    mtimes: dict[str, float] = field(default_factory=dict)
    """``{absolute path: mtime}`` of files Read in this session (seed A8/C4)."""
    todos: list[TodoItem] = field(default_factory=list)
    on_todos: Callable[[list[TodoItem]], None] | None = None
    """Called by TodoWrite with the new list, so the session store keeps it."""
    ask: Asker | None = None
    """Called when a policy is ``ask``; without it, ``ask`` means deny."""
    always_allowed: set[str] = field(default_factory=set)
    """Permission kinds the user allowed for the rest of the session."""
    cancel: threading.Event = field(default_factory=threading.Event)
    """Set to interrupt a running tool (Bash kills its process group)."""
    recall: Callable[[str, int], list[RecallHit]] | None = None
    """Searches the session's archived segments (``query, limit``); None: no store."""


class Tool:
    """A tool: a name, a description for the model, an input model and ``run``."""

    name: ClassVar[str]
    description: ClassVar[str]
    input_model: ClassVar[type[BaseModel]]

    def run(self, args: Any, ctx: ToolContext) -> ToolResult:  # pragma: no cover - interface
        raise NotImplementedError

    @classmethod
    def schema(cls) -> dict[str, Any]:
        """The Anthropic tool definition: name, description, input_schema."""
        return {
            "name": cls.name,
            "description": cls.description,
            "input_schema": cls.input_model.model_json_schema(),
        }
