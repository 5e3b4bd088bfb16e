"""The registry: order, clean schemas, and a ``run`` that never raises."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from tools.base import Tool, ToolContext, ToolResult
from tools.common import ToolInput
from tools.registry import ToolRegistry, default_registry

TEN = [
    "LS",
    "Glob",
    "Grep",
    "Read",
    "Edit",
    "MultiEdit",
    "Write",
    "Bash",
    "TodoWrite",
    "Recall",
]

SCHEMA_KEYWORDS = {
    "type",
    "properties",
    "required",
    "items",
    "description",
    "default",
    "enum",
    "anyOf",
    "minLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "minItems",
    "additionalProperties",
}
JSON_TYPES = {"object", "array", "string", "integer", "number", "boolean", "null"}


def check_schema(node: Any, where: str) -> None:
    """A small JSON Schema sanity check: known keywords, valid types, no refs or titles."""
    assert isinstance(node, dict), where
    unknown = set(node) - SCHEMA_KEYWORDS
    assert not unknown, f"{where}: unexpected keywords {unknown}"
    if "type" in node:
        assert node["type"] in JSON_TYPES, where
    for name, prop in node.get("properties", {}).items():
        check_schema(prop, f"{where}.{name}")
    if "items" in node:
        check_schema(node["items"], f"{where}[]")
    for i, option in enumerate(node.get("anyOf", [])):
        check_schema(option, f"{where}|{i}")
    for name in node.get("required", []):
        assert name in node["properties"], f"{where}: required {name} is not a property"


def test_default_registry_has_the_ten_tools_in_order() -> None:
    registry = default_registry()
    assert registry.names == TEN
    assert [s["name"] for s in registry.schemas()] == TEN
    assert registry.get("Read") is not None and registry.get("Read").name == "Read"
    assert registry.get("cat") is None


def test_schemas_are_clean_json_schema_objects() -> None:
    for schema in default_registry().schemas():
        assert set(schema) == {"name", "description", "input_schema"}
        assert len(schema["description"]) > 80
        input_schema = schema["input_schema"]
        assert input_schema["type"] == "object"
        assert input_schema["additionalProperties"] is False
        check_schema(input_schema, schema["name"])


def test_schema_fields_match_the_documented_names() -> None:
    props = {s["name"]: s["input_schema"]["properties"] for s in default_registry().schemas()}
    assert list(props["LS"]) == ["path"]
    assert list(props["Glob"]) == ["pattern", "path"]
    assert list(props["Grep"]) == ["pattern", "path", "glob", "case_insensitive", "output_mode"]
    assert props["Grep"]["output_mode"]["enum"] == ["content", "files_with_matches", "count"]
    assert list(props["Read"]) == ["file_path", "offset", "limit"]
    assert list(props["Edit"]) == ["file_path", "old_string", "new_string", "replace_all"]
    assert list(props["MultiEdit"]) == ["file_path", "edits"]
    assert list(props["MultiEdit"]["edits"]["items"]["properties"]) == [
        "old_string",
        "new_string",
        "replace_all",
    ]
    assert list(props["Write"]) == ["file_path", "content"]
    assert list(props["Bash"]) == ["command", "timeout", "description"]
    todo_item = props["TodoWrite"]["todos"]["items"]
    assert todo_item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]


def test_unknown_tool(ctx: ToolContext) -> None:
    result = default_registry().run("Cat", {"file": "x"}, ctx)
    assert result.status == "error"
    assert result.error is not None and result.error.code == "unknown_tool"
    assert "'Cat'" in result.error.message and "Read" in result.error.message
    assert result.context == {"tool": "Cat", "arguments": {"file": "x"}}


def test_invalid_input_is_readable(ctx: ToolContext) -> None:
    result = default_registry().run("Read", {"offset": 0, "colour": "red"}, ctx)
    assert result.error is not None and result.error.code == "invalid_input"
    message = result.error.message
    assert message.startswith("Invalid input for Read: ")
    assert "file_path: Field required" in message
    assert "offset: Input should be greater than or equal to 1 (got 0)" in message
    assert "colour: Extra inputs are not permitted" in message
    assert result.text == f"Error [invalid_input]: {message}"


def test_invalid_input_when_arguments_are_not_an_object(ctx: ToolContext) -> None:
    result = default_registry().run("LS", ["."], ctx)  # type: ignore[arg-type]
    assert result.error is not None and result.error.code == "invalid_input"


class _ExplodingInput(ToolInput):
    pass


class _ExplodingTool(Tool):
    name: ClassVar[str] = "Boom"
    description: ClassVar[str] = "Always raises."
    input_model: ClassVar[type[BaseModel]] = _ExplodingInput

    def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        raise RuntimeError("disk on fire")


def test_unexpected_exception_becomes_internal_error(ctx: ToolContext) -> None:
    result = ToolRegistry([_ExplodingTool()]).run("Boom", {}, ctx)
    assert result.status == "error"
    assert result.error is not None and result.error.code == "internal_error"
    assert "RuntimeError: disk on fire" in result.error.message
    assert result.stats["duration_ms"] >= 0


def test_run_fills_context_and_duration(ctx: ToolContext, files: Any) -> None:
    files("a.txt", "x\n")
    result = default_registry().run("Read", {"file_path": "a.txt"}, ctx)
    assert result.ok
    assert result.context == {"tool": "Read", "arguments": {"file_path": "a.txt"}}
    assert isinstance(result.stats["duration_ms"], float)


def test_duplicate_names_are_refused() -> None:
    read = default_registry().get("Read")
    assert read is not None
    with pytest.raises(ValueError, match="Read"):
        ToolRegistry([read, read])
