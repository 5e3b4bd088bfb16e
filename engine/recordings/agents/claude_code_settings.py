"""What the user's Claude Code configuration says about its window and auto-compaction.

Claude Code reads its settings from, highest first: the environment it runs in; the project's
``.claude/settings.local.json`` and ``.claude/settings.json`` (in the session's working
directory); the user's ``settings.json`` (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``). A
settings file's ``env`` block is applied to Claude Code's own environment, so a variable is
looked up there too. Part of :mod:`engine.recordings.agents.claude_code`, which alone imports
it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.recordings.agents.protocol import home_of

WINDOW_VARIABLES = (
    "ANTHROPIC_BETAS",
    "CLAUDE_CODE_DISABLE_1M_CONTEXT",
    "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
    "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
    "DISABLE_AUTO_COMPACT",
)
"""The variables Claude Code's window and trigger rules read (:mod:`claude_code`: each
``config.variable``), in the environment or a settings file's ``env`` block."""
WINDOW_FIELDS = (
    "autoCompactEnabled",
    "autoCompactWindow",
    "modelSettings.*.autoCompactWindow",
    *(f"env.{name}" for name in WINDOW_VARIABLES),
)
"""What the rules read of a settings file, as dotted paths (``*``: every key): what a
project's files are keyed by in the stored figures (``ContextRules.project_fields``)."""


@dataclass(frozen=True)
class Layer:
    """One settings file read."""

    where: Path
    data: dict[str, Any]


def user_settings_path(env: Mapping[str, str]) -> Path:
    """``$CLAUDE_CONFIG_DIR/settings.json``, else ``~/.claude/settings.json``."""
    folder = env.get("CLAUDE_CONFIG_DIR")
    return (Path(folder) if folder else home_of(env) / ".claude") / "settings.json"


def read_json(path: Path) -> dict[str, Any] | None:
    """The file as a JSON object (None: missing, unreadable or not an object)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def project_files(cwd: str) -> list[Path]:
    """The project's settings files in the session's working directory, highest first."""
    project = Path(cwd) / ".claude"
    return [project / "settings.local.json", project / "settings.json"]


class ClaudeSettings:
    """The settings one Claude Code session ran with, as far as this machine still has them."""

    def __init__(self, env: Mapping[str, str], cwd: str = "") -> None:
        self.env = env
        paths = project_files(cwd) if cwd else []
        paths.append(user_settings_path(env))
        self.layers = [Layer(path, data) for path in paths if (data := read_json(path)) is not None]
        """The files found, highest precedence first."""

    def variable(self, name: str) -> tuple[str, str] | None:
        """A variable's value and where it is set (``NAME=value``, ``NAME=value in <file>``);
        None: set nowhere."""
        if name in self.env:
            return self.env[name], f"{name}={self.env[name]}"
        for layer in self.layers:
            block = layer.data.get("env")
            if isinstance(block, dict) and block.get(name) is not None:
                value = str(block[name])
                return value, f"{name}={value} in {layer.where}"
        return None

    def value(self, key: str) -> tuple[Any, Path] | None:
        """A top-level setting and the file it is in (the highest that sets it)."""
        for layer in self.layers:
            if key in layer.data:
                return layer.data[key], layer.where
        return None

    def model_value(self, models: list[str], key: str) -> tuple[Any, str, Path] | None:
        """``modelSettings.<model>.<key>`` for the first of ``models`` a file sets, with the
        model's key and the file."""
        for layer in self.layers:
            table = layer.data.get("modelSettings")
            if not isinstance(table, dict):
                continue
            for model in models:
                entry = table.get(model)
                if isinstance(entry, dict) and key in entry:
                    return entry[key], model, layer.where
        return None


def flag(value: str | None) -> bool:
    """A variable set to something other than empty, ``0``, ``false``, ``no`` or ``off``."""
    return value is not None and value.strip().lower() not in ("", "0", "false", "no", "off")


def tokens(value: Any) -> int | None:
    """A token count as Claude Code reads one: ``400000``, ``400_000``, ``4e5``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    else:
        try:
            number = float(str(value).replace("_", "").strip())
        except ValueError:
            return None
    return int(number) if number > 0 else None
