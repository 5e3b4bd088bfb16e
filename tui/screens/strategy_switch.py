"""The session's strategy switched from the workbench: the command palette's *Strategy: NAME*
entries (a part of :class:`~tui.screens.main_screen.MainScreen`, handed the screen)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from textual.app import SystemCommand

from engine.compaction.strategies import STRATEGIES, get_strategy
from engine.settings.params import strategy_params
from engine.store import SessionBusy, StoreError

if TYPE_CHECKING:
    from tui.screens.main_screen import MainScreen


class StrategySwitch:
    """Switching the open session's strategy, as ``ctxscope strategy ID NAME`` does: what it
    asks of the screen is its agent, its settings, whether it is busy, to notify and to open
    the session again."""

    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen

    def commands(self) -> Iterable[SystemCommand]:
        """The palette's *Strategy: NAME* entries, one per strategy but the session's own."""
        screen = self.screen
        current = screen.agent.strategy.name if screen.agent is not None else None
        for name in STRATEGIES:
            if name == current:
                continue
            policy = get_strategy(name, screen.ctx_app.settings)
            yield SystemCommand(
                f"Strategy: {name}",
                f"Switch this session to {name} (seed {policy.seed[:3]}); recorded, as "
                "`ctxscope strategy ID NAME` does",
                lambda name=name: screen.call_later(self.switch, name),
            )

    def switch(self, name: str) -> None:
        """Make ``name`` the session's strategy (recorded with its numbers, in the session's
        own window, as ``ctxscope strategy ID NAME``), then open the session again under it."""
        screen = self.screen
        if screen.actions.refuse_when_busy() or screen.agent is None:
            return
        agent = screen.agent
        if agent.strategy.name == name:
            screen.notify(f"This session already uses {name}.", title="Strategy")
            return
        store, sid = agent.store, agent.session_id
        try:
            session = store.get_session(sid)
            params = strategy_params(screen.ctx_app.settings, name)
            if session.params is not None:
                window = session.params.context_window
                params = params.model_copy(update={"context_window": window})
            with store.acquire_lease(sid, "strategy switch"):
                store.switch_strategy(sid, name, params)
        except (SessionBusy, StoreError) as exc:
            screen.notify(
                f"The strategy was not switched: {exc}", title="Strategy", severity="error"
            )
            return
        screen.notify(
            f"Session {sid} switched from {agent.strategy.name} to {name}; it opens again "
            "under it.",
            title="Strategy",
        )
        screen.open(sid)
