"""Cyclic garbage collection paused while the workbench opens its first session.

Start-up builds a large heap that lives as long as the process — Textual's widgets and styles,
the engine's pydantic models, peewee, the session's messages — and Python's cyclic collector
walks all of it in every full collection. Measured on the corpus' Claude Code session
(``bench/bench_recorded_open.py``, CPU time of the collector with ``gc.callbacks``): about
0.21 s of the ~1.1 s to the session's first frame went to collections, 0.15 s of it in three
full ones. Reference counting frees memory as usual meanwhile; only reference cycles wait, and
opening a session makes few. Collection resumes once the session's frame is up (its worker
ended, the frame drawn) or the app closes, whichever comes first.

When it resumes at the frame (:meth:`GcPause.end_at_frame`), what the pause let pile up is
frozen first (``gc.freeze()``: left out of every collection until :meth:`GcPause.thaw`).
Nothing having been collected during the pause, all of it — some 110 000 objects on that
session — was still in the youngest generation, and the first collection after the pause walked
it all (50–58 ms of CPU, right after the frame, before the app could answer a key) to find the
few hundred objects of the imports' own cycles (``datetime``'s pure-Python classes replaced by
its C ones, enum conversions); then walked it again as it was promoted. Those objects live as
long as the app; the first session's may become garbage once another session opens, so they
are handed back to the collector then (into its oldest generation), and when the app closes.
"""

from __future__ import annotations

import gc


class GcPause:
    """The collector paused from :meth:`start` until :meth:`end` or :meth:`end_at_frame` (once;
    idempotent); with the latter, what was made meanwhile frozen until :meth:`thaw`."""

    def __init__(self) -> None:
        self._paused = False
        self._frozen = False

    def start(self) -> None:
        """Pause the collector if it runs (a caller that disabled it keeps it so)."""
        if gc.isenabled():
            gc.disable()
            self._paused = True

    def end(self) -> None:
        """Let the collector run again, if this pause stopped it (the app closes, or never
        got to a frame)."""
        if self._paused:
            self._paused = False
            gc.enable()

    def end_at_frame(self) -> None:
        """:meth:`end`, every object there is now frozen first: the start-up's heap, which no
        collection walks until :meth:`thaw`."""
        if self._paused:
            gc.freeze()
            self._frozen = True
        self.end()

    def thaw(self) -> None:
        """Hand what :meth:`end_at_frame` froze back to the collector (its oldest generation),
        once."""
        if self._frozen:
            self._frozen = False
            gc.unfreeze()

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def frozen(self) -> bool:
        return self._frozen
