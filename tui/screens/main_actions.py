"""The main screen's actions (keys and command palette) and its permission dialogs.

The base class of :class:`~tui.screens.main_screen.MainScreen`, kept apart so each module stays
small: compact now, sessions, archive, context inspector, the last scratchpad, the narrow
layout's pane switch, new session, interrupt; and the bridge between the agent's blocking
permission questions and :class:`~tui.screens.permission_modal.PermissionModal`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from textual import on
from textual.screen import Screen
from textual.widget import Widget

from engine.context.history import CompactionDraft, CompactionResult
from engine.models import Message
from engine.session.workspace import NO_FOLDER
from tools.base import PermissionAnswer
from tui.bridge import PermissionGate, PermissionReply
from tui.formatting import plural, round_span, tokens, workspace_label
from tui.screens.compact_preview_modal import Commit, CompactPreviewModal, Regenerate
from tui.screens.keys_modal import KeysModal
from tui.screens.permission_modal import PermissionModal
from tui.screens.report_screen import ReportScreen
from tui.screens.requests_screen import RequestsScreen
from tui.screens.sessions_screen import SessionsScreen
from tui.widgets.chat_input import ChatInput
from tui.widgets.compact_bar import CompactBar
from tui.widgets.history_view import HistoryLayout, HistoryView, cut_mark_index, history_blocks
from tui.widgets.scratchpad_view import ScratchpadView

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.session import Agent
    from engine.store.forking import Fork
    from tui.host import Workbench
    from tui.session_loader import Resume
    from tui.widgets.block_view import Block
    from tui.widgets.history_view import BlockMemo


@dataclass(frozen=True)
class ActionSpec:
    """A main-screen action: its key, footer label and palette help, in one place."""

    key: str
    action: str
    label: str
    help: str
    show: bool = True
    title: str = ""
    """The command palette's name for it (default: the footer label)."""

    @property
    def binding_id(self) -> str:
        return f"main.{self.action}"


MAIN_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("f1", "keys", "Keys", "Every key of the workbench, and what the panes show"),
    ActionSpec("f2", "sessions", "Sessions", "Browse stored sessions and resume one"),
    ActionSpec("f3", "archive", "Archive", "Each compaction: its summary beside the raw rounds"),
    ActionSpec("f4", "inspect", "Context", "The exact request the next step will send, by part"),
    ActionSpec(
        "f5",
        "compact",
        "Compact",
        "Compact now: choose the cut in the history (↑ ↓), Enter compacts, Esc cancels",
    ),
    ActionSpec(
        "ctrl+z",
        "undo_compaction",
        "Undo compact",
        "Undo the last compaction: its messages return to history, its summary leaves",
        title="Undo last compaction",
    ),
    ActionSpec(
        "ctrl+t",
        "toggle_pin",
        "Pin",
        "Pin or unpin the message selected in the history: a pinned message is never archived",
        title="Pin / unpin the selected message",
    ),
    ActionSpec("f6", "last_scratchpad", "Last pad", "Show or hide the last round's scratchpad"),
    ActionSpec("f7", "next_pane", "Pane", "Show the next pane (narrow layout)"),
    ActionSpec(
        "ctrl+g",
        "cycle_pane",
        "Go to pane",
        "Focus the next pane: chat, scratchpad, history (also in tmux)",
        show=False,
        title="Go to the next pane",
    ),
    ActionSpec(
        "ctrl+l",
        "execution_log",
        "Log",
        "The session's execution log: what each run did (message-window strategy)",
        show=False,
    ),
    ActionSpec(
        "ctrl+f",
        "search",
        "Search",
        "Search the history, its summaries and the archive",
        show=False,
    ),
    ActionSpec(
        "f9",
        "compare",
        "Compare",
        "Replay this session under every strategy: tokens, cache, cost, what was kept",
        show=False,
    ),
    ActionSpec(
        "f10",
        "requests",
        "Requests",
        "A proxied session's exact requests: layers, diffs, cost",
        show=False,
    ),
    ActionSpec(
        "f11",
        "report",
        "Report",
        "Every session's cost per day, compactions and what they kept",
        show=False,
    ),
    ActionSpec(
        "f8",
        "toggle_maximize",
        "Maximise",
        "Maximise the focused pane, or restore it",
        title="Maximise / restore pane",
    ),
    ActionSpec("ctrl+n", "new_session", "New", "Start a new session in this workspace"),
    ActionSpec("escape", "interrupt", "Interrupt", "Interrupt the running round"),
)


