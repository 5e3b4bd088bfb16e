"""Edit and MultiEdit: exact-string replacements in a file that was Read, all or nothing.

Order of checks: the path is confined, the file exists and is text, it was Read in this
session and is unchanged since (C4), every replacement applies (exactly one occurrence unless
``replace_all``), the user allows the diff (``edit_policy``), the file is still unchanged, then
one atomic write. Any failure leaves the file as it was.

``data``: ``{file, replacements, changed_ranges, lines_added, lines_removed, diff,
total_lines}``; MultiEdit adds ``edits`` (how many) and, on failure, ``failed_edit``
(1-based).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from prompts.tools.edit import DESCRIPTION as EDIT_DESCRIPTION
from prompts.tools.multi_edit import DESCRIPTION as MULTI_EDIT_DESCRIPTION
from tools.base import ToolContext, ToolResult
from tools.common import BaseTool, ToolFailure, ToolInput, plural
from tools.diffs import compare
from tools.files import count_lines, load_text, require_fresh, write_file
from tools.paths import display_path, refuse_control_file, resolve_path, workspace_root
from tools.permissions import require_permission

MAX_LISTED_OCCURRENCES = 10
"""A not-unique error names at most this many line numbers."""

_NUMBER_PREFIX = re.compile(r"^\s*\d+\t", re.MULTILINE)


class EditSpec(ToolInput):
    old_string: str = Field(min_length=1, description="Exact text to replace.")
    new_string: str = Field(description="Replacement text.")
    replace_all: bool = Field(False, description="Replace every occurrence.")


class EditInput(ToolInput):
    file_path: str = Field(description="File to edit, relative to the workspace root.")
    old_string: str = Field(min_length=1, description="Exact text to replace.")
    new_string: str = Field(description="Replacement text.")
    replace_all: bool = Field(False, description="Replace every occurrence.")


class MultiEditInput(ToolInput):
    file_path: str = Field(description="File to edit, relative to the workspace root.")
    edits: list[EditSpec] = Field(min_length=1, description="Replacements, applied in order.")


def apply_edit(text: str, spec: EditSpec, shown: str) -> tuple[str, int]:
    """``text`` with ``spec`` applied and the number of replacements, or a ToolFailure."""
    if spec.old_string == spec.new_string:
        raise ToolFailure("no_change", "old_string and new_string are identical; nothing to do.")
    count = text.count(spec.old_string)
    if count == 0:
        hint = (
            " It seems to include Read's line-number prefix; copy only the text after the tab."
            if _NUMBER_PREFIX.search(spec.old_string)
            else " It must match exactly, including whitespace and indentation; Read the file"
            " again and copy the text."
        )
        raise ToolFailure("string_not_found", f"old_string was not found in {shown}.{hint}")
    if count > 1 and not spec.replace_all:
        lines = _occurrence_lines(text, spec.old_string)
        listed = ", ".join(str(n) for n in lines[:MAX_LISTED_OCCURRENCES])
        more = ", ..." if len(lines) > MAX_LISTED_OCCURRENCES else ""
        raise ToolFailure(
            "not_unique",
            f"old_string occurs {count} times in {shown} (lines {listed}{more}). Add "
            "surrounding lines to make it unique, or set replace_all to replace every one.",
            occurrences=count,
        )
    if spec.replace_all:
        return text.replace(spec.old_string, spec.new_string), count
    return text.replace(spec.old_string, spec.new_string, 1), 1


def _occurrence_lines(text: str, needle: str) -> list[int]:
    lines: list[int] = []
    start = text.find(needle)
    while start >= 0:
        lines.append(text.count("\n", 0, start) + 1)
        start = text.find(needle, start + len(needle))
    return lines


def edit_file(
    ctx: ToolContext, tool_name: str, file_path: str, edits: list[EditSpec]
) -> ToolResult:
    """Apply ``edits`` to one file (Edit passes one, MultiEdit several)."""
    path: Path = resolve_path(ctx, file_path)
    shown = display_path(ctx, path)
    refuse_control_file(ctx, path)
    if not path.exists():
        raise ToolFailure("not_found", f"{shown} does not exist. Use Write to create a new file.")
    original = load_text(workspace_root(ctx), path, shown)
    require_fresh(ctx, path, shown)
    text = original.text
    replacements = 0
    for index, spec in enumerate(edits, 1):
        try:
            text, count = apply_edit(text, spec, shown)
        except ToolFailure as failure:
            if len(edits) == 1:
                raise
            raise ToolFailure(
                failure.code,
                f"Edit {index} of {len(edits)} failed: {failure.message} "
                "No edit was applied; the file is unchanged.",
                failed_edit=index,
                **failure.data,
            ) from None
        replacements += count
    change = compare(original.text, text, shown)
    require_permission(ctx, "edit", tool_name, f"{tool_name} {shown}", change.diff)
    require_fresh(ctx, path, shown)
    write_file(ctx, path, shown, original.encode(text))
    data: dict[str, Any] = {
        "file": shown,
        "replacements": replacements,
        "changed_ranges": change.ranges,
        "lines_added": change.added,
        "lines_removed": change.removed,
        "diff": change.diff,
        "total_lines": count_lines(text),
    }
    if len(edits) > 1 or tool_name == "MultiEdit":
        data["edits"] = len(edits)
    where = "; ".join(change.ranges) or "no line changed"
    summary = f"Edited {shown}: {plural(replacements, 'replacement')} — {where}."
    text_out = summary + "\n" + _clip_diff(change.diff, ctx.settings.read_max_lines)
    return ToolResult(status="success", data=data, text=text_out.rstrip("\n"))


def _clip_diff(diff: str, max_lines: int) -> str:
    lines = diff.splitlines()
    if len(lines) <= max_lines:
        return diff
    return "\n".join(lines[:max_lines]) + f"\n[... {len(lines) - max_lines} more diff lines]"


class EditTool(BaseTool):
    name: ClassVar[str] = "Edit"
    description: ClassVar[str] = EDIT_DESCRIPTION
    input_model = EditInput

    def execute(self, args: EditInput, ctx: ToolContext) -> ToolResult:
        spec = EditSpec(
            old_string=args.old_string, new_string=args.new_string, replace_all=args.replace_all
        )
        return edit_file(ctx, self.name, args.file_path, [spec])


class MultiEditTool(BaseTool):
    name: ClassVar[str] = "MultiEdit"
    description: ClassVar[str] = MULTI_EDIT_DESCRIPTION
    input_model = MultiEditInput

    def execute(self, args: MultiEditInput, ctx: ToolContext) -> ToolResult:
        return edit_file(ctx, self.name, args.file_path, args.edits)
