"""How long the main screen's panes wait for the first session before they are drawn without it.

Drawing the panes empty and then again with the session cost two full paints of the screen
(each lays out and renders every pane; the empty one also mounts the scroll bars, which the
second lays out again): about 40 ms of CPU on the corpus' Claude Code session, whose open worker
needs ~0.06 s. So the panes wait below the screen (:data:`PANES_PARKED`: laid out, each pane
with its size when the session comes, its rows wrapped at once, but not drawn) until the
session is there, and one paint shows them with it; the header (which says the session is
opening) and the key bar are drawn at once, and the text box has the focus from the start
(typing works, as before).

A long session takes longer to open: the panes are then shown empty, and the session when it
is ready. "Longer" is counted in CPU time, not only on the clock: on a loaded machine the same
opening takes two or three times as long on the clock, and the wait should not end before the
work it waits for could. :data:`WAIT_CPU` of the process' CPU since the screen was mounted (the
open worker's and the screen's), or :data:`WAIT_WALL` on the clock, whichever comes first.
"""

from __future__ import annotations

import time
from collections.abc import Callable

WAIT_CPU = 0.3
"""CPU seconds (the process', all threads) the panes wait for the first session."""
WAIT_WALL = 1.5
"""Clock seconds after which the panes are shown, whatever the CPU count says."""
PANES_PARKED = 10_000
"""Rows below their place the panes are laid out while they wait (off any screen: the
compositor draws nothing there). Hidden instead (``display: none``), they would get their size
only with the session, and wrap their rows on a resize after it: a second layout and paint."""
LOOK_EVERY = 0.05
"""Seconds between two looks at the clocks while the panes wait."""


class PanesWait:
    """The wait of the panes for the first session, begun at :meth:`start`."""

    def __init__(
        self,
        cpu: Callable[[], float] = time.process_time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cpu = cpu
        self._clock = clock
        self._started: tuple[float, float] | None = None

    def start(self) -> None:
        self._started = (self._cpu(), self._clock())

    def over(self) -> bool:
        """The panes have waited long enough (True as well when the wait never began)."""
        if self._started is None:
            return True
        cpu, wall = self._started
        return self._cpu() - cpu >= WAIT_CPU or self._clock() - wall >= WAIT_WALL