def default_keep(groups: list[list[Message]]) -> int:
    """Where F5's cut starts: above the last round, unless that round holds more than half of
    history's tokens — then above none, so the default frees what most likely needs freeing
    (issue 39: keeping a last round of 97 % freed 3 %); ↑ keeps it."""
    if len(groups) < 2:
        return 0
    sizes = [sum(m.tokens or 0 for m in group) for group in groups]
    return 0 if sizes[-1] * 2 > sum(sizes) else 1


def cut_plan(layout: HistoryLayout) -> str:
    """What compacting at the cut chosen by hand archives and keeps, in words."""
    cut = set(layout.cut_rounds)
    if not cut:
        return "Nothing above the cut."
    msgs = [m for m in layout.history.messages if m.meta.round in cut]
    pinned = sum(1 for m in msgs if m.pinned)
    archived = sum(m.tokens or 0 for m in msgs if not m.pinned)
    keep = layout.keep_rounds
    stays = {0: "no round stays as it is", 1: "the last round stays"}.get(
        keep, f"the last {keep} rounds stay"
    )
    text = (
        f"Compact {round_span(min(cut), max(cut))} ({tokens(archived)} tok) into one summary; "
        f"{stays}."
    )
    if pinned:
        text += f" {plural(pinned, 'pinned message')} {'stays' if pinned == 1 else 'stay'} too."
    return text


IDLE_ONLY = {"compact", "sessions", "new_session", "undo_compaction", "toggle_pin"}
"""Actions refused while the agent works (they would race the round); they say so."""


