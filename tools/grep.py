"""Grep: regex search over file contents, through ripgrep or a pure-Python fallback.

Both engines give the same ``data`` on the same tree (a test checks it):
- the walk honours ``.gitignore`` from the workspace root down (also without a git
  repository; never the ones above the workspace), walks hidden files, skips
  ``.git``, binary files (a NUL byte) and symlinks;
- results come in ripgrep's ``--sort path`` order (depth first, siblings by name), so the
  first ``tool_max_results`` lines are the same whichever engine ran;
- ``glob`` without ``/`` matches file names at any depth, with ``/`` the workspace-relative
  path; a leading ``!`` excludes; as with ``rg --glob``, a glob decides before
  ``.gitignore`` (``glob="*.log"`` finds ignored log files);
- line text drops a trailing ``\\r`` and a UTF-8 BOM; invalid UTF-8 shows as U+FFFD.

One known difference: ripgrep never lets ``.`` or a class match a byte that is not valid
UTF-8, while the fallback matches it as U+FFFD (``caf.`` finds Latin-1 ``café`` only there).
Python's ``re`` also accepts look-around and backreferences, which ripgrep refuses. And a
file whose first NUL byte lies beyond ripgrep's first 64 KiB buffer is partly searched by
ripgrep (matches before the NUL) but skipped whole by the fallback.

ripgrep is looked up next to the running Python first (the ``ripgrep`` wheel installs ``rg``
into the virtualenv's ``bin``), then on ``PATH``.

``data`` (content mode): ``{pattern, path, glob, output_mode, matches: [{file, line, text}],
total_matches, files_matched, shown, truncated}``; ``files_with_matches`` mode has ``files``
instead of ``matches`` (and no ``total_matches``); ``count`` mode has ``counts: [{file,
count}]``.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, ClassVar, Literal

from pydantic import Field

from prompts.tools.grep import DESCRIPTION
from tools.base import ToolContext, ToolResult
from tools.common import BaseTool, ToolFailure, ToolInput, cut_line, plural
from tools.confined import open_beneath
from tools.files import BINARY_SNIFF_BYTES, is_binary, require_file_or_dir
from tools.grep_confirm import confirm_lines, is_workspace_file
from tools.paths import display_path, resolve_path, workspace_root
from tools.patterns import compile_glob
from tools.walk import SKIP_DIRS, parent_ignore_lines, walk_files

OutputMode = Literal["content", "files_with_matches", "count"]
Engine = Literal["auto", "rg", "python"]

RG_FLAGS = (
    "--no-config",
    "--hidden",
    "--no-require-git",
    "--no-ignore-global",
    "--no-ignore-exclude",
    "--no-ignore-dot",
    "--no-ignore-parent",
    "--glob",
    "!.git",
    "--sort",
    "path",
    "--null",
    "--no-heading",
    "--with-filename",
    "--color",
    "never",
    "--no-messages",
)
"""ripgrep with the fallback's semantics: see the module docstring."""

BOM = "\ufeff"


class GrepInput(ToolInput):
    pattern: str = Field(min_length=1, description="Regular expression to search for.")
    path: str = Field(".", description="File or directory to search, relative to the workspace.")
    glob: str | None = Field(None, description='Only search files matching this glob ("*.py").')
    case_insensitive: bool = Field(False, description="Ignore case.")
    output_mode: OutputMode = Field("content", description="content | files_with_matches | count")


def find_rg() -> str | None:
    """The ripgrep executable: the virtualenv's ``bin`` first, then ``PATH``."""
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


class Collector:
    """Keeps the first ``cap`` results and counts all of them."""

    def __init__(self, cap: int, max_line_chars: int) -> None:
        self.cap = cap
        self.max_line_chars = max_line_chars
        self.lines: list[dict[str, Any]] = []
        self.files: list[str] = []
        self.counts: list[dict[str, Any]] = []
        self.total_matches = 0
        self.files_matched = 0
        self._last_file: str | None = None

    def line(self, file: str, number: int, text: str) -> None:
        self.total_matches += 1
        if file != self._last_file:
            self._last_file = file
            self.files_matched += 1
        if len(self.lines) < self.cap:
            text = text.removesuffix("\r")
            if number == 1:
                text = text.removeprefix(BOM)
            self.lines.append(
                {"file": file, "line": number, "text": cut_line(text, self.max_line_chars)}
            )

    def file(self, file: str) -> None:
        self.files_matched += 1
        if len(self.files) < self.cap:
            self.files.append(file)

    def count(self, file: str, count: int) -> None:
        self.files_matched += 1
        self.total_matches += count
        if len(self.counts) < self.cap:
            self.counts.append({"file": file, "count": count})

    @property
    def shown(self) -> int:
        return len(self.lines) + len(self.files) + len(self.counts)


