"""The folder a session's agent may work in (issue 29: recordings are untrusted input).

A session recorded by another agent (imported, watched) names the folder that agent worked in,
and that name comes from a file anyone could have written: ``/``, ``/etc``, ``~``,
``../../etc``. It is shown, never used: such a session has no workspace until the user gives
one (``--workspace``, or the workbench's confirmation naming the folder), and until then no
tool runs and no workspace file (``CODE_LAW.md``) is read. Whatever its origin, a workspace is
never the root folder, the home folder itself or a relative path
(:func:`engine.validation.workspace_refusal`).
"""

from __future__ import annotations

from pathlib import Path

from engine.models import Session
from engine.terminal_text import printable
from engine.validation import workspace_refusal

NO_FOLDER = Path("/dev/null")
"""Where a session without a workspace points what needs a path (the tools, a replay): not a
folder, so nothing is read or run there."""


def session_workspace(session: Session) -> Path | None:
    """The folder the session's agent works in, or None while it has none it may use."""
    if not session.workspace_given or workspace_refusal(session.workspace):
        return None
    return Path(session.workspace)


def why_no_workspace(session: Session) -> str:
    """What a tool call (or the user) is told when :func:`session_workspace` is None: which
    folder the session names, why it is not used, and how to give one."""
    named = printable(session.workspace, one_line=True)
    give = f"`ctxscope ask INPUT --session {session.id} --workspace FOLDER`"
    if not session.workspace_given:
        where = f"in {named}" if session.workspace else "without naming a folder"
        return (
            f"session {session.id} was recorded by another agent {where}; a recording does "
            f"not choose where tools run: give the session a workspace with {give}, or "
            "confirm one in the workbench"
        )
    refused = workspace_refusal(session.workspace)
    return f"the session's workspace {named} cannot be used ({refused}); give another with {give}"