class MainActions(Screen[None]):
    """Actions of the main screen (the base class of MainScreen)."""

    if TYPE_CHECKING:
        agent: Agent | None
        session_id: int | None
        busy: str | None
        pane: str
        gate: PermissionGate
        memo: BlockMemo
        last_scratch: list[Block]
        _permission_modals: dict[int, Any]
        cutting: bool
        cut_base: HistoryLayout | None
        manual_keep: int | None
        undoable: int | None

        @property
        def ctx_app(self) -> Workbench: ...

        def open(self, resume: Resume) -> None: ...

        def prepare_worker(self, agent: Agent, focus: str, keep: int | None) -> Any: ...

        def compact_now_worker(
            self, agent: Agent, memo: BlockMemo, focus: str, keep: int
        ) -> Any: ...

        def undo_worker(self, agent: Agent, memo: BlockMemo) -> Any: ...

        def pin_worker(
            self, agent: Agent, memo: BlockMemo, message_id: int, pinned: bool
        ) -> Any: ...

        def redraw_worker(self, agent: Agent, memo: BlockMemo) -> Any: ...

        def compact_worker(
            self, agent: Agent, memo: BlockMemo, draft: CompactionDraft, content: str | None
        ) -> Any: ...

        def _update_subtitles(self) -> None: ...

        def leave_session(self) -> None: ...

        def fork_first(self, then: Callable[[Fork], None]) -> bool: ...

        trial_fork: Fork | None

        def drop_trial_fork(self) -> None: ...

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # False hides a key that does nothing here (F7 in the wide layout, Esc between
        # rounds); None shows it disabled (kept in the palette, left out of the footer). Keys
        # refused while the agent works stay active: the action says why.
        if self.cutting and action not in ("keys", "toggle_maximize"):
            return False  # the compaction bar's keys are the ones that matter now
        if action == "next_pane":
            return self.has_class("-narrow")
        if action == "interrupt":
            return self.busy == "round"
        if (
            action in ("archive", "inspect", "execution_log", "compare", "requests")
            and self.agent is None
        ):
            return None
        if action == "undo_compaction":
            return True if self.undoable is not None else None
        if action == "toggle_pin":
            # In the footer while a history message is selected (cursor moves redraw it).
            return True if self.query_one(HistoryView).selected_message() else None
        return True

    def _refuse_when_busy(self) -> bool:
        if self.busy is None and self.agent is not None:
            return False
        doing = {
            "round": "a round is running; wait for its answer or press Esc to interrupt it",
            "compacting": "a compaction is running; wait for it to finish",
        }.get(self.busy or "", "the session is still opening; wait a moment")
        self.notify(f"Not now: {doing}.", title="Busy", severity="warning")
        return True

    # ------------------------------------------------------------------ compaction
    def action_compact(self) -> None:
        """F5: show the cut in the history pane and the compaction bar (Enter compacts)."""
        if self._refuse_when_busy():
            return
        history = self.query_one(HistoryView)
        layout = history.layout_data
        if layout is None:
            return
        groups = layout.history.rounds()
        rounds = len(groups)
        if rounds == 0:
            self.notify("Nothing to compact yet: no round is in the history.", title="Compact")
            return
        self.cut_base = layout
        self.cutting = True
        if self.has_class("-narrow"):
            self.pane = "history"
        self.query_one(CompactBar).start(rounds, default_keep(groups))

    def manual_layout(self, keep: int) -> HistoryLayout | None:
        """The history with the cut above its last ``keep`` rounds."""
        base = self.cut_base
        if base is None:
            return None
        groups = base.history.rounds()
        cut = [g[0].meta.round for g in groups[: max(0, len(groups) - keep)]]
        return replace(
            base,
            keep_rounds=keep,
            cut_rounds=[r for r in cut if r is not None],
            by_hand=True,
        )

    @on(CompactBar.CutMoved)
    def _cut_moved(self, event: CompactBar.CutMoved) -> None:
        layout = self.manual_layout(event.keep)
        if layout is None:
            return
        history = self.query_one(HistoryView)
        blocks = history_blocks(layout, self.memo)
        history.show(layout, blocks, scroll_end=False)
        mark = cut_mark_index(blocks)
        if mark is not None:
            history.scroll_to_region(
                history.block_region(mark), animate=False, immediate=True, center=True
            )
        self.query_one(CompactBar).describe(cut_plan(layout))

    def _leave_cut(self) -> None:
        """Back from the cut: the bar goes, the history shows the strategy's own marks."""
        self.cutting = False
        self.query_one(CompactBar).display = False
        if self.cut_base is not None:
            self.query_one(HistoryView).show(
                self.cut_base, history_blocks(self.cut_base, self.memo), scroll_end=False
            )
        self.cut_base = None
        self.query_one(ChatInput).focus()

    @on(CompactBar.Cancelled)
    def _cut_cancelled(self) -> None:
        self._leave_cut()
        self.notify("Compaction cancelled; nothing was changed.", title="Compact")

    @on(CompactBar.Confirmed)
    def _cut_confirmed(self, event: CompactBar.Confirmed) -> None:
        self._leave_cut()
        if self.agent is None or self.busy is not None:
            return
        if self.fork_first(lambda fork: self._cut_confirmed_on(fork, event)):
            return
        self.busy = "compacting"
        self.manual_keep = event.keep
        if event.edit:
            self.prepare_worker(self.agent, event.focus, event.keep)
        else:
            self.compact_now_worker(self.agent, self.memo, event.focus, event.keep)

    def _cut_confirmed_on(self, fork: Fork, event: CompactBar.Confirmed) -> None:
        """The cut asked of a recording, on the fork just made for it: the fork stays only if
        a compaction is stored (issue 39: a change that does nothing makes no fork)."""
        self.trial_fork = fork
        self._cut_confirmed(event)

    def _prepared(self, draft: CompactionDraft | CompactionResult) -> None:
        self.busy = None
        if isinstance(draft, CompactionResult):
            self.notify(
                draft.compaction.error or "nothing to compact",
                title="Nothing to compact",
                severity="warning",
            )
            self.drop_trial_fork()
            return
        if self.agent is None:
            return
        self.app.push_screen(
            CompactPreviewModal(draft, self.agent.strategy.name),
            lambda choice: self._preview_answer(draft, choice),
        )

    def _preview_answer(self, draft: CompactionDraft, choice: Commit | Regenerate | None) -> None:
        if choice is None:
            self.notify("Compaction abandoned; nothing was changed.", title="Compaction")
            self.drop_trial_fork()
        elif isinstance(choice, Regenerate):
            if self.agent is not None and self.busy is None:
                self.busy = "compacting"
                self.prepare_worker(self.agent, choice.focus, self.manual_keep)
        elif self.agent is not None and self.busy is None:
            self.busy = "compacting"
            self.compact_worker(self.agent, self.memo, draft, choice.content)

    def action_undo_compaction(self) -> None:
        """Ctrl+Z: the same as the archive's undo and ``ctxscope uncompact``."""
        if self._refuse_when_busy():
            return
        if self.undoable is None or self.agent is None:
            self.notify("No compaction to undo in this session.", title="Undo")
            return
        if self.fork_first(lambda _fork: self.action_undo_compaction()):
            return
        self.busy = "compacting"
        self.undo_worker(self.agent, self.memo)

    def action_toggle_pin(self) -> None:
        """Ctrl+T: pin or unpin the message selected in the history pane."""
        msg = self.query_one(HistoryView).selected_message()
        if msg is None or msg.id is None:
            self.notify(
                "Nothing to pin: select a message in the history pane first (Ctrl+G or Tab "
                "to reach it, then ↑ ↓), then press Ctrl+T.",
                title="Pin",
            )
            return
        if self._refuse_when_busy() or self.agent is None:
            return
        message_id, pinned = msg.id, not msg.pinned
        if self.fork_first(lambda fork: self._pin(fork.messages[message_id], pinned)):
            return
        self._pin(message_id, pinned)

    def _pin(self, message_id: int, pinned: bool) -> None:
        if self._refuse_when_busy() or self.agent is None:
            return
        self.busy = "compacting"
        self.pin_worker(self.agent, self.memo, message_id, pinned)

    # ------------------------------------------------------------------ other screens
    def action_sessions(self) -> None:
        if self._refuse_when_busy():
            return
        app = self.ctx_app
        workspace = str(
            self.agent.workspace if self.agent and self.agent.workspace else app.workspace
        )
        fixed = app.workspace_label
        label = (lambda _path: fixed) if fixed else workspace_label
        self.app.push_screen(
            SessionsScreen(app.store, app.clock, self.session_id, workspace, label, app.settings),
            self._resume,
        )

    def _resume(self, session_id: int | None) -> None:
        if session_id is None or session_id == self.session_id or self.busy is not None:
            return
        self.open(session_id)

    def action_keys(self) -> None:
        self.app.push_screen(KeysModal([(a.key, a.help) for a in MAIN_ACTIONS]))

    # The screens a key opens are imported when it is pressed: the workbench starts without
    # them (the compare screen alone brings the replay machinery and a plotting library).
    def action_archive(self) -> None:
        from tui.screens.archive_screen import ArchiveScreen

        if self.session_id is None:
            return
        # a recording's compactions are undone on a fork, with Ctrl+Z, never in place
        agent = self.agent
        writable = agent is not None and self.busy is None and not agent.session.recorded
        undo = agent.uncompact if agent is not None and writable else None
        self.app.push_screen(
            ArchiveScreen(self.ctx_app.store, self.session_id, undo), self._archive_closed
        )

    def _archive_closed(self, changed: bool | None) -> None:
        """A compaction was undone in the archive: history and gauge are redrawn."""
        if changed and self.agent is not None and self.busy is None:
            self.busy = "compacting"
            self.redraw_worker(self.agent, self.memo)

    def action_inspect(self) -> None:
        from tui.screens.inspector_screen import InspectorScreen

        if self.agent is not None:
            settings = self.agent.settings
            self.app.push_screen(
                InspectorScreen(self.agent, settings.context_window, settings.threshold_tokens)
            )

    def action_compare(self) -> None:
        from tui.screens.compare_screen import CompareScreen

        if self.agent is not None and self.session_id is not None:
            agent = self.agent
            self.app.push_screen(
                # Without a workspace a replay reads no CODE_LAW.md either (NO_FOLDER).
                CompareScreen(
                    agent.store, self.session_id, agent.settings, agent.workspace or NO_FOLDER
                )
            )

    def action_requests(self) -> None:
        if self.agent is not None and self.session_id is not None:
            agent = self.agent
            self.app.push_screen(RequestsScreen(agent.store, self.session_id, agent.settings))

    def action_report(self) -> None:
        if self._refuse_when_busy():
            return
        app = self.ctx_app
        self.app.push_screen(ReportScreen(app.store, app.settings), self._resume)

    def action_execution_log(self) -> None:
        from tui.screens.execution_log_screen import ExecutionLogScreen

        if self.agent is not None:
            self.app.push_screen(ExecutionLogScreen(self.agent.execution_log_path))

    def action_new_session(self) -> None:
        if self._refuse_when_busy():
            return
        self.open(None)

    # ------------------------------------------------------------------ panes
    def action_last_scratchpad(self) -> None:
        scratch = self.query_one(ScratchpadView)
        if scratch.showing_last:
            scratch.show_live()
        else:
            if not self.last_scratch:
                self.notify("No round has finished in this session yet.", title="Scratchpad")
            scratch.show_last(self.last_scratch)
            if self.has_class("-narrow"):
                self.pane = "scratch"
        self._update_subtitles()

    def action_toggle_maximize(self) -> None:
        if self.maximized is not None:
            self.minimize()
            return
        focused = self.focused
        pane = (
            next((a for a in focused.ancestors if a.has_class("pane")), None) if focused else None
        )
        if pane is None or not isinstance(pane, Widget):
            self.notify("Focus a pane first (1–4 or Tab), then F8.", title="Maximise")
            return
        self.maximized = pane

    def action_next_pane(self) -> None:
        panes = ("scratch", "history", "gauge")
        self.pane = panes[(panes.index(self.pane) + 1) % len(panes)]

    def action_interrupt(self) -> None:
        if self.busy != "round" or self.agent is None:
            return
        self.gate.cancel()
        self.agent.cancel()
        self.notify("Interrupting the round…", title="Esc")

    def stop_agent(self) -> None:
        """Cancel whatever runs (the app is closing): no worker may wait for an answer."""
        self.gate.cancel()
        if self.agent is not None:
            self.agent.cancel()

    def on_unmount(self) -> None:
        self.stop_agent()
        self.leave_session()

    # ------------------------------------------------------------------ permissions
    @on(PermissionGate.PermissionRequested)
    def _permission_requested(self, message: PermissionGate.PermissionRequested) -> None:
        reply = message.reply
        if reply.done.is_set():
            return
        modal = PermissionModal(reply.request)
        self._permission_modals[id(reply)] = modal

        def answered(answer: PermissionAnswer | None) -> None:
            self._permission_modals.pop(id(reply), None)
            reply.answer_with(answer or "deny")

        self.app.push_screen(modal, answered)

    @on(PermissionGate.PermissionWithdrawn)
    def _permission_withdrawn(self, message: PermissionGate.PermissionWithdrawn) -> None:
        reply: PermissionReply = message.reply
        modal = self._permission_modals.pop(id(reply), None)
        if modal is not None and self.app.screen is modal:
            modal.dismiss("deny")