class GrepTool(BaseTool):
    name: ClassVar[str] = "Grep"
    description: ClassVar[str] = DESCRIPTION
    input_model = GrepInput

    def __init__(self, engine: Engine = "auto") -> None:
        self.engine = engine

    def execute(self, args: GrepInput, ctx: ToolContext) -> ToolResult:
        if "\0" in args.pattern:
            raise ToolFailure(
                "invalid_pattern",
                "The pattern contains a NUL character, which no search can take; "
                "remove it (text files do not contain NUL bytes).",
            )
        target = resolve_path(ctx, args.path)
        shown = display_path(ctx, target)
        root = workspace_root(ctx)
        # not a FIFO or a device (they would block), never through a link
        is_file = stat.S_ISREG(require_file_or_dir(root, target, shown).st_mode)
        collector = Collector(ctx.settings.tool_max_results, ctx.settings.read_max_line_chars)
        notes: list[str] = []
        rg = find_rg() if self.engine != "python" else None
        if self.engine == "rg" and rg is None:
            raise ToolFailure("rg_not_found", "ripgrep (rg) is not installed.")
        if is_file and _file_is_binary(root, target):
            notes.append(f"{shown} is a binary file; it was not searched.")
            engine = "none"
        elif rg is not None:
            _search_rg(rg, ctx, target, args, collector)
            dropped = _confirm(root, collector)
            if dropped:
                notes.append(
                    f"{plural(dropped, 'result')} dropped: the file under that name could not "
                    "be confirmed inside the workspace (a link was swapped in during the search)."
                )
            engine = "rg"
        else:
            _search_python(ctx, target, is_file, args, collector)
            engine = "python"
        data = _data(args, shown, collector)
        result = ToolResult(status="success", data=data, text=_text(args, shown, collector, notes))
        result.stats["engine"] = engine
        return result


def _file_is_binary(root: Path, path: Path) -> bool:
    try:
        fd = open_beneath(root, path)
    except OSError:
        return False
    try:
        return is_binary(os.read(fd, BINARY_SNIFF_BYTES))
    except OSError:
        return False
    finally:
        os.close(fd)


def _confirm(root: Path, found: Collector) -> int:
    """Check ripgrep's findings through the confined open (``tools.grep_confirm``); how
    many were dropped."""
    dropped = confirm_lines(root, found.lines, found.max_line_chars)
    files = [rel for rel in found.files if is_workspace_file(root, rel)]
    counts = [item for item in found.counts if is_workspace_file(root, item["file"])]
    dropped += len(found.files) - len(files) + len(found.counts) - len(counts)
    found.files, found.counts = files, counts
    return dropped


def _data(args: GrepInput, shown: str, found: Collector) -> dict[str, Any]:
    data: dict[str, Any] = {
        "pattern": args.pattern,
        "path": shown,
        "glob": args.glob,
        "output_mode": args.output_mode,
    }
    if args.output_mode == "content":
        data["matches"] = found.lines
        data["total_matches"] = found.total_matches
        total = found.total_matches
    elif args.output_mode == "files_with_matches":
        data["files"] = found.files
        total = found.files_matched
    else:
        data["counts"] = found.counts
        data["total_matches"] = found.total_matches
        total = found.files_matched
    data["files_matched"] = found.files_matched
    data["shown"] = found.shown
    data["truncated"] = total > found.shown
    return data


def _text(args: GrepInput, shown: str, found: Collector, notes: list[str]) -> str:
    where = f"{shown}" + (f" (glob {args.glob})" if args.glob else "")
    if not found.files_matched:
        return "\n".join([*notes, f"No matches for {args.pattern!r} in {where}."])
    if args.output_mode == "content":
        body = [f"{m['file']}:{m['line']}: {m['text']}" for m in found.lines]
        summary = (
            f"{plural(found.total_matches, 'matching line')} in "
            f"{plural(found.files_matched, 'file')}"
        )
        rest = found.total_matches - len(found.lines)
    elif args.output_mode == "files_with_matches":
        body = list(found.files)
        summary = f"{plural(found.files_matched, 'file')} match"
        rest = found.files_matched - len(found.files)
    else:
        body = [f"{c['file']}: {c['count']}" for c in found.counts]
        summary = (
            f"{plural(found.total_matches, 'matching line')} in "
            f"{plural(found.files_matched, 'file')}"
        )
        rest = found.files_matched - len(found.counts)
    lines = [*notes, f"{summary} for {args.pattern!r} in {where}:", *body]
    if rest > 0:
        lines.append(f"[... {rest} more not shown; narrow the search with path or glob]")
    return "\n".join(lines)


