"""CtxscopeApp: the workbench's application object (started by :mod:`cli.workbench`).

Thin on purpose: it opens the store, knows the workspace, the settings and how to make a
provider, puts every main-screen action into the command palette, and shows the main screen.
The work itself lives in ``tui/screens`` and ``tui/widgets``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import ClassVar

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen

from engine.events import EventSink
from engine.llm.base import Provider
from engine.settings.config import Settings
from engine.store import Store
from tools.base import Asker
from tui.formatting import Clock, key_label, wall_clock
from tui.gc_pause import GcPause
from tui.screens.main_actions import MAIN_ACTIONS
from tui.screens.main_screen import MainScreen
from tui.session_loader import OpenedSession, Resume, load_grants, open_session
from tui.text_wrap import display_safe

TEXTUAL_DUPLICATES = frozenset({"Keys", "Maximize", "Minimize"})
"""Textual's own palette entries the main screen replaces with its F1 and F8."""


class CtxscopeApp(App[int]):
    """The ctxscope workbench."""

    CSS_PATH = "app.tcss"
    TITLE = "ctxscope"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+q",
            "quit",
            "Quit",
            id="app.quit",
            priority=True,
            tooltip="Quit ctxscope (a running round is interrupted first)",
        ),
        Binding(
            "escape",
            "close_keys_panel",
            "Close keys",
            show=False,
            id="app.close_keys_panel",
            tooltip="Close Textual's keys panel (opened from the command palette)",
        ),
    ]

    def __init__(
        self,
        *,
        db_path: Path | str,
        workspace: Path,
        settings: Settings,
        resume: Resume = None,
        provider: Provider | None = None,
        clock: Clock = wall_clock,
        workspace_label: str | None = None,
        workspace_explicit: bool = False,
        gc_pause: GcPause | None = None,
    ) -> None:
        """Open the store at ``db_path`` (errors raise ``StoreError`` before any screen);
        ``gc_pause``: a pause of the collector begun before the workbench was imported."""
        super().__init__()
        self.settings = settings
        self.workspace = workspace.resolve()
        self.resume = resume
        self.clock = clock
        """What "now" is for relative times (tests freeze it)."""
        self.workspace_label = workspace_label
        """Shown instead of the workspace path (snapshots use a fixed name)."""
        self._provider = provider
        self.workspace_explicit = workspace_explicit
        """``--workspace`` was given: ``--resume`` (latest) then means the latest session of
        that workspace."""
        self.session_grants: dict[int, set[str]] = {}
        """Per session, the kinds of tool call answered "always for this session", kept while
        the app runs and stored beside the session after each round (``load_grants``), so
        leaving a session and coming back, now or after a restart, does not forget them."""
        self.store = Store.open(db_path)
        self.gc_pause = gc_pause or GcPause()
        """The cyclic collector, paused from the app's start to the first session's frame."""

    def on_load(self) -> None:
        self.gc_pause.start()

    def on_main_screen_opening_ended(self, _message: MainScreen.OpeningEnded) -> None:
        self.call_after_refresh(self.gc_pause.end_at_frame)  # once that frame is on screen

    def provider_factory(self) -> Callable[[Settings], Provider]:
        injected = self._provider
        if injected is not None:
            return lambda _settings: injected
        # Imported and built here: the Anthropic SDK takes a second or two to import; the
        # screen should be up first, and the first message should not wait for it (this runs
        # in the worker that opens the session).
        from engine.llm.factory import make_provider, ready

        return lambda settings: ready(make_provider(settings))

    def open_session(self, resume: Resume, events: EventSink, ask: Asker) -> OpenedSession:
        """Open a session with its agent (called from a thread worker)."""
        opened = open_session(
            self.store,
            self.settings,
            self.workspace,
            resume,
            events,
            ask,
            provider_factory=self.provider_factory(),
            workspace_explicit=self.workspace_explicit,
        )
        # The same set object: answers given from now on are remembered for the session.
        grants = self.session_grants.setdefault(opened.agent.session_id, set())
        grants |= opened.agent.tool_ctx.always_allowed | load_grants(opened.agent)
        opened.agent.tool_ctx.always_allowed = grants
        return opened

    async def on_event(self, event: events.Event) -> None:
        # Before a key or a paste is handed to the focused widget: typing in a pane goes to
        # the text box, the whole burst in order (MainScreen.steer_typing).
        if isinstance(event, events.Key | events.Paste) and isinstance(self.screen, MainScreen):
            self.screen.steer_typing(event)
        await super().on_event(event)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification of the workbench (a widget's ``notify`` comes here too) as plain
        text: its message and title may name a recorded title, a file or a tool, so control
        characters are shown escaped and ``[…]`` is never read as markup (``[@click=…]`` would
        be an action, ``[link=…]`` a link)."""
        shown = display_safe(message)
        heading = display_safe(title, one_line=True)
        if timeout is None:
            super().notify(shown, title=heading, severity=severity, markup=False)
        else:
            super().notify(shown, title=heading, severity=severity, timeout=timeout, markup=False)

    def get_default_screen(self) -> Screen[None]:
        return MainScreen(self.resume, self)

    @property
    def main_screen(self) -> MainScreen | None:
        """The workbench screen, wherever it is in the stack."""
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                return screen
        return None

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        main = self.main_screen
        on_main = main is not None and screen is main
        for command in super().get_system_commands(screen):
            # The workbench has its own keys list (F1) and maximise (F8): one entry each.
            if not (on_main and command.title in TEXTUAL_DUPLICATES):
                yield command
        if main is None or not on_main:
            return
        for spec in MAIN_ACTIONS:
            # None: offered, though it has nothing to act on now (it says so when run).
            if main.check_action(spec.action, ()) is False:
                continue
            yield SystemCommand(
                f"{spec.title or spec.label} ({key_label(spec.key)})",
                spec.help,
                lambda action=spec.action: self.call_later(main.run_action, action),
            )
        yield from main.strategy_commands()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "close_keys_panel":
            return bool(self.screen.query("HelpPanel"))
        return super().check_action(action, parameters)

    def action_close_keys_panel(self) -> None:
        self.action_hide_help_panel()

    async def action_quit(self) -> None:
        main = self.main_screen
        if main is not None:
            main.stop_agent()
        self.exit(0)

    def on_unmount(self) -> None:
        self.gc_pause.end()
        self.gc_pause.thaw()
        main = self.main_screen
        if main is not None:
            main.stop_agent()
            main.leave_session()
        self.store.close()
