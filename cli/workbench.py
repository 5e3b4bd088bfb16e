"""The ``ctxscope`` console script: the headless command line, or the workbench without a command.

The workbench (:class:`tui.app.CtxscopeApp`) is built here from the parsed arguments; it imports
nothing of the command line. Textual is imported only when the workbench opens, so headless
commands do not pay for it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Literal

from cli.arguments import CliError, UsageError

if TYPE_CHECKING:  # the engine is imported once the arguments are parsed (``--help`` needs none)
    from pathlib import Path

    from engine.settings.config import Settings
    from tui.gc_pause import GcPause

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
        raise CliError(
            f"--resume takes a session id (a number, or an agent's own session id), not {value!r}"
        ) from None


def run_tui(args: argparse.Namespace, settings: Settings) -> int:
    """Open the workbench for ``ctxscope [--workspace W] [--resume [ID]] [--db F]``."""
    from engine.settings.config import workspace_folder
    from engine.validation import workspace_refusal

    workspace = workspace_folder(getattr(args, "workspace", None))
    if not workspace.is_dir():
        raise CliError(f"workspace {workspace} is not a directory")
    refused = workspace_refusal(workspace)
    if refused:
        raise UsageError(
            f"{workspace} cannot be a workspace ({refused}): start ctxscope in a project "
            "folder or give --workspace FOLDER"
        )
    from tui.gc_pause import GcPause

    pause = GcPause()  # from before the import: collections over its heap cost ~0.09 s
    pause.start()
    try:
        return _open(args, settings, workspace, pause)
    finally:
        pause.end()  # the app ended it at its first frame; not if it never got there


def _open(args: argparse.Namespace, settings: Settings, workspace: Path, pause: GcPause) -> int:
    """The workbench imported, built and run, the collector paused by ``pause`` until its
    first session's frame."""
    from cli.common import db_path
    from engine.store import StoreError
    from tui.app import CtxscopeApp

    wanted = getattr(args, "resume", None)
    if isinstance(wanted, str) and wanted != "latest" and not wanted.isdigit():
        from cli.common import agent_session

        # An agent's own session id (a UUID, checked by the parser): its proxied session.
        args.session = wanted
        wanted = agent_session(args, settings)
    resume = parse_resume(None if wanted is None else str(wanted))
    app = CtxscopeApp(
        db_path=db_path(args, settings),
        workspace=workspace,
        settings=settings,
        resume=resume,
        workspace_explicit=bool(getattr(args, "workspace", None)),
        gc_pause=pause,
    )
    if isinstance(resume, int):
        try:
            app.store.get_session(resume)  # an unknown id fails here, as one readable line
        except StoreError:
            app.store.close()
            raise
    app.run()
    return app.return_code or 0


CREDENTIAL_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
"""Taken out of ctxscope's own environment at start (issue 21): a command the agent runs
could read ``/proc/<ctxscope pid>/environ`` otherwise."""


def hand_over_credentials() -> None:
    """Re-execute this process without the credentials in its environment, passing them
    through an inherited pipe instead (:func:`tools.secrets.receive_handed_over` reads it once
    and closes it). Returns only when there is nothing to hand over."""
    from tools.secrets import HANDOVER_FD_VARIABLE

    found = {name: os.environ[name] for name in CREDENTIAL_VARIABLES if os.environ.get(name)}
    if not found or HANDOVER_FD_VARIABLE in os.environ:
        return
    payload = "".join(f"{name}={value}\n" for name, value in found.items()).encode()
    read_end, write_end = os.pipe()
    if len(payload) > 65536:  # more than a pipe holds before its reader starts: keep as is
        os.close(read_end)
        os.close(write_end)
        return
    os.write(write_end, payload)
    os.close(write_end)
    os.set_inheritable(read_end, True)
    env = {k: v for k, v in os.environ.items() if k not in CREDENTIAL_VARIABLES}
    env[HANDOVER_FD_VARIABLE] = str(read_end)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, env)


def main() -> int:
    if sys.argv[1:2] == ["statusline"]:
        # A status line runs after every message of the agent's: it imports nothing else
        # (the standard library only, ``cli/statusline.py``) and needs no credentials.
        from cli.statusline import main as statusline

        return statusline(sys.argv[2:])
    from cli.main import main as cli_main
    from tools.secrets import receive_handed_over

    hand_over_credentials()
    receive_handed_over()
    return cli_main(sys.argv[1:], run_tui=run_tui)


if __name__ == "__main__":
    sys.exit(main())