# --- ripgrep -------------------------------------------------------------------------------


def _search_rg(rg: str, ctx: ToolContext, target: Path, args: GrepInput, out: Collector) -> None:
    root = workspace_root(ctx)
    # ripgrep runs in the workspace on a relative path: its --glob and --ignore-file patterns
    # are matched relative to its working directory. --no-ignore-parent keeps it from reading
    # .gitignore files above the workspace; those between the workspace and the target are
    # handed over, rewritten relative to the workspace, in a temporary --ignore-file.
    relative = target.relative_to(root).as_posix() if target != root else "."
    cmd = [rg, *RG_FLAGS]
    ignore_file: str | None = None
    if target.is_dir() and target != root:
        lines = parent_ignore_lines(root, target)
        if lines:
            fd, ignore_file = tempfile.mkstemp(prefix="ctxscope-", suffix=".ignore")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write("\n".join(lines) + "\n")
            cmd += ["--ignore-file", ignore_file]
    if args.case_insensitive:
        cmd.append("--ignore-case")
    if args.glob:
        cmd += ["--glob", args.glob]
    if args.output_mode == "content":
        cmd += ["--line-number", "--stats"]
    elif args.output_mode == "files_with_matches":
        cmd.append("--files-with-matches")
    else:
        cmd.append("--count")
    cmd += ["--regexp", args.pattern, "--", relative]
    try:
        _run_rg(cmd, root, ctx, args, out)
    finally:
        if ignore_file is not None:
            os.unlink(ignore_file)


