"""What the main screen asks of the application it runs in: the store, the settings, the
workspace and how to open a session. :class:`~tui.app.CtxscopeApp` is one; the screen is handed
it when it is made, so the screens never import the app (which imports them)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from engine.events import EventSink
from engine.settings.config import Settings
from engine.store import Store
from tools.base import Asker
from tui.formatting import Clock
from tui.gc_pause import GcPause
from tui.session_loader import OpenedSession, Resume


class Workbench(Protocol):
    """The application around the main screen."""

    store: Store
    settings: Settings
    workspace: Path
    """The folder the workbench was started in (resolved)."""
    workspace_label: str | None
    """Shown instead of the workspace path (snapshots use a fixed name)."""
    clock: Clock
    gc_pause: GcPause
    """The collector's pause for the first session (thawed when another one opens)."""

    def open_session(self, resume: Resume, events: EventSink, ask: Asker) -> OpenedSession:
        """Open a session with its agent (called from a thread worker)."""
        ...
