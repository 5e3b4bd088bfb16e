"""SWE-agent ``.traj`` and mini-swe-agent ``.traj.json`` trajectories (one JSON document).

Read by :mod:`engine.recordings.trajectories`; not followed; no home folder (each run writes
its own). Window: the model's in genai-prices, else ``watch_context_window``; neither agent
compacts its context on its own by default: no trigger.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.recordings import trajectories
from engine.recordings.agents.protocol import (
    ContextRules,
    Head,
    Recorded,
    Standalone,
    checked,
    count_surrogates,
    load_document,
    window_without_trigger,
)
from engine.recordings.base import Known, Parsed
from engine.settings.config import Settings


class Trajectory(Standalone):
    """One trajectory format: no entry says when it happened (the reader dates every step at
    the import; the rules say so: ``times_recorded``)."""

    records_times = False

    def __init__(
        self,
        name: str,
        label: str,
        looks: Callable[[Any], bool],
        read: Callable[[dict[str, Any], str], Parsed],
    ) -> None:
        self.name = name
        self.label = label
        self._looks = looks
        self._read = read

    def looks_like(self, path: Path | None, head: Head) -> int | None:
        return 0 if self._looks(head.whole) else None

    def parse(self, path: Path, text: str, known: Known | None = None) -> list[Parsed]:
        whole, surrogates = load_document(text)
        parsed = count_surrogates(self._read(whole, path.name), surrogates)
        return checked(parsed)

    def context_rules(
        self, recorded: Recorded, settings: Settings, env: Mapping[str, str]
    ) -> ContextRules:
        rules = window_without_trigger(self.label, recorded, settings)
        return replace(rules, times_recorded=self.records_times)


SWE = Trajectory(trajectories.SWE, "SWE-agent", trajectories.looks_like_swe, trajectories.parse_swe)
MINI = Trajectory(
    trajectories.MINI, "mini-swe-agent", trajectories.looks_like_mini, trajectories.parse_mini
)
