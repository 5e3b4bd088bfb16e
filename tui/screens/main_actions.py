"""The main screen's actions (keys and command palette) and its permission dialogs.

A part :class:`~tui.screens.main_screen.MainScreen` holds (:class:`MainActions`, handed the
screen): compact now (the cut by hand, F5, and its preview), undo, pin, sessions, archive,
context inspector, the last scratchpad, the narrow layout's pane switch, new session,
interrupt; and the bridge between the agent's blocking permission questions and
:class:`~tui.screens.permission_modal.PermissionModal`. Every action is declared once in
:data:`MAIN_ACTIONS` (its key, footer label and palette entry).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from textual.widget import Widget

from engine.context.history import CompactionDraft, CompactionResult
from engine.models import Message
from engine.session.workspace import NO_FOLDER
from engine.terminal_text import plural
from tools.base import PermissionAnswer
from tui.bridge import PermissionGate, PermissionReply
from tui.formatting import round_span, tokens, workspace_label
from tui.widgets.chat_input import ChatInput
from tui.widgets.history_view import HistoryLayout, HistoryView, cut_mark_index, history_blocks
from tui.widgets.scratchpad_view import ScratchpadView

if TYPE_CHECKING:
    from engine.store.forking import Fork
    from tui.screens.compact_preview_modal import Commit, Regenerate
    from tui.screens.main_screen import MainScreen
    from tui.screens.permission_modal import PermissionModal
    from tui.widgets.compact_bar import CompactBar


def compact_bars(screen: MainScreen) -> list[CompactBar]:
    """The compaction bar, once mounted (after the first session's frame: its module is
    imported then, not with the workbench)."""
    from tui.widgets.compact_bar import CompactBar

    return list(screen.query(CompactBar).results(CompactBar))


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


class MainActions:
    """The main screen's actions (its keys and palette entries), the compaction cut by hand
    (F5) and the permission dialogs: a part :class:`~tui.screens.main_screen.MainScreen`
    holds, handed the screen; the screen's ``action_*`` methods and message handlers are
    one-line calls into it."""

    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen
        self.cutting = False
        """F5 is on: the compaction bar is shown and the history shows the cut by hand."""
        self.cut_base: HistoryLayout | None = None
        """The history as it was before F5 (drawn again when the cut is left)."""
        self.manual_keep: int | None = None
        """The rounds kept by the compaction by hand being previewed (Ctrl+E)."""
        self._permission_modals: dict[int, PermissionModal] = {}

    def check(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # False hides a key that does nothing here (F7 in the wide layout, Esc between
        # rounds); None shows it disabled (kept in the palette, left out of the footer). Keys
        # refused while the agent works stay active: the action says why.
        screen = self.screen
        if self.cutting and action not in ("keys", "toggle_maximize"):
            return False  # the compaction bar's keys are the ones that matter now
        if action == "next_pane":
            return screen.has_class("-narrow")
        if action == "interrupt":
            return screen.busy == "round"
        if (
            action in ("archive", "inspect", "execution_log", "compare", "requests")
            and screen.agent is None
        ):
            return None
        if action == "undo_compaction":
            return True if screen.undoable is not None else None
        if action == "toggle_pin":
            # In the footer while a history message is selected (cursor moves redraw it).
            return True if screen.query_one(HistoryView).selected_message() else None
        return True

    def refuse_when_busy(self) -> bool:
        screen = self.screen
        if screen.busy is None and screen.agent is not None:
            return False
        doing = {
            "round": "a round is running; wait for its answer or press Esc to interrupt it",
            "compacting": "a compaction is running; wait for it to finish",
        }.get(screen.busy or "", "the session is still opening; wait a moment")
        screen.notify(f"Not now: {doing}.", title="Busy", severity="warning")
        return True

    # ------------------------------------------------------------------ compaction
    def compact(self) -> None:
        """F5: show the cut in the history pane and the compaction bar (Enter compacts)."""
        screen = self.screen
        if self.refuse_when_busy():
            return
        history = screen.query_one(HistoryView)
        layout = history.layout_data
        if layout is None:
            return
        groups = layout.history.rounds()
        rounds = len(groups)
        if rounds == 0:
            screen.notify("Nothing to compact yet: no round is in the history.", title="Compact")
            return
        self.cut_base = layout
        self.cutting = True
        if screen.has_class("-narrow"):
            screen.pane = "history"
        keep = default_keep(groups)
        screen.with_compact_bar(lambda bar: bar.start(rounds, keep))

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

    def cut_moved(self, event: CompactBar.CutMoved) -> None:
        screen = self.screen
        layout = self.manual_layout(event.keep)
        if layout is None:
            return
        history = screen.query_one(HistoryView)
        blocks = history_blocks(layout, screen.memo)
        history.show(layout, blocks, scroll_end=False)
        mark = cut_mark_index(blocks)
        if mark is not None:
            history.scroll_to_region(
                history.block_region(mark), animate=False, immediate=True, center=True
            )
        for bar in compact_bars(screen):
            bar.describe(cut_plan(layout))

    def _leave_cut(self) -> None:
        """Back from the cut: the bar goes, the history shows the strategy's own marks."""
        screen = self.screen
        self.cutting = False
        for bar in compact_bars(screen):
            bar.display = False
        if self.cut_base is not None:
            screen.query_one(HistoryView).show(
                self.cut_base, history_blocks(self.cut_base, screen.memo), scroll_end=False
            )
        self.cut_base = None
        screen.query_one(ChatInput).focus()

    def cut_cancelled(self) -> None:
        screen = self.screen
        self._leave_cut()
        screen.notify("Compaction cancelled; nothing was changed.", title="Compact")

    def cut_confirmed(self, event: CompactBar.Confirmed) -> None:
        screen = self.screen
        self._leave_cut()
        if screen.agent is None or screen.busy is not None:
            return
        if screen.session_workers.fork_first(lambda fork: self._cut_confirmed_on(fork, event)):
            return
        screen.busy = "compacting"
        self.manual_keep = event.keep
        if event.edit:
            screen.session_workers.prepare_worker(screen.agent, event.focus, event.keep)
        else:
            screen.session_workers.compact_now_worker(
                screen.agent, screen.memo, event.focus, event.keep
            )

    def _cut_confirmed_on(self, fork: Fork, event: CompactBar.Confirmed) -> None:
        """The cut asked of a recording, on the fork just made for it: the fork stays only if
        a compaction is stored (issue 39: a change that does nothing makes no fork)."""
        self.screen.trial_fork = fork
        self.cut_confirmed(event)

    def prepared(self, draft: CompactionDraft | CompactionResult) -> None:
        screen = self.screen
        screen.busy = None
        if isinstance(draft, CompactionResult):
            screen.notify(
                draft.compaction.error or "nothing to compact",
                title="Nothing to compact",
                severity="warning",
            )
            screen.session_workers.drop_trial_fork()
            return
        if screen.agent is None:
            return
        from tui.screens.compact_preview_modal import CompactPreviewModal  # when first asked

        screen.app.push_screen(
            CompactPreviewModal(draft, screen.agent.strategy.name),
            lambda choice: self._preview_answer(draft, choice),
        )

    def _preview_answer(self, draft: CompactionDraft, choice: Commit | Regenerate | None) -> None:
        from tui.screens.compact_preview_modal import Regenerate

        screen = self.screen
        if choice is None:
            screen.notify("Compaction abandoned; nothing was changed.", title="Compaction")
            screen.session_workers.drop_trial_fork()
        elif isinstance(choice, Regenerate):
            if screen.agent is not None and screen.busy is None:
                screen.busy = "compacting"
                screen.session_workers.prepare_worker(screen.agent, choice.focus, self.manual_keep)
        elif screen.agent is not None and screen.busy is None:
            screen.busy = "compacting"
            screen.session_workers.compact_worker(screen.agent, screen.memo, draft, choice.content)

    def undo_compaction(self) -> None:
        """Ctrl+Z: the same as the archive's undo and ``ctxscope uncompact``."""
        screen = self.screen
        if self.refuse_when_busy():
            return
        if screen.undoable is None or screen.agent is None:
            screen.notify("No compaction to undo in this session.", title="Undo")
            return
        if screen.session_workers.fork_first(lambda _fork: self.undo_compaction()):
            return
        screen.busy = "compacting"
        screen.session_workers.undo_worker(screen.agent, screen.memo)

    def toggle_pin(self) -> None:
        """Ctrl+T: pin or unpin the message selected in the history pane."""
        screen = self.screen
        msg = screen.query_one(HistoryView).selected_message()
        if msg is None or msg.id is None:
            screen.notify(
                "Nothing to pin: select a message in the history pane first (Ctrl+G or Tab "
                "to reach it, then ↑ ↓), then press Ctrl+T.",
                title="Pin",
            )
            return
        if self.refuse_when_busy() or screen.agent is None:
            return
        message_id, pinned = msg.id, not msg.pinned
        if screen.session_workers.fork_first(
            lambda fork: self._pin(fork.messages[message_id], pinned)
        ):
            return
        self._pin(message_id, pinned)

    def _pin(self, message_id: int, pinned: bool) -> None:
        screen = self.screen
        if self.refuse_when_busy() or screen.agent is None:
            return
        screen.busy = "compacting"
        screen.session_workers.pin_worker(screen.agent, screen.memo, message_id, pinned)

    # ------------------------------------------------------------------ other screens
    def sessions(self) -> None:
        screen = self.screen
        if self.refuse_when_busy():
            return
        app = screen.ctx_app
        workspace = str(
            screen.agent.workspace if screen.agent and screen.agent.workspace else app.workspace
        )
        fixed = app.workspace_label
        label = (lambda _path: fixed) if fixed else workspace_label
        from tui.screens.sessions_screen import SessionsScreen  # the rest of the screens (the
        # sessions, requests and report screens, the compaction preview) load when first opened

        screen.app.push_screen(
            SessionsScreen(app.store, app.clock, screen.session_id, workspace, label, app.settings),
            self._resume,
        )

    def _resume(self, session_id: int | None) -> None:
        screen = self.screen
        if session_id is None or session_id == screen.session_id or screen.busy is not None:
            return
        screen.open(session_id)

    def keys(self) -> None:
        from tui.screens.keys_modal import KeysModal  # on first use: not in the first frame

        screen = self.screen
        screen.app.push_screen(KeysModal([(a.key, a.help) for a in MAIN_ACTIONS]))

    # The screens a key opens are imported when it is pressed: the workbench starts without
    # them (the compare screen alone brings the replay machinery and a plotting library).
    def archive(self) -> None:
        screen = self.screen
        from tui.screens.archive_screen import ArchiveScreen

        if screen.session_id is None:
            return
        # a recording's compactions are undone on a fork, with Ctrl+Z, never in place
        agent = screen.agent
        writable = agent is not None and screen.busy is None and not agent.session.recorded
        undo = agent.uncompact if agent is not None and writable else None
        screen.app.push_screen(
            ArchiveScreen(screen.ctx_app.store, screen.session_id, undo), self._archive_closed
        )

    def _archive_closed(self, changed: bool | None) -> None:
        """A compaction was undone in the archive: history and gauge are redrawn."""
        screen = self.screen
        if changed and screen.agent is not None and screen.busy is None:
            screen.busy = "compacting"
            screen.session_workers.redraw_worker(screen.agent, screen.memo)

    def inspect(self) -> None:
        screen = self.screen
        from tui.screens.inspector_screen import InspectorScreen

        if screen.agent is not None:
            settings = screen.agent.settings
            screen.app.push_screen(
                InspectorScreen(screen.agent, settings.context_window, settings.threshold_tokens)
            )

    def compare(self) -> None:
        screen = self.screen
        from tui.screens.compare_screen import CompareScreen

        if screen.agent is not None and screen.session_id is not None:
            agent = screen.agent
            screen.app.push_screen(
                # Without a workspace a replay reads no CODE_LAW.md either (NO_FOLDER).
                CompareScreen(
                    agent.store, screen.session_id, agent.settings, agent.workspace or NO_FOLDER
                )
            )

    def requests(self) -> None:
        screen = self.screen
        if screen.agent is not None and screen.session_id is not None:
            from tui.screens.requests_screen import RequestsScreen

            agent = screen.agent
            screen.app.push_screen(RequestsScreen(agent.store, screen.session_id, agent.settings))

    def report(self) -> None:
        screen = self.screen
        if self.refuse_when_busy():
            return
        from tui.screens.report_screen import ReportScreen

        app = screen.ctx_app
        screen.app.push_screen(ReportScreen(app.store, app.settings), self._resume)

    def execution_log(self) -> None:
        screen = self.screen
        from tui.screens.execution_log_screen import ExecutionLogScreen

        if screen.agent is not None:
            screen.app.push_screen(ExecutionLogScreen(screen.agent.execution_log_path))

    def new_session(self) -> None:
        screen = self.screen
        if self.refuse_when_busy():
            return
        screen.open(None)

    # ------------------------------------------------------------------ panes
    def last_scratchpad(self) -> None:
        screen = self.screen
        scratch = screen.query_one(ScratchpadView)
        if scratch.showing_last:
            scratch.show_live()
        else:
            if not screen.last_scratch:
                screen.notify("No round has finished in this session yet.", title="Scratchpad")
            scratch.show_last(screen.last_scratch)
            if screen.has_class("-narrow"):
                screen.pane = "scratch"
        screen.session_workers.update_subtitles()

    def toggle_maximize(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
            return
        focused = screen.focused
        pane = (
            next((a for a in focused.ancestors if a.has_class("pane")), None) if focused else None
        )
        if pane is None or not isinstance(pane, Widget):
            screen.notify("Focus a pane first (1–4 or Tab), then F8.", title="Maximise")
            return
        screen.maximized = pane

    def next_pane(self) -> None:
        screen = self.screen
        panes = ("scratch", "history", "gauge")
        screen.pane = panes[(panes.index(screen.pane) + 1) % len(panes)]

    def interrupt(self) -> None:
        screen = self.screen
        if screen.busy != "round" or screen.agent is None:
            return
        screen.gate.cancel()
        screen.agent.cancel()
        screen.notify("Interrupting the round…", title="Esc")

    def stop_agent(self) -> None:
        """Cancel whatever runs (the app is closing): no worker may wait for an answer."""
        screen = self.screen
        screen.gate.cancel()
        if screen.agent is not None:
            screen.agent.cancel()

    # ------------------------------------------------------------------ permissions
    def permission_requested(self, message: PermissionGate.PermissionRequested) -> None:
        screen = self.screen
        reply = message.reply
        if reply.done.is_set():
            return
        from tui.screens.permission_modal import PermissionModal  # when a tool first asks

        modal = PermissionModal(reply.request)
        self._permission_modals[id(reply)] = modal

        def answered(answer: PermissionAnswer | None) -> None:
            self._permission_modals.pop(id(reply), None)
            reply.answer_with(answer or "deny")

        screen.app.push_screen(modal, answered)

    def permission_withdrawn(self, message: PermissionGate.PermissionWithdrawn) -> None:
        screen = self.screen
        reply: PermissionReply = message.reply
        modal = self._permission_modals.pop(id(reply), None)
        if modal is not None and screen.app.screen is modal:
            modal.dismiss("deny")
