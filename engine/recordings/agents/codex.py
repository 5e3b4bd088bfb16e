"""Codex CLI: its rollouts, and its window and auto-compact rule.

Files: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`` (``$CODEX_HOME/sessions``),
read by :mod:`engine.recordings.codex` and followed with the same parse.

**Window**: Codex's *raw* window. ``model_context_window`` in the user's ``config.toml``
(``$CODEX_HOME``, else ``~/.codex``) when set; else the rollout's recorded
``model_context_window``. Newer Codex records its *effective* window there, 95 % of the raw
one (``effective_context_window_percent``, default 95): a recorded 258,400 is read as
95 % of 272,000, a recorded figure that is not 95 % of a whole thousand is taken as the raw
window (Codex 0.47 recorded 272,000 itself). No recorded window: the model's in genai-prices,
else ``watch_context_window``.

**Auto-compact point**: ``model_auto_compact_token_limit`` from ``config.toml`` when set,
else 90 % of the raw window (Codex's default ``auto_compact_token_limit``,
``watch_codex_compact_ratio``): 272,000 → 244,800.
"""

from __future__ import annotations

import tomllib
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.recordings import codex
from engine.recordings.agents.protocol import (
    ContextRules,
    Folder,
    Head,
    Recorded,
    TailParser,
    checked,
    home_of,
    model_window,
)
from engine.recordings.base import JsonLines, Known, NotRead, Parsed
from engine.recordings.writer import check
from engine.settings.config import Settings

EFFECTIVE_PERCENT = 95
"""Codex's default ``effective_context_window_percent``: the share of the raw window it
records as ``model_context_window`` (codex-rs model family)."""


class Codex:
    """Codex CLI rollouts."""

    name = codex.FORMAT
    label = "Codex"
    records_times = True
    follow_glob = "*/*/*/rollout-*.jsonl"
    """``sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``."""

    def looks_like(self, path: Path | None, head: Head) -> int | None:
        return next((n for n, r in enumerate(head.records) if codex.looks_like(r)), None)

    def parse(self, path: Path, text: str, known: Known | None = None) -> list[Parsed]:
        parsed = codex.parse(text, path.name, known)
        return checked(parsed)

    def tail_parser(self, path: Path) -> TailParser | None:
        return CodexTail(path.name)

    def home_folders(self, env: Mapping[str, str], settings: Settings) -> list[Folder]:
        folder = settings.watch_codex_dir or codex_home(env, settings) / "sessions"
        return [Folder(folder, self.name)]

    def companions(self, path: Path) -> list[Path]:
        return []

    def is_companion(self, relative: Path) -> bool:
        return False

    def orphaned(self, path: Path) -> bool:
        return False

    def context_rules(
        self, recorded: Recorded, settings: Settings, env: Mapping[str, str]
    ) -> ContextRules:
        path = codex_home(env, settings) / "config.toml"
        return rules(recorded, settings, config(path), str(path))


def rules(
    recorded: Recorded, settings: Settings, user: dict[str, Any], where: str = "config.toml"
) -> ContextRules:
    """Codex's rules for ``recorded`` with the user's ``config.toml`` read as ``user``."""
    window, window_source = _raw_window(recorded, settings, user, where)
    limit = user.get("model_auto_compact_token_limit")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        return ContextRules(
            window, limit, window_source, f"model_auto_compact_token_limit {limit:,} in {where}"
        )
    ratio = settings.watch_codex_compact_ratio
    return ContextRules(
        window,
        int(ratio * window),
        window_source,
        f"{ratio:.0%} of the raw window {window:,} (Codex's default auto_compact_token_limit)",
    )


def _raw_window(
    recorded: Recorded, settings: Settings, user: dict[str, Any], where: str
) -> tuple[int, str]:
    own = user.get("model_context_window")
    if isinstance(own, int) and not isinstance(own, bool) and own > 0:
        return own, f"model_context_window {own:,} in {where}"
    window = recorded.facts.get("context_window")
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        raw, rest = divmod(window * 100, EFFECTIVE_PERCENT)
        if not rest and raw % 1000 == 0 and raw != window:
            return raw, (
                f"the recorded model_context_window {window:,} is {EFFECTIVE_PERCENT} % "
                f"(Codex's effective_context_window_percent) of {raw:,}"
            )
        return window, f"the rollout's model_context_window {window:,}"
    return model_window(recorded.model, settings)


def codex_home(env: Mapping[str, str], settings: Settings) -> Path:
    """Codex's own folder: above ``watch_codex_dir``, else ``$CODEX_HOME``, else ``~/.codex``."""
    if settings.watch_codex_dir is not None:
        return settings.watch_codex_dir.parent
    home = env.get("CODEX_HOME")
    return Path(home) if home else home_of(env) / ".codex"


def config(path: Path) -> dict[str, Any]:
    """Codex's ``config.toml`` (``{}``: none, or not readable)."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


class CodexTail:
    """A followed rollout: its records so far through the importer's parse."""

    def __init__(self, name: str) -> None:
        self.name = name

    def parse(
        self,
        records: list[tuple[int, dict[str, Any]]],
        lines: int,
        skipped: Counter[str],
        warnings: list[str],
        not_read: NotRead,
    ) -> Parsed:
        kept = codex.known(list(records), not_read)
        reader = JsonLines.holding(lines, skipped, warnings, not_read)
        return codex.parse_records(kept, reader, self.name)

    def check(self, parsed: Parsed) -> list[str]:
        return check(parsed)


AGENT = Codex()
