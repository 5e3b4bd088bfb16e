"""Your whole history: ``ctxscope import`` without a path (every agent's default folders,
incremental, parallel, with progress)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TextIO

from cli.common import (
    EXIT_INTERRUPTED,
    CliError,
    UsageError,
    emit,
    open_store,
    sessions_counted,
)
from engine.recordings import agents
from engine.recordings.base import ImportError_
from engine.recordings.history import (
    Folder,
    HistoryResult,
    Progress,
    default_folders,
    import_history,
    import_one_file,
    unique_folders,
)
from engine.recordings.retention import HookError, hook_payload
from engine.settings.config import Settings, workspace_folder
from engine.terminal_text import printable

MB = 1_000_000


class ProgressLine:
    """One line on a terminal, rewritten in place at most ten times a second."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.shown = 0.0
        self.drawn = False

    def __call__(self, p: Progress) -> None:
        now = time.monotonic()
        if now - self.shown < 0.1 and p.files_done < p.files_total:
            return
        self.shown = now
        left = p.left
        text = (
            f"{p.files_done}/{p.files_total} files · {p.bytes_done / MB:.1f}/"
            f"{p.bytes_total / MB:.1f} MB · {p.rate / MB:.1f} MB/s"
            + (f" · {left:.0f} s left" if left is not None else "")
        )
        self.out.write("\r\x1b[2K" + text)
        self.out.flush()
        self.drawn = True

    def end(self) -> None:
        if self.drawn:
            self.out.write("\n")
            self.out.flush()


def history_options_alone(args: argparse.Namespace) -> None:
    """``--folder`` and ``--progress`` are for ``import`` without a path: refused with one."""
    if getattr(args, "folder", None) or getattr(args, "progress", False):
        raise UsageError(
            "--folder and --progress are for `ctxscope import` without a path (your whole "
            f"history); to import {args.file} alone, leave them out"
        )


def cmd_import_history(args: argparse.Namespace, settings: Settings) -> int:
    given = [Folder(p, "") for p in getattr(args, "folder", None) or []]
    missing = [f.path for f in given if not f.path.is_dir()]
    if missing:
        raise UsageError(f"no such folder: {missing[0]} (--folder names a folder to read)")
    folders = unique_folders(default_folders(settings=settings) + given)
    if not folders:
        raise UsageError(
            "no session folders here: none of ~/.claude/projects, $CLAUDE_CONFIG_DIR/projects, "
            "~/.codex/sessions ($CODEX_HOME), ~/.gemini/tmp/*/chats exists; name a folder "
            "with --folder DIR, or import a file: ctxscope import FILE"
        )
    workspace = str(workspace_folder(getattr(args, "workspace", None)))
    store = open_store(args, settings)
    show = not args.json and (args.progress or sys.stderr.isatty())
    line = ProgressLine(sys.stderr) if show else None
    try:
        result = import_history(store, folders, workspace, settings, args.jobs, line)
    finally:
        if line is not None:
            line.end()
    result.warnings += agents.retention_warnings({f.agent for f in folders})
    emit(args, result.as_json(), _summary(result))
    return EXIT_INTERRUPTED if result.interrupted else 0


def cmd_import_hook(args: argparse.Namespace, settings: Settings) -> int:
    """``import --hook``: the session a Claude Code hook's JSON (stdin) names, imported as
    ``import`` without a path would import its file (into the same session next time)."""
    if args.file is not None or getattr(args, "folder", None):
        raise UsageError("--hook reads the file to import from the hook's JSON on stdin: "
                         "leave out FILE and --folder")  # fmt: skip
    try:
        hook = hook_payload(sys.stdin.read())
    except HookError as exc:
        raise UsageError(str(exc)) from None
    workspace = str(workspace_folder(getattr(args, "workspace", None) or hook.cwd or None))
    store = open_store(args, settings)
    try:
        reports, state = import_one_file(store, hook.transcript, workspace, settings)
    except ImportError_ as exc:
        raise CliError(f"import --hook: {exc}") from None
    data = {
        "hook_event_name": hook.event,
        "reason": hook.reason,
        "session_id": hook.session_id,
        "path": str(hook.transcript),
        "file": state,
        "sessions": [r.as_json() for r in reports],
    }
    if reports:
        ids = ", ".join(str(r.session.id) for r in reports)
        text = f"imported {printable(str(hook.transcript))} ({state}) as session {ids}"
    else:
        text = f"{printable(str(hook.transcript))} is unchanged since it was imported"
    emit(args, data, text)
    return 0


def _summary(r: HistoryResult) -> str:
    states = r.states
    subagents = sum(len(x.children) for x in r.reports)
    lines = [f"read {', '.join(printable(str(f.path)) for f in r.folders)}"]
    lines.append(
        f"imported {sessions_counted(len(r.reports) + subagents, subagents)} from "
        f"{states['new'] + states['grown'] + states['rewritten']} files: {states['new']} new, "
        f"{states['grown']} grown, {states['rewritten']} rewritten; {states['unchanged']} "
        f"unchanged (skipped); {len(r.refused)} refused; "
        f"{r.bytes_read / MB:.1f} MB in {r.seconds:.1f} s"
    )
    if r.interrupted:
        lines.append("interrupted: the files above are stored whole; run it again for the rest")
    return "\n".join(lines + _end_lines(r))


def _end_lines(r: HistoryResult) -> list[str]:
    lines = []
    if r.skipped_files:
        lines.append(
            "files skipped: " + ", ".join(f"{n} {k}" for k, n in sorted(r.skipped_files.items()))
        )
    if r.gone:
        kept = sum(len(ids) for _, ids in r.gone)
        lines.append(
            f"{len(r.gone)} files imported before are gone from disk (their agent deleted "
            f"them): their {kept} sessions stay stored, marked source_gone_at"
        )
    if r.back:
        lines.append(f"{len(r.back)} sessions' files are there again: their mark is taken off")
    if r.refused_before:
        lines.append(f"{r.refused_before} files refused before and unchanged: not read again")
    lines.extend(f"refused {printable(p)}: {printable(why)}" for p, why in r.refused)
    lines.extend(f"warning: {printable(w)}" for w in r.warnings)
    return lines
