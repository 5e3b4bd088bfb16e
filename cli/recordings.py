"""Sessions in and out: ``import`` (other agents' recordings) and ``export``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.arguments import (
    SESSION_ID,
    STORED,
    CliError,
    Parents,
    Subcommands,
    checked,
    count,
    output_file,
    workspace,
)

if TYPE_CHECKING:
    from engine.settings.config import Settings


EXPORT_FORMATS = ("anthropic-jsonl", "markdown", "html")
"""``export --format``'s choices: :data:`engine.recordings.export.FORMATS`, written out so that
building the parser does not import the exporter (a test checks they agree)."""


def _contents(reports: list[Any]) -> str:
    """``34 rounds, 456 messages, 214 observations, 208 usage records, 1 compaction``: what
    the import stored of ``reports``, summed."""
    from engine.terminal_text import plural

    return ", ".join(
        plural(sum(getattr(r, field) for r in reports), noun)
        for field, noun in (
            ("rounds", "round"),
            ("messages", "message"),
            ("observations", "observation"),
            ("usage_records", "usage record"),
            ("compactions", "compaction"),
        )
    )


def _summary_line(path: Path, reports: list[Any]) -> str:
    """Several sessions from one folder or file (an aider history holds hundreds): one line of
    sums (issue 39: 702 sessions printed 702 lines); ``--verbose`` gives one line each."""
    from engine.terminal_text import printable

    formats = ", ".join(sorted({r.fmt for r in reports}))
    ids = [r.session.id for r in reports]
    warned = sum(len(r.warnings) + len(r.not_read_sentences) for r in reports)
    subagents = sum(len(r.children) for r in reports)
    text = (
        f"imported {printable(str(path))} ({formats}) as {len(reports)} sessions "
        f"({min(ids)}–{max(ids)}): {_contents(reports)}; tokens "
        f"{sum(r.tokens_raw for r in reports):,} recorded → "
        f"{sum(r.tokens_stored for r in reports):,} in history"
    )
    if subagents:
        text += f"; {subagents} subagent sessions"
    if warned:
        text += f"; {warned} warnings and notes"
    return text + " (--verbose: one line per session)"


def add_import_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "import",
        parents=parents.with_json,
        help="store recorded sessions: Claude Code, Codex CLI, Gemini CLI, OpenHands, aider, "
        "Anthropic-messages JSONL, mini-swe-agent / SWE-agent trajectories, or a directory "
        "of them",
    )
    p.add_argument(
        "file",
        type=Path,
        metavar="FILE|DIR",
        nargs="?",
        help="without it: every agent's default folders, incremental (docs/cli.md)",
    )
    p.add_argument(
        "--workspace",
        type=checked(workspace),
        default=argparse.SUPPRESS,
        help="the folder its tools work in (default: the folder the recording names)",
    )
    p.add_argument(
        "--hook",
        action="store_true",
        help="read a Claude Code hook's JSON on stdin (SessionEnd) and import the session it "
        "names (docs/importing.md#a-history-that-stays)",
    )
    p.add_argument(
        "--folder",
        type=Path,
        action="append",
        metavar="DIR",
        help="without FILE: read this folder too (aider histories; repeatable)",
    )
    p.add_argument(
        "--jobs", type=checked(count), default=None, help="processes parsing (default: every core)"
    )
    p.add_argument(
        "--progress", action="store_true", help="show progress on stderr even off a terminal"
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="a folder or a file of several sessions: one line per session (default: one line)",
    )


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    # The whole history (every agent's folders, incremental): cli/history.py.
    from cli.common import emit, open_store
    from cli.history import cmd_import_history, cmd_import_hook, history_options_alone
    from engine.recordings.importing import import_parsed, parse_path
    from engine.settings.config import workspace_folder
    from engine.terminal_text import plural, printable

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
            f"imported {r.path} ({r.fmt}) as session {r.session.id}: {_contents([r])}; "
            f"tokens {r.tokens_raw:,} recorded → "
            f"{r.tokens_stored:,} in history"
        )
        if r.missing_results:
            text += (
                f"; {plural(r.missing_results, 'tool call')} had no recorded result, each "
                "paired with an error result"
            )
        if r.skipped:
            text += "; skipped " + ", ".join(f"{n} {k}" for k, n in sorted(r.skipped.items()))
        lines.append(text)
        lines.extend(f"  not read: {printable(s, one_line=True)}" for s in r.not_read_sentences)
        lines.extend(f"  warning: {w}" for w in r.warnings)
        lines.extend(
            f"  subagent {c.session.agent_id or '(sidechain)'} as session {c.session.id}: "
            f"{plural(c.rounds, 'round')}, {plural(c.messages, 'message')}, "
            f"{plural(c.observations, 'observation')}"
            for c in r.children
        )
    left_out = []
    if parsed.skipped_files:
        left_out.append(
            "files skipped: "
            + ", ".join(f"{n} {k}" for k, n in sorted(parsed.skipped_files.items()))
        )
    left_out.extend(f"refused {printable(str(f))}: {printable(why)}" for f, why in parsed.refused)
    left_out.extend(f"note: {printable(note, one_line=True)}" for note in parsed.notes)
    if args.json:
        for line in left_out:  # the JSON is the sessions; what was left out goes beside it
            print(f"ctxscope: {line}", file=sys.stderr)
        left_out = []
    emit(args, data, "\n".join(lines + left_out))
    return 0


def add_export_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "export",
        parents=parents.plain,
        help="write a session as Anthropic-messages JSON lines (re-importable), Markdown, or an "
        "HTML page (one file, no script: the conversation, compactions and what each lost, "
        "the context over time, the cost)",
    )
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument("--format", choices=EXPORT_FORMATS, default="anthropic-jsonl")
    p.add_argument(
        "--include-archived",
        action="store_true",
        help="also write the messages compactions archived (before their summaries)",
    )
    p.add_argument(
        "-o", "--output", type=checked(output_file), metavar="FILE", help="write here, not stdout"
    )


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from cli.common import get_session, open_store
    from engine.recordings.export import export_jsonl, export_markdown
    from engine.terminal_text import printable

    store = open_store(args, settings, read_only=True)
    get_session(store, args.session)
    if args.format == "html":
        from engine.report.session_page import session_html

        text = session_html(store, args.session, settings)
    else:
        from engine.recordings.figures import session_figures

        write = export_markdown if args.format == "markdown" else export_jsonl
        # a recording that says no time: its stored times are the import's, not written
        dated = session_figures(store, store.get_session(args.session), settings).times_recorded
        text = write(store, args.session, include_archived=args.include_archived, dated=dated)
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
