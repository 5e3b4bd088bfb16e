"""Glob: files whose path matches a pattern, newest first.

The pattern is matched against paths relative to the search directory (``**`` spans
directories, see ``tools.patterns``); results are workspace-relative. The walk honours
``.gitignore``, skips ``.git`` and never follows symlinks: it lists and enters directories
by descriptor (``tools.walk``), so one swapped for a link mid-walk is not entered.

``data``: ``{pattern, path, matches: [path, ...], total, shown, truncated}``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from prompts.tools.glob import DESCRIPTION
from tools.base import ToolContext, ToolResult
from tools.common import BaseTool, ToolFailure, ToolInput, plural
from tools.paths import display_path, resolve_path, workspace_root
from tools.patterns import compile_glob, literal_prefix
from tools.walk import hidden_by_rules, walk_files


class GlobInput(ToolInput):
    pattern: str = Field(min_length=1, description='Glob pattern, e.g. "**/*.py".')
    path: str = Field(".", description="Directory to search in, relative to the workspace.")


class GlobTool(BaseTool):
    name: ClassVar[str] = "Glob"
    description: ClassVar[str] = DESCRIPTION
    input_model = GlobInput

    def execute(self, args: GlobInput, ctx: ToolContext) -> ToolResult:
        base = resolve_path(ctx, args.path)
        shown = display_path(ctx, base)
        if not base.is_dir():
            code = "not_a_directory" if base.exists() else "not_found"
            raise ToolFailure(code, f"{shown} is not a directory to search in.")
        pattern = args.pattern.removeprefix("./")
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise ToolFailure(
                "invalid_pattern",
                f"Pattern {args.pattern!r} must be relative to the search path, without '..'.",
            )
        regex = compile_glob(pattern)
        root = workspace_root(ctx)
        # Start the walk below the pattern's fixed directories, which cannot fail to match.
        prefix = literal_prefix(pattern)
        start = base / prefix if prefix else base
        if (
            start.is_symlink()
            or not start.is_dir()
            or start.resolve() != start
            or hidden_by_rules(root, base, start)
        ):
            start = base
        base_rel = "" if base == root else display_path(ctx, base) + "/"
        found: list[tuple[float, str]] = []
        for rel, entry in walk_files(root, start):
            if regex.fullmatch(rel[len(base_rel) :]):
                found.append((entry.stat().st_mtime, rel))
        found.sort(key=lambda item: (-item[0], item[1]))
        cap = ctx.settings.tool_max_results
        matches = [rel for _, rel in found[:cap]]
        data: dict[str, Any] = {
            "pattern": args.pattern,
            "path": shown,
            "matches": matches,
            "total": len(found),
            "shown": len(matches),
            "truncated": len(found) > cap,
        }
        if not found:
            text = f"No files match {args.pattern!r} in {shown}."
        else:
            head = f"{plural(len(found), 'file')} match {args.pattern!r} in {shown} (newest first):"
            lines = [head, *matches]
            if len(found) > cap:
                lines.append(f"[... {len(found) - cap} more not shown; narrow the pattern]")
            text = "\n".join(lines)
        return ToolResult(status="success", data=data, text=text)
