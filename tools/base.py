"""The result envelope, the per-call context and the tool interface shared by every tool.

The tools sit below the engine: they import nothing from ``engine`` (an import-linter layers
contract checks it). The settings they read are described by :class:`ToolSettings`, which
``engine.settings.config.Settings`` provides; the todo item lives here and the engine re-exports it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, Field

from tools.injection import Injections
from tools.secrets import EnvironmentPolicy, Redactor

TodoStatus = Literal["pending", "in_progress", "completed"]


# One entry of the TodoWrite list. (No docstring: pydantic would put it in the tool's schema.)
class TodoItem(BaseModel):
    content: str = Field(min_length=1)
    status: TodoStatus = "pending"


class RecallHit(BaseModel):
    """One archived message that matched a Recall search, or one observation of the round in
    progress that was set aside to fit the window (``segment_id`` None: not archived yet)."""

    message_id: int
    segment_id: int | None
    round: int
    role: str
    tool_name: str | None = None
    snippet: str
    """The matching passage, matched words in ``[brackets]``."""
    score: float
    """Relevance (bm25, higher is better)."""


class ToolSettings(Protocol):
    """The settings the tools read; ``engine.settings.config.Settings`` has them all (and documents
    them)."""

    @property
    def read_max_lines(self) -> int: ...
    @property
    def read_max_line_chars(self) -> int: ...
    @property
    def snippet_max_lines(self) -> int: ...
    @property
    def tool_max_results(self) -> int: ...
    @property
    def bash_timeout(self) -> float: ...
    @property
    def bash_max_timeout(self) -> float: ...
    @property
    def bash_output_cap(self) -> int: ...
    @property
    def bash_policy(self) -> str: ...
    @property
    def edit_policy(self) -> str: ...
    @property
    def secret_env_patterns(self) -> list[str]: ...
    @property
    def secret_env_allow(self) -> list[str]: ...
    @property
    def secret_env_url_passwords(self) -> bool: ...
    @property
    def bash_sandbox(self) -> str: ...
    @property
    def bash_network(self) -> bool: ...
    @property
    def bash_unix_sockets(self) -> bool: ...
    @property
    def bash_max_processes(self) -> int: ...
    @property
    def bash_max_memory_mb(self) -> int: ...
    @property
    def bash_max_address_space_mb(self) -> int: ...
    @property
    def bash_max_file_mb(self) -> int: ...
    @property
    def bash_max_cpu_seconds(self) -> int: ...
    @property
    def bash_tmp_mb(self) -> int: ...


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


@dataclass(frozen=True)
class Fingerprint:
    """What a Read saw of a file: enough to tell any later change (C4, stricter than mtime)."""

    mtime: float
    size: int
    sha256: str


@dataclass
class ToolContext:
    """What a tool call may use: the workspace, the settings and the session's small state.

    One instance lives for a whole session (the mtime map of C4 is per session, in memory).
    """

    workspace: Path
    settings: ToolSettings
    mtimes: dict[str, float] = field(default_factory=dict)
    """``{absolute path: mtime}`` of files Read in this session (seed A8/C4)."""
    fingerprints: dict[str, Fingerprint] = field(default_factory=dict)
    """``{absolute path: mtime, size and hash}`` of what was last Read or written (C4)."""
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
    secrets: Redactor | None = None
    """Known secret values to redact from results; built from the environment when None."""
    chat_transcript: Callable[[], list[tuple[str, str]]] | None = None
    """The session's chat as its user saw it, ``(role, text)`` oldest first: every earlier
    round's input and final answer, archived ones included (seed 003's ChatStore transcript);
    None: no store."""
    execution_log: Callable[[], list[dict[str, Any]]] | None = None
    """The entries of the session's execution log, oldest first (seed 003's
    ``agent-context.jsonl``); None: no log."""
    injections: Injections | None = None
    """What tools injected into the run in progress (seed 003); None: injection unsupported."""

    def redactor(self) -> Redactor:
        """The secrets of this process' environment (what ``secret_env_*`` withholds)."""
        if self.secrets is None:
            policy = EnvironmentPolicy.from_settings(self.settings)
            self.secrets = Redactor.from_environment(policy)
        return self.secrets


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
