"""The session's strategy switched from the workbench: the command palette's *Strategy: NAME*
entries (the base class of :class:`~tui.screens.main_actions.MainActions`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from textual.app import SystemCommand
from textual.screen import Screen

from engine.compaction.strategies import STRATEGIES, get_strategy
from engine.params import strategy_params
from engine.store import SessionBusy, StoreError

if TYPE_CHECKING:
    from engine.session import Agent
    from tui.host import Workbench
    from tui.session_loader import Resume


class StrategySwitching(Screen[None]):
    """Switching the open session's strategy, as ``ctxscope strategy ID NAME`` does."""

    if TYPE_CHECKING:
        agent: Agent | None

        @property
        def ctx_app(self) -> Workbench: ...

        def open(self, resume: Resume) -> None: ...

        def _refuse_when_busy(self) -> bool: ...

    def strategy_commands(self) -> Iterable[SystemCommand]:
        """The palette's *Strategy: NAME* entries, one per strategy but the session's own."""
        current = self.agent.strategy.name if self.agent is not None else None
        for name in STRATEGIES:
            if name == current:
                continue
            policy = get_strategy(name, self.ctx_app.settings)
            yield SystemCommand(
                f"Strategy: {name}",
                f"Switch this session to {name} (seed {policy.seed[:3]}); recorded, as "
                "`ctxscope strategy ID NAME` does",
                lambda name=name: self.call_later(self.action_switch_strategy, name),
            )

    def action_switch_strategy(self, name: str) -> None:
        """Make ``name`` the session's strategy (recorded with its numbers, in the session's
        own window, as ``ctxscope strategy ID NAME``), then open the session again under it."""
        if self._refuse_when_busy() or self.agent is None:
            return
        agent = self.agent
        if agent.strategy.name == name:
            self.notify(f"This session already uses {name}.", title="Strategy")
            return
        store, sid = agent.store, agent.session_id
        try:
            session = store.get_session(sid)
            params = strategy_params(self.ctx_app.settings, name)
            if session.params is not None:
                window = session.params.context_window
                params = params.model_copy(update={"context_window": window})
            with store.acquire_lease(sid, "strategy switch"):
                store.switch_strategy(sid, name, params)
        except (SessionBusy, StoreError) as exc:
            self.notify(f"The strategy was not switched: {exc}", title="Strategy", severity="error")
            return
        self.notify(
            f"Session {sid} switched from {agent.strategy.name} to {name}; it opens again "
            "under it.",
            title="Strategy",
        )
        self.open(sid)
