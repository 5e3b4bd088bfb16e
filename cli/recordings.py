"""Sessions in and out: ``import`` (other agents' recordings) and ``export``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.arguments import STORED
from cli.common import (
    CliError,
    emit,
    get_session,
    open_store,
)
from engine.recordings.export import export_jsonl, export_markdown
from engine.recordings.importing import import_parsed, parse_path
from engine.settings.config import Settings, workspace_folder
from engine.terminal_text import printable


def _summary_line(path: Path, reports: list[Any]) -> str:
    """Several sessions from one folder or file (an aider history holds hundreds): one line of
    sums (issue 39: 702 sessions printed 702 lines); ``--verbose`` gives one line each."""
    formats = ", ".join(sorted({r.fmt for r in reports}))
    ids = [r.session.id for r in reports]
    warned = sum(len(r.warnings) + len(r.not_read_sentences) for r in reports)
    subagents = sum(len(r.children) for r in reports)
    text = (
        f"imported {printable(str(path))} ({formats}) as {len(reports)} sessions "
        f"({min(ids)}–{max(ids)}): {sum(r.rounds for r in reports)} rounds, "
        f"{sum(r.messages for r in reports)} messages, "
        f"{sum(r.observations for r in reports)} observations, "
        f"{sum(r.usage_records for r in reports)} usage records, "
        f"{sum(r.compactions for r in reports)} compactions; tokens "
        f"{sum(r.tokens_raw for r in reports)} recorded → "
        f"{sum(r.tokens_stored for r in reports)} in history"
    )
    if subagents:
        text += f"; {subagents} subagent sessions"
    if warned:
        text += f"; {warned} warnings and notes"
    return text + " (--verbose: one line per session)"


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    # The whole history (every agent's folders, incremental): cli/history.py.
    from cli.history import cmd_import_history, cmd_import_hook, history_options_alone

    if getattr(args, "hook", False):
        return cmd_import_hook(args, settings)
    if args.file is None:
        return cmd_import_history(args, settings)
    history_options_alone(args)
    # Everything is parsed and checked before the database is opened: a refusal never
    # creates or touches it.
    parsed = parse_path(args.file)
    explicit = getattr(args, "workspace", None)
    workspace = str(workspace_folder(explicit))
    store = open_store(args, settings)
    # Without --workspace a session keeps the folder its agent worked in (its recorded cwd).
    reports = import_parsed(store, parsed, workspace, settings, recorded_cwd=not explicit)
    ids = [str(r.session.id) for r in reports]
    STORED.append(f"imported as session{'s' * (len(ids) > 1)} {', '.join(ids)}")
    # One session: its object; several (an aider history, a folder): a list of them, one
    # object each. What a folder left out is said on stderr, in the text's own lines.
    from engine.recordings.figures import session_figures

    data: Any = [
        r.as_json() | {"figures": session_figures(store, r.session, settings).to_json()}
        for r in reports
    ]
    if len(reports) == 1 and not args.file.is_dir():
        data = data[0]
    lines = []
    if len(reports) > 1 and not getattr(args, "verbose", False):
        lines = [_summary_line(args.file, reports)]
    for r in reports if not lines else []:
        text = (
            f"imported {r.path} ({r.fmt}) as session {r.session.id}: {r.rounds} rounds, "
            f"{r.messages} messages, {r.observations} observations, {r.usage_records} usage "
            f"records, {r.compactions} compactions; tokens {r.tokens_raw} recorded → "
            f"{r.tokens_stored} in history"
        )
        if r.missing_results:
            text += (
                f"; {r.missing_results} tool calls had no recorded result and were "
                "paired with an error result"
            )
        if r.skipped:
            text += "; skipped " + ", ".join(f"{n} {k}" for k, n in sorted(r.skipped.items()))
        lines.append(text)
        lines.extend(f"  not read: {printable(s, one_line=True)}" for s in r.not_read_sentences)
        lines.extend(f"  warning: {w}" for w in r.warnings)
        lines.extend(
            f"  subagent {c.session.agent_id or '(sidechain)'} as session {c.session.id}: "
            f"{c.rounds} rounds, {c.messages} messages, {c.observations} observations"
            for c in r.children
        )
    left_out = []
    if parsed.skipped_files:
        left_out.append(
            "files skipped: "
            + ", ".join(f"{n} {k}" for k, n in sorted(parsed.skipped_files.items()))
        )
    left_out.extend(f"refused {printable(str(f))}: {printable(why)}" for f, why in parsed.refused)
    left_out.extend(f"skipped {printable(note, one_line=True)}" for note in parsed.notes)
    if args.json:
        for line in left_out:  # the JSON is the sessions; what was left out goes beside it
            print(f"ctxscope: {line}", file=sys.stderr)
        left_out = []
    emit(args, data, "\n".join(lines + left_out))
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(args, settings, read_only=True)
    get_session(store, args.session)
    if args.format == "html":
        from engine.report.session_page import session_html

        text = session_html(store, args.session, settings)
    else:
        write = export_markdown if args.format == "markdown" else export_jsonl
        text = write(store, args.session, include_archived=args.include_archived)
    if args.output is None:
        sys.stdout.write(text)
    else:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as exc:  # /proc/version, a full disk, a read-only or missing folder
            raise CliError(
                f"cannot write {printable(str(args.output))}: {exc.strerror or exc}"
            ) from None
    return 0