def _run_rg(cmd: list[str], root: Path, ctx: ToolContext, args: GrepInput, out: Collector) -> None:
    proc = subprocess.Popen(
        cmd,
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        if args.output_mode == "files_with_matches":
            for raw in _split_nul(proc.stdout):
                # A warning line can precede the next path; the path is the last line.
                out.file(_rel(raw.rsplit(b"\n", 1)[-1]))
                _check_cancel(ctx, proc)
        elif args.output_mode == "count":
            for raw in proc.stdout:
                path_bytes, nul, rest = raw.rstrip(b"\n").partition(b"\0")
                if nul and rest.isdigit():  # else a ripgrep warning line
                    out.count(_rel(path_bytes), int(rest))
                _check_cancel(ctx, proc)
        else:
            _read_content(ctx, proc, proc.stdout, out)
        stderr = proc.stderr.read().decode("utf-8", "replace")
    finally:
        proc.stdout.close()
        proc.stderr.close()
        code = proc.wait()
    if code == 2 and not out.files_matched:
        if "regex parse error" in stderr or "error:" in stderr:
            raise ToolFailure(
                "invalid_pattern", f"Invalid regex {args.pattern!r}: {stderr.strip()}"
            )
        raise ToolFailure("grep_failed", f"ripgrep failed: {stderr.strip() or 'exit code 2'}")


_STATS = re.compile(rb"\n(\d+) matched lines\n(\d+) files contained matches\n")
STATS_TAIL_BYTES = 65536
"""How much of the end of ripgrep's output is kept to find its ``--stats`` block."""


def _read_content(
    ctx: ToolContext, proc: subprocess.Popen[bytes], stream: IO[bytes], out: Collector
) -> None:
    """Parse ``path\\0line:text`` records until the cap, then only drain to the totals.

    Past the cap nothing but the counts matters, and ripgrep's ``--stats`` block at the end
    has them: the rest of a big result is read in large chunks instead of line by line.
    """
    tail = b""
    for raw in stream:
        if raw == b"\n":  # the blank line before the stats block
            tail = raw
            break
        if len(out.lines) >= out.cap:
            tail = raw
            break
        path_bytes, nul, rest = raw.rstrip(b"\n").partition(b"\0")
        number, _, text = rest.partition(b":")
        if not nul or not number.isdigit():
            continue  # a warning, e.g. "stopped searching binary file after match"
        out.line(_rel(path_bytes), int(number), text.decode("utf-8", "replace"))
        _check_cancel(ctx, proc)
    for chunk in iter(lambda: stream.read(STATS_TAIL_BYTES), b""):
        tail = (tail + chunk)[-2 * STATS_TAIL_BYTES :]
        _check_cancel(ctx, proc)
    found = list(_STATS.finditer(tail))
    if found:
        out.total_matches = int(found[-1].group(1))
        out.files_matched = int(found[-1].group(2))


def _split_nul(stream: IO[bytes]) -> Iterator[bytes]:
    """NUL-terminated records of a binary stream (``--files-with-matches --null``); an
    unterminated tail is not a path and is dropped."""
    pending = b""
    for chunk in iter(lambda: stream.read(65536), b""):
        pending += chunk
        *records, pending = pending.split(b"\0")
        yield from records


def _rel(raw: bytes) -> str:
    """A path as ripgrep printed it (relative to the workspace), without a leading ``./``."""
    return os.fsdecode(raw).removeprefix("./")


def _check_cancel(ctx: ToolContext, proc: subprocess.Popen[bytes]) -> None:
    if ctx.cancel.is_set():
        proc.kill()
        raise ToolFailure("interrupted", "The search was interrupted by the user.")


# --- pure Python ---------------------------------------------------------------------------


def _glob_matcher(glob: str | None) -> tuple[re.Pattern[str] | None, bool, bool]:
    """(regex, negated, anchored) of Grep's ``glob`` argument, ripgrep style."""
    if not glob:
        return None, False, False
    negated = glob.startswith("!")
    body = glob[1:] if negated else glob
    anchored = "/" in body.rstrip("/")
    return compile_glob(body.lstrip("/").rstrip("/")), negated, anchored


def _search_python(
    ctx: ToolContext, target: Path, is_file: bool, args: GrepInput, out: Collector
) -> None:
    flags = re.MULTILINE | (re.IGNORECASE if args.case_insensitive else 0)
    try:
        regex = re.compile(args.pattern, flags)
    except re.error as exc:
        raise ToolFailure("invalid_pattern", f"Invalid regex {args.pattern!r}: {exc}.") from None
    root = workspace_root(ctx)
    glob_re, negated, anchored = _glob_matcher(args.glob)

    def override(rel: str, name: str, is_dir: bool) -> bool | None:
        """ripgrep's ``--glob`` precedence: a match decides, before ``.gitignore``; with a
        positive glob, a file that does not match is dropped."""
        if glob_re is None:
            return None
        if glob_re.fullmatch(rel if anchored else name):
            return not negated
        if not negated and not is_dir:
            return False
        return None

    files: Iterator[tuple[str, Callable[[], int]]]
    if is_file:
        files = iter([(display_path(ctx, target), lambda: open_beneath(root, target))])
    else:
        files = ((rel, file.open) for rel, file in walk_files(root, target, override=override))
    for rel, opener in files:
        if ctx.cancel.is_set():
            raise ToolFailure("interrupted", "The search was interrupted by the user.")
        _search_file(rel, opener, regex, args.output_mode, out)


def _read_all(opener: Callable[[], int]) -> bytes | None:
    """The bytes of a regular file opened by ``opener`` (confined), or None."""
    try:
        fd = opener()
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _search_file(
    rel: str, opener: Callable[[], int], regex: re.Pattern[str], mode: OutputMode, out: Collector
) -> None:
    data = _read_all(opener)
    if data is None:
        return
    if b"\0" in data:
        return
    text = data.decode("utf-8", "replace").removeprefix(BOM)
    found = regex.search(text)
    if found is None:
        return
    if mode == "files_with_matches":
        out.file(rel)
        return
    # Jump from match to match over the whole text instead of testing every line; each hit's
    # line is checked on its own, as ripgrep matches line by line.
    count = 0
    number, counted_to = 1, 0
    end = len(text)
    while found is not None:
        start = text.rfind("\n", 0, found.start()) + 1
        stop = text.find("\n", found.start())
        if stop < 0:
            stop = end
        if start >= end:
            break  # a match on the empty "line" after the final newline
        line = text[start:stop]
        if regex.search(line):
            number += text.count("\n", counted_to, start)
            counted_to = start
            count += 1
            if mode == "content":
                out.line(rel, number, line)
        found = regex.search(text, stop + 1) if stop < end else None
    if mode == "count" and count:
        out.count(rel, count)


__all__ = ["GrepInput", "GrepTool", "SKIP_DIRS", "find_rg"]
