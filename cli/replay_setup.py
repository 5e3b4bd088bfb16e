"""What ``replay`` and ``strategy --set`` share: the strategies' numbers given on the command
line (``--set STRATEGY.KEY=VALUE``), the strategies a replay asks for, and the settings and
folder a session replays under. Its own module so that ``replay`` of one session
(:mod:`cli.strategies`) and of a selection (:mod:`cli.replay_selection`) need not import each
other."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.common import CliError, UsageError
from engine.compaction.strategies import STRATEGIES
from engine.models import Session
from engine.session.workspace import NO_FOLDER, session_workspace
from engine.settings.config import Settings
from engine.settings.params import (
    ParamsError,
    changed_params,
    session_settings,
    strategy_params,
    with_params,
)

if TYPE_CHECKING:
    from engine.recordings.own_agent import OwnAgentView
    from engine.store import Store


def _value(text: str) -> Any:
    if text.lower() in ("none", "null"):
        return None  # unset: the number follows the profile or the window again
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_overrides(overrides: list[str], strategy: str | None = None) -> dict[str, Any]:
    """``STRATEGY.KEY=VALUE`` (or ``KEY=VALUE`` for ``strategy``) as ``{strategy: {key: v}}``."""
    out: dict[str, Any] = {}
    for item in overrides:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--set {item!r}: expected KEY=VALUE")
        owner, dot, key = name.rpartition(".")
        owner = owner if dot else (strategy or "")
        if owner not in STRATEGIES:
            raise UsageError(f"--set {item!r}: name the strategy (e.g. mock-user.trigger_tokens)")
        out.setdefault(owner, {})[key.strip()] = _value(value.strip())
    return out


def with_numbers(settings: Settings, numbers: dict[str, Any]) -> Settings:
    """``settings`` with strategies' numbers replaced (validated as a config file's are)."""
    for name, values in numbers.items():
        try:
            params = changed_params(strategy_params(settings, name), name, values)
        except ParamsError as exc:
            raise UsageError(f"--set: {exc}") from None
        settings = with_params(settings, name, params)
    return settings


def replay_names(wanted: str) -> list[str]:
    """``--strategy``'s names (``all``: every strategy), each checked."""
    names = list(STRATEGIES) if wanted == "all" else wanted.split(",")
    for name in names:
        if name not in STRATEGIES:
            raise CliError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}, all")
    return names


def replay_setup(
    store: Store, session: Session, settings: Settings, args: argparse.Namespace
) -> tuple[Settings, Path, OwnAgentView | None]:
    """The settings ``session`` replays under (its own, then ``--window`` or its agent's
    window, then ``--set``), the folder it replays in, and its agent's view (a recording)."""
    from engine.recordings.own_agent import own_agent_view, planning_settings

    # Without a workspace the replay reads no CODE_LAW.md from the folder a recording names.
    workspace = session_workspace(session) or NO_FOLDER
    if args.window is not None and args.window <= 0:
        raise CliError("--window must be a positive number of tokens")
    own = own_agent_view(store, session, session_settings(settings, session))
    settings = planning_settings(store, session, settings, args.window)  # then --set
    settings = with_numbers(settings, parse_overrides(args.overrides))
    return settings, workspace, own
