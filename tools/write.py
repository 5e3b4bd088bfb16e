"""Write: create a file or replace its content, atomically.

Overwriting needs a Read of the file in this session and no change on disk since (C4); an
overwrite keeps the file's encoding and newline style. The user allows the diff first
(``edit_policy``). Missing parent directories are created.

``data``: ``{file, action: created|overwritten, lines, bytes, head}`` where ``head`` is the
first ``snippet_max_lines`` lines of the new content; an overwrite adds ``changed_ranges``,
``lines_added``, ``lines_removed`` and ``diff``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from prompts.tools.write import DESCRIPTION
from tools.base import ToolContext, ToolResult
from tools.common import BaseTool, ToolFailure, ToolInput, plural
from tools.diffs import compare
from tools.files import TextFile, count_lines, load_text, require_fresh, write_file
from tools.paths import display_path, refuse_control_file, resolve_path, workspace_root
from tools.permissions import require_permission


class WriteInput(ToolInput):
    file_path: str = Field(description="File to write, relative to the workspace root.")
    content: str = Field(description="The complete content of the file.")


class WriteTool(BaseTool):
    name: ClassVar[str] = "Write"
    description: ClassVar[str] = DESCRIPTION
    input_model = WriteInput

    def execute(self, args: WriteInput, ctx: ToolContext) -> ToolResult:
        path = resolve_path(ctx, args.file_path)
        shown = display_path(ctx, path)
        refuse_control_file(ctx, path)
        if path.is_dir():
            raise ToolFailure("is_a_directory", f"{shown} is a directory.")
        exists = path.exists()
        if exists:
            require_fresh(ctx, path, shown)
            old = load_text(workspace_root(ctx), path, shown)
        else:
            old = TextFile(text="", encoding="utf-8", newline="\n")
        payload = old.encode(args.content)
        change = compare(old.text, args.content, shown)
        verb = "Overwrite" if exists else "Create"
        require_permission(ctx, "edit", self.name, f"{verb} {shown}", change.diff)
        if exists:
            require_fresh(ctx, path, shown)
        write_file(ctx, path, shown, payload)

        lines = count_lines(args.content)
        head = "".join(args.content.splitlines(keepends=True)[: ctx.settings.snippet_max_lines])
        data: dict[str, Any] = {
            "file": shown,
            "action": "overwritten" if exists else "created",
            "lines": lines,
            "bytes": len(payload),
            "head": head,
        }
        if exists:
            data |= {
                "changed_ranges": change.ranges,
                "lines_added": change.added,
                "lines_removed": change.removed,
                "diff": change.diff,
            }
            where = "; ".join(change.ranges) or "content unchanged"
            text = f"Overwrote {shown} ({plural(lines, 'line')}, {len(payload)} bytes): {where}."
        else:
            text = f"Created {shown} ({plural(lines, 'line')}, {len(payload)} bytes)."
        return ToolResult(status="success", data=data, text=text)
