"""Cyclic garbage collection paused while the workbench opens its first session.

Start-up builds a large heap that lives as long as the process — Textual's widgets and styles,
the engine's pydantic models, peewee, the session's messages — and Python's cyclic collector
walks all of it in every full collection. Measured on the corpus' Claude Code session
(``bench/bench_recorded_open.py``, CPU time of the collector with ``gc.callbacks``): about
0.21 s of the ~1.1 s to the session's first frame went to collections, 0.15 s of it in three
full ones. Reference counting frees memory as usual meanwhile; only reference cycles wait, and
opening a session makes few. Collection resumes once the session's frame is up (its worker
ended, the frame drawn) or the app closes, whichever comes first.
"""

from __future__ import annotations

import gc


class GcPause:
    """The collector paused from :meth:`start` until :meth:`end` (once; idempotent)."""

    def __init__(self) -> None:
        self._paused = False

    def start(self) -> None:
        """Pause the collector if it runs (a caller that disabled it keeps it so)."""
        if gc.isenabled():
            gc.disable()
            self._paused = True

    def end(self) -> None:
        """Let the collector run again, if this pause stopped it."""
        if self._paused:
            self._paused = False
            gc.enable()

    @property
    def paused(self) -> bool:
        return self._paused
