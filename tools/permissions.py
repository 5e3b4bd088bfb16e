"""The permission gate of Bash and the mutating tools (policy ``ask`` / ``allow`` / ``deny``).

The check lives in the tool layer, so every caller (TUI, CLI, tests) gets the same rules:
``allow`` runs, ``deny`` refuses, ``ask`` runs if the user already said "always" for this kind
in the session, else asks through ``ctx.ask``; without anyone to ask, it refuses.
"""

from __future__ import annotations

from typing import Literal

from tools.base import PermissionRequest, ToolContext
from tools.common import ToolFailure

Kind = Literal["bash", "edit"]

_HEADLESS_HINT = {
    "bash": "run with --allow-bash (or set CTXSCOPE_BASH_POLICY=allow) to let Bash run",
    "edit": "set CTXSCOPE_EDIT_POLICY=allow to let the file tools write",
}
_POLICY_SETTING = {"bash": "bash_policy", "edit": "edit_policy"}


def require_permission(
    ctx: ToolContext, kind: Kind, tool_name: str, summary: str, detail: str
) -> None:
    """Return when the call may run; raise ``permission_denied`` otherwise."""
    policy = ctx.settings.bash_policy if kind == "bash" else ctx.settings.edit_policy
    setting = _POLICY_SETTING[kind]
    if policy == "allow":
        return
    if policy == "deny":
        raise ToolFailure(
            "permission_denied",
            f"{tool_name} is disabled by the {setting} setting (deny). "
            "Do not retry; tell the user what you wanted to do instead.",
        )
    if kind in ctx.always_allowed:
        return
    if ctx.ask is None:
        raise ToolFailure(
            "permission_denied",
            f"{tool_name} needs the user's permission ({setting} is 'ask') but there is no one "
            f"to ask in this session; {_HEADLESS_HINT[kind]}.",
        )
    answer = ctx.ask(
        PermissionRequest(tool_name=tool_name, kind=kind, summary=summary, detail=detail)
    )
    if answer == "always":
        ctx.always_allowed.add(kind)
        return
    if answer == "allow":
        return
    raise ToolFailure(
        "permission_denied",
        f"The user denied this {tool_name} call. Do not retry it as is; ask the user how to "
        "proceed or choose another approach.",
    )
