"""The ``ctxscope`` console script: the headless command line, or the workbench without a command.

The workbench (:class:`tui.app.CtxscopeApp`) is built here from the parsed arguments; it imports
nothing of the command line. Textual is imported only when the workbench opens, so headless
commands do not pay for it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Literal

from cli.common import CliError, db_path
from cli.main import main as cli_main
from engine.config import Settings, workspace_folder
from engine.store import StoreError

Resume = int | Literal["latest"] | None
"""What ``--resume`` asks for: nothing, ``"latest"`` or a session id."""


def parse_resume(value: str | None) -> Resume:
    """``--resume`` → None, ``"latest"`` or a session id."""
    if value is None:
        return None
    if value == "latest":
        return "latest"
    try:
        return int(value)
    except ValueError:
        raise CliError(f"--resume takes a session id (a number), not {value!r}") from None


def run_tui(args: argparse.Namespace, settings: Settings) -> int:
    """Open the workbench for ``ctxscope [--workspace W] [--resume [ID]] [--db F]``."""
    workspace = workspace_folder(getattr(args, "workspace", None))
    if not workspace.is_dir():
        raise CliError(f"workspace {workspace} is not a directory")
    from tui.app import CtxscopeApp

    resume = parse_resume(getattr(args, "resume", None))
    app = CtxscopeApp(
        db_path=db_path(args, settings),
        workspace=workspace,
        settings=settings,
        resume=resume,
        workspace_explicit=bool(getattr(args, "workspace", None)),
    )
    if isinstance(resume, int):
        try:
            app.store.get_session(resume)  # an unknown id fails here, as one readable line
        except StoreError:
            app.store.close()
            raise
    app.run()
    return app.return_code or 0


def main() -> int:
    return cli_main(sys.argv[1:], run_tui=run_tui)


if __name__ == "__main__":
    sys.exit(main())
