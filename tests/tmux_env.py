"""The environment a test's own tmux server starts in: as from a plain shell, wherever the
suite runs.

From inside a tmux pane the suite inherits ``TMUX`` and ``TMUX_PANE``, which name the user's
server and pane. A server started with them copies them into its global environment, and the
workbench in the test's pane did not get the keys the test sent it (issue 39:
``test_typing_tmux`` and ``test_terminal_tmux`` failed from a pane only; leaving out these two
was enough, measured; ``tests/test_tmux_pane.py`` runs both from a pane).
"""

from __future__ import annotations

import os

FROM_A_PANE = ("TMUX", "TMUX_PANE")
"""What tmux sets in a pane's environment, left out of the test's own server."""


def plain_shell_env() -> dict[str, str]:
    """``os.environ`` without what a tmux pane adds (:data:`FROM_A_PANE`)."""
    return {k: v for k, v in os.environ.items() if k not in FROM_A_PANE}
