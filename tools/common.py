"""What every ctxscope tool shares: the failure exception, the base class and schema cleaning.

A tool raises :class:`ToolFailure` anywhere in its body; :class:`BaseTool.run` turns it into
an error :class:`~tools.base.ToolResult`, so a tool is a straight line of checks and never
builds error envelopes by hand.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from tools.base import Tool, ToolContext, ToolResult


class ToolFailure(Exception):
    """A tool call failed in a way the model can understand and act on.

    ``code`` is the stable machine code (``not_found``, ``not_unique``...), ``message`` a
    sentence for the model saying what went wrong and what to do; ``data`` is kept in the
    error envelope (Bash keeps its output there, MultiEdit the failing edit).
    """

    def __init__(self, code: str, message: str, **data: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def result(self) -> ToolResult:
        """The error envelope for this failure."""
        return ToolResult.fail(self.code, self.message, **self.data)


class ToolInput(BaseModel):
    """Base of every tool's input model: unknown fields are refused, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


class BaseTool(Tool):
    """A tool whose body is :meth:`execute`; :class:`ToolFailure` becomes an error result."""

    def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        try:
            return self.execute(args, ctx)
        except ToolFailure as failure:
            return failure.result()

    def execute(self, args: Any, ctx: ToolContext) -> ToolResult:  # pragma: no cover
        raise NotImplementedError

    @classmethod
    def schema(cls) -> dict[str, Any]:
        """The Anthropic tool definition with a self-contained, title-free input schema."""
        return {
            "name": cls.name,
            "description": cls.description,
            "input_schema": clean_schema(cls.input_model.model_json_schema()),
        }


def tool_definition(tool: Tool | type[Tool]) -> dict[str, Any]:
    """One tool's Anthropic definition: name, description, input schema (inlined, untitled),
    as :meth:`ToolRegistry.schemas <tools.registry.ToolRegistry.schemas>` and
    :func:`tools.definitions.tool_definitions` give it."""
    schema = tool.schema()
    schema["input_schema"] = clean_schema(schema["input_schema"])
    return schema


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline ``$ref``/``$defs`` and drop pydantic's ``title`` keys from a JSON Schema.

    Property *names* are never touched: a field called ``title`` survives, only the ``title``
    annotations that pydantic adds to every object and property go.
    """
    defs: dict[str, Any] = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            name = str(node["$ref"]).rsplit("/", 1)[-1]
            merged = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
            return walk(merged)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("title", "$defs"):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: walk(prop) for name, prop in value.items()}
            else:
                out[key] = walk(value)
        return out

    cleaned: dict[str, Any] = walk(schema)
    return cleaned


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 file``, ``3 files``; ``many`` for irregular plurals."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def cut_line(line: str, max_chars: int) -> str:
    """``line`` cut to ``max_chars`` characters with a marker saying how much was cut."""
    if len(line) <= max_chars:
        return line
    return f"{line[:max_chars]}… [{len(line) - max_chars} chars cut]"
