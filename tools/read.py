"""Read: a range of a text file with line numbers, its mtime and the freshness note (A8/C4).

At most ``read_max_lines`` lines per call; longer lines are cut at ``read_max_line_chars``.
Every Read records the file's mtime in ``ctx.mtimes``; when a file read before has a different
mtime now, the result says ``Note: <file> was modified externally.`` (text and data).

``data``: ``{file, mtime, start_line, end_line, total_lines, content, truncated,
next_offset?, lines_cut?, encoding?, externally_modified?, note?}``. ``content`` is the
numbered fragment (``"    12\\tline"``, the format of ``cat -n``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field

from prompts.tools.read import DESCRIPTION
from tools.base import ToolContext, ToolResult
from tools.common import BaseTool, ToolFailure, ToolInput, cut_line
from tools.files import UTF8, UTF8_BOM, load_text
from tools.paths import display_path, resolve_path


class ReadInput(ToolInput):
    file_path: str = Field(description="File to read, relative to the workspace root.")
    offset: int = Field(1, ge=1, description="First line to return (1-based).")
    limit: int | None = Field(None, ge=1, description="Number of lines to return.")


def number_lines(lines: list[str], first: int, max_chars: int) -> tuple[str, int]:
    """``cat -n`` style numbering from line ``first``; also how many long lines were cut."""
    out: list[str] = []
    cut = 0
    for number, line in enumerate(lines, first):
        line = line.removesuffix("\r")
        if len(line) > max_chars:
            cut += 1
            line = cut_line(line, max_chars)
        out.append(f"{number:>6}\t{line}")
    return "\n".join(out), cut


def modified_note(shown: str) -> str:
    """The seed-A8 freshness note."""
    return f"Note: {shown} was modified externally."


class ReadTool(BaseTool):
    name: ClassVar[str] = "Read"
    description: ClassVar[str] = DESCRIPTION
    input_model = ReadInput

    def execute(self, args: ReadInput, ctx: ToolContext) -> ToolResult:
        path = resolve_path(ctx, args.file_path)
        shown = display_path(ctx, path)
        text_file = load_text(path, shown)
        mtime = path.stat().st_mtime
        key = str(path)
        previous = ctx.mtimes.get(key)
        ctx.mtimes[key] = mtime

        lines = text_file.text.split("\n")
        if lines[-1] == "":
            lines.pop()
        total = len(lines)
        if args.offset > max(total, 1):
            raise ToolFailure(
                "invalid_offset",
                f"offset {args.offset} is past the end of {shown}, which has {total} lines.",
                total_lines=total,
            )
        cap = ctx.settings.read_max_lines
        limit = min(args.limit or cap, cap)
        start = args.offset
        end = min(total, start + limit - 1)
        content, cut = number_lines(lines[start - 1 : end], start, ctx.settings.read_max_line_chars)

        data: dict[str, Any] = {
            "file": shown,
            "mtime": mtime,
            "start_line": start if total else 0,
            "end_line": end,
            "total_lines": total,
            "content": content,
            "truncated": end < total,
        }
        if end < total:
            data["next_offset"] = end + 1
        if cut:
            data["lines_cut"] = cut
        if text_file.encoding not in (UTF8, UTF8_BOM):
            data["encoding"] = text_file.encoding
        header = [
            f"{shown}: lines {start}-{end} of {total}"
            if total
            else f"{shown}: empty file (0 lines)",
        ]
        header[0] += f" (mtime {datetime.fromtimestamp(mtime).isoformat(timespec='seconds')})"
        if previous is not None and previous != mtime:
            note = modified_note(shown)
            data["externally_modified"] = True
            data["note"] = note
            header.insert(0, note)
        if "encoding" in data:
            header.append(f"(not valid UTF-8; decoded as {text_file.encoding})")
        parts = ["\n".join(header)]
        if content:
            parts.append(content)
        if end < total:
            parts.append(f"[... {total - end} more lines; continue with offset={end + 1}]")
        return ToolResult(status="success", data=data, text="\n".join(parts))
