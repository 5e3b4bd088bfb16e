"""LS: the entries of one directory, directories first, symlinks shown but not followed.

``data``: ``{path, entries: [{name, type: dir|file|symlink|other, size?, target?}], total,
dirs, files, symlinks, shown, truncated}``. A symlink's ``target`` is given only when it
resolves inside the workspace; otherwise it says ``outside workspace``. The directory is
listed by descriptor, reached without following a link (``tools.confined``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from prompts.tools.ls import DESCRIPTION
from tools.base import ToolContext, ToolResult
from tools.common import BaseTool, ToolFailure, ToolInput, plural
from tools.confined import SWAPPED, opened_dir
from tools.paths import display_path, is_inside, resolve_path, workspace_root


class LSInput(ToolInput):
    path: str = Field(".", description="Directory relative to the workspace root.")


def _entry(
    entry: os.DirEntry[str], directory: Path, root: Path, ctx: ToolContext
) -> dict[str, Any]:
    item: dict[str, Any] = {"name": entry.name}
    if entry.is_symlink():
        item["type"] = "symlink"
        # Only where the link points is shown (a name), nothing is read through it.
        target = Path(os.path.realpath(directory / entry.name))
        item["target"] = display_path(ctx, target) if is_inside(target, root) else None
    elif entry.is_dir(follow_symlinks=False):
        item["type"] = "dir"
    elif entry.is_file(follow_symlinks=False):
        item["type"] = "file"
        item["size"] = entry.stat(follow_symlinks=False).st_size
    else:
        item["type"] = "other"
    return item


def _line(item: dict[str, Any]) -> str:
    kind = item["type"]
    if kind == "dir":
        return f"{item['name']}/"
    if kind == "file":
        return f"{item['name']}  ({item['size']} B)"
    if kind == "symlink":
        return f"{item['name']} -> {item['target'] or '(outside workspace, not followed)'}"
    return f"{item['name']}  (special file)"


class LSTool(BaseTool):
    name: ClassVar[str] = "LS"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[ToolInput]] = LSInput

    def execute(self, args: LSInput, ctx: ToolContext) -> ToolResult:
        directory = resolve_path(ctx, args.path)
        shown = display_path(ctx, directory)
        if not directory.exists():
            raise ToolFailure("not_found", f"{shown} does not exist.")
        if not directory.is_dir():
            raise ToolFailure("not_a_directory", f"{shown} is a file; use Read to see it.")
        root = workspace_root(ctx)
        try:
            # Listed by descriptor, reached without following a link (tools.confined).
            with opened_dir(root, directory) as fd, os.scandir(fd) as it:
                items = [_entry(entry, directory, root, ctx) for entry in it]
        except OSError as exc:
            if exc.errno in SWAPPED:
                raise ToolFailure(
                    "path_outside_workspace",
                    f"Cannot list {shown}: it or a directory on its path is (or just became) "
                    "a symlink; LS never lists through a link.",
                ) from None
            raise ToolFailure("read_failed", f"Cannot list {shown}: {exc.strerror}.") from None
        items.sort(key=lambda item: (item["type"] != "dir", item["name"]))
        counts = {kind: sum(1 for i in items if i["type"] == kind) for kind in ("dir", "file")}
        symlinks = sum(1 for i in items if i["type"] == "symlink")
        cap = ctx.settings.tool_max_results
        kept = items[:cap]
        summary = (
            f"{shown}/ — {plural(counts['dir'], 'directory', 'directories')}, "
            f"{plural(counts['file'], 'file')}"
            + (f", {plural(symlinks, 'symlink')}" if symlinks else "")
        )
        lines = [summary, *(f"  {_line(item)}" for item in kept)]
        if len(items) > cap:
            lines.append(f"  [... {len(items) - cap} more entries not shown]")
        if not items:
            lines.append("  (empty directory)")
        data: dict[str, Any] = {
            "path": shown,
            "entries": kept,
            "total": len(items),
            "dirs": counts["dir"],
            "files": counts["file"],
            "symlinks": symlinks,
            "shown": len(kept),
            "truncated": len(items) > cap,
        }
        return ToolResult(status="success", data=data, text="\n".join(lines))
