"""The tool registry: schemas for the model and one ``run`` that never raises.

``run`` validates the raw input against the tool's pydantic model, runs the tool and always
returns a :class:`~tools.base.ToolResult`: an unknown name is ``unknown_tool``, a validation
failure ``invalid_input`` (pydantic's reasons, one per field), an unexpected exception
``internal_error``. Every result gets ``context`` (the tool and its arguments) and
``stats.duration_ms``.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import ValidationError

from tools.base import Tool, ToolContext, ToolResult
from tools.bash import BashTool
from tools.common import tool_definition
from tools.edit import EditTool, MultiEditTool
from tools.glob_tool import GlobTool
from tools.grep import GrepTool
from tools.ls import LSTool
from tools.read import ReadTool
from tools.recall import RecallTool
from tools.secrets import Redactor
from tools.todo import TodoWriteTool
from tools.write import WriteTool


class ToolRegistry:
    """The tools one agent may call, by name, in a fixed order."""

    needs_workspace = True
    """Whether its tools run in the session's folder (none runs without one); False for a
    replay's recorded answers (:class:`engine.replay.recorded.RecordedTools`), which run
    nothing anywhere."""

    def __init__(self, tools: list[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self._tools[tool.name] = tool

    @property
    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def extended(self, tools: list[Tool]) -> ToolRegistry:
        """This registry with ``tools`` after its own (those whose name it lacks): calls to them
        run here, every other call as this registry runs it. ``self`` when nothing is added."""
        extra = [t for t in tools if t.name not in self._tools]
        return _Extended(self, extra) if extra else self

    def schemas(self) -> list[dict[str, Any]]:
        """Anthropic tool definitions (name, description, input_schema), in order."""
        return [tool_definition(tool) for tool in self._tools.values()]

    def run(self, name: str, raw_input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Validate and run one call; never raises."""
        started = time.perf_counter()
        result = self._run(name, raw_input, ctx)
        result.context = {"tool": name, "arguments": raw_input}
        redact(result, ctx.redactor())
        result.stats["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return result

    def _run(self, name: str, raw_input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult.fail(
                "unknown_tool",
                f"There is no tool named {name!r}. Available tools: {', '.join(self.names)}.",
            )
        try:
            args = tool.input_model.model_validate(raw_input)
        except ValidationError as exc:
            return ToolResult.fail("invalid_input", describe_validation(name, exc))
        try:
            return tool.run(args, ctx)
        except Exception as exc:  # noqa: BLE001 - the registry is the last line of defence
            return ToolResult.fail(
                "internal_error", f"{name} failed unexpectedly: {type(exc).__name__}: {exc}"
            )


class _Extended(ToolRegistry):
    """A registry's tools and some more (a strategy's own: seed 003's loading tools)."""

    def __init__(self, base: ToolRegistry, extra: list[Tool]) -> None:
        own = [t for t in (base.get(n) for n in base.names) if t is not None]
        super().__init__([*own, *extra])
        self._base = base
        self._extra = {t.name for t in extra}
        self.needs_workspace = base.needs_workspace

    def run(self, name: str, raw_input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if name in self._extra:
            return super().run(name, raw_input, ctx)
        return self._base.run(name, raw_input, ctx)


def redact(result: ToolResult, secrets: Redactor) -> None:
    """Replace every known secret value in ``result`` before it is stored or sent."""
    if not secrets:
        return
    result.text = secrets.text(result.text)
    result.data = secrets.value(result.data)
    result.context = secrets.value(result.context)
    if result.error is not None:
        result.error.message = secrets.text(result.error.message)


def describe_validation(tool_name: str, exc: ValidationError) -> str:
    """``Invalid input for Read: offset: Input should be greater than or equal to 1 (got 0)``."""
    problems: list[str] = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in err["loc"]) or "input"
        text = f"{loc}: {err['msg']}"
        if err["type"] not in ("missing",) and "input" in err:
            got = repr(err["input"])
            text += f" (got {got[:80] + '…' if len(got) > 80 else got})"
        problems.append(text)
    return f"Invalid input for {tool_name}: " + "; ".join(problems)


def default_registry() -> ToolRegistry:
    """All ten tools, in the order the model sees them."""
    return ToolRegistry(
        [
            LSTool(),
            GlobTool(),
            GrepTool(),
            ReadTool(),
            EditTool(),
            MultiEditTool(),
            WriteTool(),
            BashTool(),
            TodoWriteTool(),
            RecallTool(),
        ]
    )
