"""Settings the agent cannot write: a workspace's ``ctxscope.toml`` may only tighten safety.

The settings file ctxscope finds where it starts (``./ctxscope.toml``, or ``--config FILE``)
is usually in the workspace, which a Bash command or the Write tool can change; the next
``ctxscope`` or ``ask`` there would then run under what the agent chose. So a value there of
a setting in :data:`SAFETY_RULES` — the sandbox, the network and socket switches, the per-call
limits, the secrets policy and the permission policies — is taken only when it is at least as
tight as what the user's own sources give (the user's settings file
``$XDG_CONFIG_HOME/ctxscope/ctxscope.toml``, ``CTXSCOPE_*`` variables, command-line options,
the defaults). A weaker one stops start-up with one line naming the setting and where to put
it instead. Inside the sandbox the file is read-only anyway (``tools.sandbox_init``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

USER_TOML = Path("ctxscope") / "ctxscope.toml"

_POLICY_RANK = {"deny": 0, "ask": 1, "allow": 2}


def user_settings_file() -> Path:
    """The user's own settings file, outside any workspace: ``$XDG_CONFIG_HOME/ctxscope/
    ctxscope.toml`` (an unset or relative ``XDG_CONFIG_HOME`` is ``~/.config``)."""
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / USER_TOML


def _limit(value: int, trusted: int) -> bool:
    """A limit (0: none) is as tight when the trusted one is off or it is set and no larger."""
    return trusted == 0 or 0 < value <= trusted


def _switch_off(value: bool, trusted: bool) -> bool:
    """A switch that opens something (network, sockets): as tight unless it turns it on."""
    return not value or trusted


def _policy(value: str, trusted: str) -> bool:
    return _POLICY_RANK[value] <= _POLICY_RANK[trusted]


def _covers(value: list[str], trusted: list[str]) -> bool:
    """A list of withheld names is as tight when it keeps every trusted pattern."""
    return {p.lower() for p in trusted} <= {p.lower() for p in value}


def _within(value: list[str], trusted: list[str]) -> bool:
    """A list of names let through is as tight when it adds none."""
    return {p.lower() for p in value} <= {p.lower() for p in trusted}


SAFETY_RULES: dict[str, Callable[[Any, Any], bool]] = {
    "bash_sandbox": lambda value, trusted: value != "none" or trusted == "none",
    "bash_policy": _policy,
    "edit_policy": _policy,
    "bash_network": _switch_off,
    "bash_unix_sockets": _switch_off,
    "bash_max_processes": _limit,
    "bash_max_memory_mb": _limit,
    "bash_max_address_space_mb": _limit,
    "bash_max_file_mb": _limit,
    "bash_max_cpu_seconds": _limit,
    "bash_tmp_mb": _limit,
    "secret_env_patterns": _covers,
    "secret_env_allow": _within,
    "secret_env_url_passwords": lambda value, trusted: value or not trusted,
}
"""Each safety setting and whether a workspace file's value is at least as tight as the
trusted one: ``rule(file value, trusted value)``."""

_FLAGS = {"bash_policy": " or --allow-bash", "edit_policy": " or --allow-edits"}


def weakening(name: str, value: Any, trusted: Any, file: Path) -> str | None:
    """The refusal of ``file``'s ``name = value`` when it is weaker than ``trusted``; None when
    it only tightens."""
    if SAFETY_RULES[name](value, trusted):
        return None
    return (
        f"{file}: {name} = {value!r} is refused: it weakens {trusted!r}, and a settings file "
        "in the workspace may only tighten safety settings (the agent can write there). Put "
        f"it in your own settings file {user_settings_file()}, or set "
        f"CTXSCOPE_{name.upper()}{_FLAGS.get(name, '')}."
    )
