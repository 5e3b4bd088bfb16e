"""Read: a range of a text file with line numbers, its mtime and the freshness note (A8/C4).

At most ``read_max_lines`` lines per call; longer lines are cut at ``read_max_line_chars``.
Every Read records the file's mtime in ``ctx.mtimes``; when a file read before has a different
mtime now, the result says ``Note: <file> was modified externally.`` (text and data).

``data``: ``{file, mtime, start_line, end_line, total_lines, content, truncated,
next_offset?, lines_cut?, encoding?, externally_modified?, note?}``. ``content`` is the
numbered fragment (``"    12\\tline"``, the format of ``cat -n``).

The file is streamed, never loaded whole: only the lines shown are kept, the rest is counted
and hashed (the hash feeds the freshness rule of Edit and Write). Only regular files are read,
opened through the confined walk (``tools.confined``): a link swapped in after the path was
checked makes the Read fail, never read outside.
"""

from __future__ import annotations

import codecs
import hashlib
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from prompts.tools.read import DESCRIPTION
from tools.base import Fingerprint, ToolContext, ToolResult
from tools.common import BaseTool, ToolFailure, ToolInput, cut_line
from tools.files import (
    BINARY_SNIFF_BYTES,
    LATIN1,
    READ_CHUNK,
    UTF8,
    UTF8_BOM,
    is_binary,
    open_regular,
)
from tools.paths import display_path, resolve_path, workspace_root


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


@dataclass
class Scan:
    """One pass over a file: the wanted lines (raw), the line count, encoding and fingerprint."""

    fingerprint: Fingerprint
    total_lines: int
    encoding: str
    wanted: list[bytes] = field(default_factory=list)

    def decoded(self) -> list[str]:
        codec = UTF8 if self.encoding == UTF8_BOM else self.encoding
        return [line.decode(codec, "replace") for line in self.wanted]


def scan_file(root: Path, path: Path, shown: str, first: int, last: int) -> Scan:
    """Stream ``path`` once, keeping only lines ``first``..``last`` (1-based, inclusive).

    Memory stays at one chunk plus the kept lines, however large the file. The rules of
    :func:`tools.files.decode` hold: a NUL in the head is a binary file; UTF-8 (BOM or not)
    when the whole file is valid UTF-8, else Latin-1.
    """
    with open_regular(root, path, shown) as (fd, st):
        digest = hashlib.sha256()
        utf8 = codecs.getincrementaldecoder(UTF8)()
        valid_utf8 = True
        wanted: list[bytes] = []
        partial = bytearray()
        line = 1  # number of the line the next byte belongs to
        size = 0
        last_byte = b""
        bom = False
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except OSError as exc:
                raise ToolFailure(
                    "read_failed", f"Cannot read {shown}: {exc.strerror or exc}."
                ) from None
            if size == 0 and chunk:
                if is_binary(chunk[:BINARY_SNIFF_BYTES]):
                    raise ToolFailure(
                        "binary_file",
                        f"{shown} is a binary file ({st.st_size} bytes); the file tools only "
                        "handle text.",
                        size=st.st_size,
                    )
                bom = chunk.startswith(codecs.BOM_UTF8)
                if bom:
                    chunk = chunk[len(codecs.BOM_UTF8) :]
                    digest.update(codecs.BOM_UTF8)
                    size += len(codecs.BOM_UTF8)
            if not chunk:
                break
            size += len(chunk)
            digest.update(chunk)
            last_byte = chunk[-1:]
            if valid_utf8:
                try:
                    utf8.decode(chunk)
                except UnicodeDecodeError:
                    valid_utf8 = False
            newlines = chunk.count(b"\n")
            if line + newlines < first or line > last:
                line += newlines  # nothing of this chunk is shown: count only
                continue
            pieces = chunk.split(b"\n")
            for i, piece in enumerate(pieces):
                if first <= line <= last:
                    partial += piece
                if i < len(pieces) - 1:
                    if first <= line <= last:
                        wanted.append(bytes(partial))
                    partial.clear()
                    line += 1
        if valid_utf8:
            try:
                utf8.decode(b"", final=True)
            except UnicodeDecodeError:
                valid_utf8 = False
        complete_last = last_byte == b"\n" or (size == 0)
        total = line - 1 if complete_last else line
        if not complete_last and first <= line <= last:
            wanted.append(bytes(partial))
        encoding = (UTF8_BOM if bom else UTF8) if valid_utf8 else LATIN1
        fingerprint = Fingerprint(st.st_mtime, size, digest.hexdigest())
        return Scan(fingerprint, total, encoding, wanted)


class ReadTool(BaseTool):
    name: ClassVar[str] = "Read"
    description: ClassVar[str] = DESCRIPTION
    input_model = ReadInput

    def execute(self, args: ReadInput, ctx: ToolContext) -> ToolResult:
        path = resolve_path(ctx, args.file_path)
        shown = display_path(ctx, path)
        cap = ctx.settings.read_max_lines
        limit = min(args.limit or cap, cap)
        start = args.offset
        scan = scan_file(workspace_root(ctx), path, shown, start, start + limit - 1)
        mtime = scan.fingerprint.mtime
        key = str(path)
        previous = ctx.mtimes.get(key)
        ctx.mtimes[key] = mtime
        ctx.fingerprints[key] = scan.fingerprint

        total = scan.total_lines
        if args.offset > max(total, 1):
            raise ToolFailure(
                "invalid_offset",
                f"offset {args.offset} is past the end of {shown}, which has {total} lines.",
                total_lines=total,
            )
        end = min(total, start + limit - 1)
        lines = scan.decoded()
        content, cut = number_lines(lines, start, ctx.settings.read_max_line_chars)

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
        if scan.encoding not in (UTF8, UTF8_BOM):
            data["encoding"] = scan.encoding
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
            header.append(f"(not valid UTF-8; decoded as {scan.encoding})")
        parts = ["\n".join(header)]
        if content:
            parts.append(content)
        if end < total:
            parts.append(f"[... {total - end} more lines; continue with offset={end + 1}]")
        return ToolResult(status="success", data=data, text="\n".join(parts))
