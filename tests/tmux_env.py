"""The environment a test's own tmux server starts in: as from a plain shell, wherever the
suite runs.

From inside a tmux pane the suite inherits what the pane sets: ``TMUX`` and ``TMUX_PANE``
(the user's server and pane), ``TERM_PROGRAM`` / ``TERM_PROGRAM_VERSION`` (``tmux``), and
maybe ``COLUMNS`` / ``LINES``. A server started with them copies them into its global
environment, and the workbench in the test's pane did not show or get what the test waited for
(issue 39: ``test_typing_tmux`` and ``test_terminal_tmux`` failed from a pane only). Measured
from a pane on the loaded build machine: leaving out ``TMUX`` and ``TMUX_PANE`` alone, both
still failed (2 runs of 2); leaving out all of :data:`FROM_A_PANE`, both passed (2 of 2).
``tests/test_tmux_pane.py`` runs both from a pane.
"""

from __future__ import annotations

import os

FROM_A_PANE = ("TMUX", "TMUX_PANE", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "COLUMNS", "LINES")
"""What tmux sets in a pane's environment, left out of the test's own server."""


def plain_shell_env() -> dict[str, str]:
    """``os.environ`` without what a tmux pane adds (:data:`FROM_A_PANE`)."""
    return {k: v for k, v in os.environ.items() if k not in FROM_A_PANE}
