"""``ctxscope check``: the database file's integrity, on request.

Opening a database no longer reads every page (issue 44: ``PRAGMA quick_check`` took 0.65 s of
every command on a 490 MB file); it checks only after a crash and before a migration
(:mod:`engine.store.schema`). This command checks whenever the user asks, and changes nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from cli.arguments import (
    EXIT_ERROR,
    Parents,
    Subcommands,
    UsageError,
)

if TYPE_CHECKING:
    from engine.settings.config import Settings

SHOWN_PROBLEMS = 20
"""At most this many of SQLite's lines are printed (``--json`` has them all, up to 100)."""


def add_check_parser(sub: Subcommands, parents: Parents) -> None:
    sub.add_parser(
        "check",
        parents=parents.with_json,
        help="check the database file's integrity (every page read; nothing written)",
    )


def cmd_check(args: argparse.Namespace, settings: Settings) -> int:
    from cli.common import db_path, emit
    from engine.store import schema

    target = db_path(args, settings)
    if not isinstance(target, Path):
        from engine.store.postgres import masked

        emit(
            args,
            {"database": masked(target), "ok": None, "problems": []},
            f"{masked(target)}: a PostgreSQL server keeps its own data's integrity "
            "(pg_amcheck checks it); nothing to check here",
        )
        return 0
    if not target.exists():
        raise UsageError(f"no database at {target} (--db or CTXSCOPE_DB names another file)")
    version = schema.inspect(target, check_integrity=False)  # ours, and not from a newer one
    problems = schema.check(target)
    data = {"database": str(target), "schema": version, "ok": not problems, "problems": problems}
    if not problems:
        text = f"{target}: ok (every page read: no damage found)"
    else:
        text = "\n".join(
            [
                f"{target} is damaged: {len(problems)} problem(s) (SQLite's quick_check):",
                *(f"  {line}" for line in problems[:SHOWN_PROBLEMS]),
                *(["  …"] if len(problems) > SHOWN_PROBLEMS else []),
                "Copy what can still be read with `sqlite3 FILE .recover`, or restore a backup.",
            ]
        )
    emit(args, data, text)
    return 0 if not problems else EXIT_ERROR
