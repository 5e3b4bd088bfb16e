"""MainScreen: chat, live scratchpad, compressed history and token gauge, side by side.

The screen owns the session's :class:`~engine.session.Agent` and holds its parts, each a class
of its own handed the screen: :class:`~tui.screens.main_actions.MainActions` (the keys and
palette entries, the cut by hand, the permission dialogs), :class:`~tui.screens.main_workers.
SessionWorkers` (the workers and what their results change), :class:`~tui.screens.pane_keys.
PaneKeys` and :class:`~tui.screens.strategy_switch.StrategySwitch`. Textual finds actions and
message handlers on the screen: each is a one-line call into its part. Everything slow runs in
thread workers (opening a session, a round, a compaction, listing workspace files); the panes
change only from engine events (through :class:`~tui.bridge.EngineBridge` and the
:class:`~tui.presenter.Presenter`) and from the workers' results, each a type of its own,
handled in one place (:meth:`~tui.screens.main_workers.SessionWorkers.state_changed`).

Below 110 columns the scratchpad, history and gauge share one column behind tabs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar, cast

from textual import events, on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message as TextualMessage
from textual.reactive import Reactive, reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, Static
from textual.worker import Worker

from engine.context.builder import BuiltContext
from engine.models import Message, Summary, TodoItem
from tui.bridge import EngineBridge, PermissionGate
from tui.first_frame import LOOK_EVERY, PANES_PARKED, PanesWait
from tui.formatting import one_line
from tui.presenter import Panes, Presenter
from tui.screens.main_actions import MAIN_ACTIONS, MainActions
from tui.screens.main_workers import SessionWorkers
from tui.screens.pane_keys import PaneKeys
from tui.screens.strategy_switch import StrategySwitch
from tui.session_loader import Resume, SessionView, layout_for
from tui.text_wrap import plain
from tui.widgets.block_view import Block, BlockView
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_view import ChatView, Example
from tui.widgets.history_view import BlockMemo, HistoryView, history_blocks
from tui.widgets.key_bar import KeyBar
from tui.widgets.scratchpad_view import ScratchpadView
from tui.widgets.session_header import SessionHeader
from tui.widgets.token_gauge import TokenGauge

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.widgets import Tabs

    from engine.session import Agent
    from engine.store.forking import Fork
    from tui.host import Workbench
    from tui.screens.search_modal import SearchHit
    from tui.widgets.compact_bar import CompactBar

PANES = ("scratch", "history", "gauge")


OPENING_REFRESHES = 5
"""Refreshes the end of an opening waits at most for the panes' rows (:meth:`MainScreen.
after_rows_drawn`)."""


def on_screen(widget: Widget) -> bool:
    """``widget`` and every widget around it are displayed (not ``display: none``)."""
    return all(node.display for node in widget.ancestors_with_self if isinstance(node, Widget))


FOOTER_DROP_ORDER = (
    "toggle_maximize",
    "new_session",
    "archive",
    "last_scratchpad",
    "inspect",
    "sessions",
    "compact",
)
"""Footer keys left out first when the line is too narrow (all stay on F1 and Ctrl+P)."""


class MainScreen(Screen[None]):
    """The workbench: the panes, the session's state, and the four parts it holds — its
    actions (:class:`MainActions`), its workers (:class:`SessionWorkers`), the keys between
    panes (:class:`PaneKeys`) and the strategy switch (:class:`StrategySwitch`)."""

    AUTO_FOCUS = "#input"
    """The text box has the focus from the start: Textual's default gave it to the chat first,
    and each move of the focus restyles the screen (the panes draw the focus within them)."""
    HORIZONTAL_BREAKPOINTS = [
        (0, "-narrow"),
        (110, "-wide"),
    ]
    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(a.key, a.action, a.label, show=a.show, id=a.binding_id, tooltip=a.help)
            for a in MAIN_ACTIONS
        ),
        *(
            Binding(
                f"alt+{n}",
                f"focus_pane('{name}')",
                name.title(),
                show=False,
                id=f"main.focus_{name}",
                tooltip=f"Jump to the {name} pane",
            )
            for n, name in enumerate(("chat", "scratch", "history", "gauge"), 1)
        ),
    ]

    busy: Reactive[str | None] = reactive[str | None](None, repaint=False)
    """What the agent is doing: ``opening``, ``round``, ``compacting``, or None when idle.
    (Its watcher changes the widgets that show it: a repaint of the whole screen at each
    change, Textual's default, drew the header and key bar again while the session opened.)"""
    pane: Reactive[str] = reactive("history")
    """The pane shown in the narrow layout: ``scratch``, ``history`` or ``gauge``."""

    class OpeningEnded(TextualMessage):
        """A session's opening ended — the session shown, or the failure said — and that
        frame is drawn (the app then resumes what it paused for start-up: :mod:`tui.gc_pause`)."""

    def __init__(self, resume: Resume, workbench: Workbench) -> None:
        # Made with the classes its first frame has (the pane shown, the layout for the
        # terminal's width): each class added after mounting restyles every widget of the
        # screen (~15 ms of CPU apiece, three of them before the first frame).
        super().__init__(classes=f"-pane-history {self.breakpoint_class()}".strip())
        self.resume = resume
        self.workbench = workbench
        """The application it runs in: the store, settings, workspace, opening a session."""
        self.actions = MainActions(self)
        self.session_workers = SessionWorkers(self)
        self.pane_keys = PaneKeys(self)
        self.strategy_switch = StrategySwitch(self)
        self.agent: Agent | None = None
        self.memo = BlockMemo()
        """Message blocks of the open session, reused across redraws."""
        self.session_id: int | None = None
        self.bridge = EngineBridge(self)
        self.gate = PermissionGate(self)
        self.last_scratch: list[Block] = []
        """The last finished round's scratchpad, for F6."""
        self.presenter: Presenter | None = None
        self.idle_built: BuiltContext | None = None
        """The idle request of the last measure, reused by the strategy's decision as one
        types (the history has not changed in between)."""
        self.undoable: int | None = None
        """The compaction Ctrl+Z would undo (the latest one not undone), or None."""
        self.after_fork: Callable[[Fork], None] | None = None
        """What a change asked of a recording does once its fork is open."""
        self.trial_fork: Fork | None = None
        """The fork made for a compaction asked of a recording, until one is stored: dropped
        if none is (:meth:`drop_trial_fork`)."""
        self.input_placeholder = ChatInput.PLACEHOLDER
        """The input box's hint when idle (a recording's says that typing forks it)."""
        self.panes_wait = PanesWait()
        """How long the panes wait for the first session (:mod:`tui.first_frame`)."""
        self._panes_timer: Timer | None = None
        self.resumed = False
        """The screen was shown once (its first resume restyles nothing: :meth:`on_event`)."""
        self.panes_shown = False
        """The panes are on screen (below it, not drawn, until the first session is there)."""
        self.files_asked = False
        """The workspace's files were asked for (once, after the first session's frame)."""
        self.session_shown = False
        """The opened session is on screen, drawn: its header, chat, history and gauge (what
        ``bench/bench_recorded_open.py`` waits for). False again while another one opens."""

    def breakpoint_class(self, width: int | None = None) -> str:
        """The layout class Textual gives this screen at ``width`` (the app's by default):
        ``-narrow`` or ``-wide`` (:attr:`HORIZONTAL_BREAKPOINTS`); "" outside a running app."""
        if width is None:
            try:
                width = self.app.size.width
            except RuntimeError:  # Textual's NoActiveAppError: a screen made outside an app
                return ""
        fitting = [name for least, name in sorted(self.HORIZONTAL_BREAKPOINTS) if width >= least]
        return fitting[-1] if fitting else ""

    @property
    def ctx_app(self) -> Workbench:
        return self.workbench

    # The parts' keys and commands (Textual finds actions and handlers on the screen)

    def action_cycle_pane(self) -> None:
        """Ctrl+G: the focus to the next pane (:meth:`PaneKeys.cycle_pane`)."""
        self.pane_keys.cycle_pane()

    def action_focus_pane(self, name: str) -> None:
        """Alt+1–4: jump to a pane (:meth:`PaneKeys.focus_pane`)."""
        self.pane_keys.focus_pane(name)

    def steer_typing(self, event: events.Key | events.Paste) -> None:
        """Called by the app before a key or paste reaches the focused widget
        (:meth:`PaneKeys.steer_typing`)."""
        self.pane_keys.steer_typing(event)

    def on_key(self, event: events.Key) -> None:
        self.pane_keys.key(event)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.ScreenResume) and not self.resumed:
            # The first resume comes right after the screen was mounted, every widget styled
            # then: restyling them all again (Textual's default) cost ~10 ms of the first frame.
            self.resumed = True
            event.refresh_styles = False
        await super().on_event(event)

    def strategy_commands(self) -> Iterable[SystemCommand]:
        """The palette's *Strategy: NAME* entries (:meth:`StrategySwitch.commands`)."""
        return self.strategy_switch.commands()

    # The parts' actions and handlers, where Textual looks for them: on the screen.

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.actions.check(action, parameters)

    def action_keys(self) -> None:
        self.actions.keys()

    def action_sessions(self) -> None:
        self.actions.sessions()

    def action_archive(self) -> None:
        self.actions.archive()

    def action_inspect(self) -> None:
        self.actions.inspect()

    def action_compact(self) -> None:
        self.actions.compact()

    def action_undo_compaction(self) -> None:
        self.actions.undo_compaction()

    def action_toggle_pin(self) -> None:
        self.actions.toggle_pin()

    def action_last_scratchpad(self) -> None:
        self.actions.last_scratchpad()

    def action_next_pane(self) -> None:
        self.actions.next_pane()

    def action_execution_log(self) -> None:
        self.actions.execution_log()

    def action_compare(self) -> None:
        self.actions.compare()

    def action_requests(self) -> None:
        self.actions.requests()

    def action_report(self) -> None:
        self.actions.report()

    def action_toggle_maximize(self) -> None:
        self.actions.toggle_maximize()

    def action_new_session(self) -> None:
        self.actions.new_session()

    def action_interrupt(self) -> None:
        self.actions.interrupt()

    # The compaction bar's messages, by their handlers' names: its module is imported once the
    # first session's frame is up (with_compact_bar), not with the workbench.
    def on_compact_bar_cut_moved(self, event: CompactBar.CutMoved) -> None:
        self.actions.cut_moved(event)

    def on_compact_bar_cancelled(self) -> None:
        self.actions.cut_cancelled()

    def on_compact_bar_confirmed(self, event: CompactBar.Confirmed) -> None:
        self.actions.cut_confirmed(event)

    @on(PermissionGate.PermissionRequested)
    def _permission_requested(self, message: PermissionGate.PermissionRequested) -> None:
        self.actions.permission_requested(message)

    @on(PermissionGate.PermissionWithdrawn)
    def _permission_withdrawn(self, message: PermissionGate.PermissionWithdrawn) -> None:
        self.actions.permission_withdrawn(message)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.session_workers.state_changed(event)

    # What the app, the watch and the parts ask of the screen

    def open(self, resume: Resume) -> None:
        """Open a session (or a new one: None) in place of this one."""
        self.session_workers.open(resume)

    def leave_session(self) -> None:
        self.session_workers.leave_session()

    def after_rows_drawn(self, then: Callable[[], None], refreshes: int = 1) -> None:
        """``then`` after the refresh that draws the panes' rows: a view given its blocks before
        its first layout wraps them on the resize after it (one row a block until then), so
        until the views on screen have wrapped, this waits for the next refresh (a few at
        most). The panes wait for the first session laid out (:mod:`tui.first_frame`), so its
        rows are wrapped when it is applied; but the refresh after they were brought up may
        come before the layout that places them (in about half the runs of
        ``bench/bench_recorded_open.py``), so while they are still below the screen this
        waits for the next one too."""
        if refreshes < OPENING_REFRESHES and (
            self.panes_parked()
            or not all(view.rows_ready for view in self.query(BlockView) if on_screen(view))
        ):
            self.call_after_refresh(self.after_rows_drawn, then, refreshes + 1)
            return
        then()

    def opening_drawn(self) -> None:
        """The frame after an opening worker ended is drawn (:meth:`SessionWorkers.state_changed`
        calls this after the refresh, through :meth:`after_rows_drawn`)."""
        self.session_shown = self.agent is not None
        self.post_message(self.OpeningEnded())
        if not self.query("#compact-bar"):
            self.call_after_refresh(self.with_compact_bar)  # after that frame, before any F5
        if not self.files_asked:
            # The workspace's files for the input's @file suggestions: nothing in the first
            # frame shows them, and listing a large workspace takes a while.
            self.files_asked = True
            self.session_workers.load_files()

    def with_compact_bar(self, then: Callable[[CompactBar], None] | None = None) -> None:
        """The compaction bar under the chat (F5), hidden until used: mounted after the first
        session's frame (no frame before shows it, and each widget composed up front costs the
        first one), or by an F5 that comes first; ``then`` runs with it once it is mounted."""
        found = self.query("#compact-bar")
        if found:
            if then is not None:
                then(cast("CompactBar", found.first()))
            return
        self.call_later(self._mount_compact_bar, then)

    async def _mount_compact_bar(self, then: Callable[[CompactBar], None] | None) -> None:
        from tui.widgets.compact_bar import CompactBar

        bar = self.query(CompactBar).first() if self.query(CompactBar) else None
        if bar is None:
            panes = self.query("#chat-pane")
            if not panes or not panes.first().is_attached:
                return  # the screen is being taken down (the app closes)
            bar = CompactBar(id="compact-bar")
            bar.display = False
            await panes.first().mount(bar)
        if then is not None:
            then(bar)

    def apply_view(self, view: SessionView, *, scroll_end: bool = True) -> None:
        self.session_workers.apply_view(view, scroll_end=scroll_end)

    def stop_agent(self) -> None:
        """Cancel whatever runs (the app is closing): no worker may wait for an answer."""
        self.actions.stop_agent()

    def on_unmount(self) -> None:
        self.stop_agent()
        self.leave_session()

    def _history_cursor_moved(self, _cursor: int | None) -> None:
        self.refresh_bindings()

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield SessionHeader(id="header")
        panes = Horizontal(id="panes")
        if not self.panes_shown:
            # Laid out, so each pane has its size when the session comes, but below the
            # screen, so not drawn until then (tui/first_frame.py).
            panes.styles.offset = (0, PANES_PARKED)
        with panes:
            with Vertical(id="chat-pane", classes="pane"):
                yield ChatView(id="chat")
                yield ChatInput(id="input")
            with Vertical(id="right"):
                if self.has_class("-narrow"):
                    yield self.pane_tabs()
                with Horizontal(id="work"):
                    with Vertical(id="scratch-pane", classes="pane"):
                        yield Static(id="todos")
                        yield ScratchpadView(id="scratch")
                    with Vertical(id="history-pane", classes="pane"):
                        yield Static(id="history-banner")
                        yield HistoryView(id="history")
                with Vertical(id="gauge-pane", classes="pane"):
                    yield TokenGauge(id="gauge")
        yield KeyBar(FOOTER_DROP_ORDER, id="keys")

    def on_mount(self) -> None:
        self.query_one("#chat-pane").border_title = "Chat"
        self.query_one("#scratch-pane").border_title = "Scratchpad · live"
        self.query_one("#history-pane").border_title = "History"
        self.query_one("#gauge-pane").border_title = "Token gauge"
        self.query_one("#history-banner").display = False
        self.show_todos([])
        self.presenter = Presenter(
            Panes(
                chat=self.query_one(ChatView),
                scratch=self.query_one(ScratchpadView),
                history=self.query_one(HistoryView),
                gauge=self.query_one(TokenGauge),
                show_todos=self.show_todos,
                show_banner=self.show_banner,
                reload_history=self.reload_history,
            ),
            notify=lambda m, t, s, d: self.notify(m, title=t, severity=s, timeout=d),
            take_text=self.bridge.take_text,
            forget_text=self.bridge.forget,
            todos=lambda: list(self.agent.todos) if self.agent else [],
        )
        # Ctrl+T (pin) is offered while a history message is selected: the footer follows.
        self.watch(self.query_one(HistoryView), "cursor", self._history_cursor_moved, init=False)
        self.query_one(ChatInput).focus()
        self.busy = "opening"
        # The panes wait for the session, for a moment (tui/first_frame.py): one paint shows
        # them with it.
        self.panes_wait.start()
        self._panes_timer = self.set_interval(LOOK_EVERY, self._panes_waited)
        self.open(self.resume)

    def _panes_waited(self) -> None:
        if self.panes_wait.over():
            self.show_panes()

    def panes_parked(self) -> bool:
        """The panes are laid out below the screen (waiting, or brought up since the last
        layout): not drawn."""
        return self.query_one("#panes").region.y >= PANES_PARKED

    def show_panes(self) -> None:
        """The panes on screen (once): with the first session, or without it once it took
        longer than :class:`~tui.first_frame.PanesWait` lets it."""
        if self._panes_timer is not None:
            self._panes_timer.stop()
            self._panes_timer = None
        if not self.panes_shown:
            self.panes_shown = True
            self.query_one("#panes").styles.offset = (0, 0)
            # The screen's next refresh lays them out in their place, and what waits for it
            # (call_after_refresh: after_rows_drawn) waits for that one: the panes' own request
            # reaches the screen a moment later, and a screen with nothing to do runs those
            # callbacks at once.
            self.refresh(layout=True)

    def pane_tabs(self) -> Tabs:
        """The narrow layout's tabs over the right column: composed only for a narrow terminal,
        mounted when one narrows (the wide layout never shows them, and each widget composed up
        front costs the first frame; Textual's Tabs are imported then too)."""
        from textual.widgets import Tab, Tabs

        tabs = Tabs(
            Tab("Scratchpad", id="tab-scratch"),
            Tab("History", id="tab-history"),
            Tab("Gauge", id="tab-gauge"),
            active=f"tab-{self.pane}",
            id="pane-tabs",
        )
        # the tabs show the pane F7 and Alt+1-4 chose; a focus there showed in colour only,
        # invisible in a plain capture (issue 39)
        tabs.can_focus = False
        return tabs

    def on_resize(self, event: events.Resize) -> None:
        narrow = self.breakpoint_class(event.size.width) == "-narrow"
        if narrow and not self.query("#pane-tabs"):
            self.query_one("#right").mount(self.pane_tabs(), before=self.query_one("#work"))
        # The breakpoint class (-narrow / -wide) decides whether F7 does anything: show it
        # only where it does, once the class has changed.
        self.call_after_refresh(self.refresh_bindings)

    def watch_pane(self, pane: str) -> None:
        for name in PANES:
            self.set_class(name == pane, f"-pane-{name}")
        for tabs in self.query("#pane-tabs"):
            cast("Tabs", tabs).active = f"tab-{pane}"

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        # by the handler's name: Textual's Tabs are imported only with the narrow layout's
        if event.tabs.id == "pane-tabs" and event.tab.id:
            self.pane = event.tab.id.removeprefix("tab-")

    def watch_busy(self, busy: str | None) -> None:
        # Runs from on_mount too (opening), when the children exist but is_mounted is False.
        box = self.query_one(ChatInput)
        # Typing works while the session opens (the screen is usable at once, however long
        # the session); only sending waits.
        box.disabled = busy == "compacting"
        box.refusal = {
            None: None,
            "opening": "The session is still opening; press Enter again in a moment.",
            "round": "A round is running: wait for its answer (Esc interrupts it).",
        }.get(busy, "Wait for the compaction to finish.")
        if box.refusal is not None:
            box.refusal += " Your text stays in the box."
        box.placeholder = {
            "opening": "Opening the session… (you can type already)",
            "compacting": "Compacting… (the input is blocked meanwhile)",
        }.get(busy or "", self.input_placeholder)
        self.show_compact_progress(busy == "compacting")
        # The scratchpad is wide while it has something to show (a round runs, or F6).
        self.set_class(busy == "round", "-round")
        self.refresh_bindings()
        if busy is None:
            box.focus()

    def show_compact_progress(self, shown: bool) -> None:
        """The bar over the history while a compaction runs: mounted by the first one, as no
        frame before needs it (each widget composed up front costs the first frame)."""
        found = self.query("#compact-progress")
        if found:
            found.first().display = shown
        elif shown and self.is_mounted:
            from textual.widgets import ProgressBar

            bar = ProgressBar(id="compact-progress", show_eta=False)
            self.query_one("#history-pane").mount(bar, before=self.query_one(HistoryView))

    def show_todos(self, todos: list[TodoItem]) -> None:
        widget = self.query_one("#todos", Static)
        widget.display = bool(todos)
        marks = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
        done = sum(1 for t in todos if t.status == "completed")
        lines = [f"Todo {done}/{len(todos)}"] + [f"{marks[t.status]} {t.content}" for t in todos]
        widget.update(plain("\n".join(lines)))  # the agent's words; "[x]" is not markup

    def show_banner(self, text: str, in_progress: bool) -> None:
        banner = self.query_one("#history-banner", Static)
        banner.update(plain(text))
        banner.display = bool(text)
        banner.set_class(in_progress, "-progress")

    def reload_history(self) -> None:
        """A compaction fired inside a round (budget rule or "prompt too long"): show its
        result now rather than when the round ends. (A manual compaction's worker redraws.)"""
        if self.agent is None or self.busy != "round":
            return
        layout = layout_for(self.agent, self.agent.store)
        self.query_one(HistoryView).show(layout, history_blocks(layout, self.memo))

    def action_search(self) -> None:
        history = self.query_one(HistoryView).layout_data
        if self.session_id is None or history is None:
            return
        from tui.screens.search_modal import SearchModal  # on first use: not in the first frame

        modal = SearchModal(self.ctx_app.store, self.session_id, history.history)
        self.app.push_screen(modal, self._found)

    def _found(self, hit: SearchHit | None) -> None:
        from tui.screens.detail_modal import DetailModal, parts_for_message

        if hit is None:
            return
        if hit.key is not None:
            self.action_jump_to(hit.key)
        elif hit.message is not None:
            title = f"Archived message · round {hit.message.meta.round} · {hit.message.role}"
            self.app.push_screen(DetailModal(title, parts_for_message(hit.message, None)))

    def action_jump_to(self, key: str) -> None:
        """Select a history item (``m<message id>`` / ``s<summary id>``), e.g. from the
        gauge's heaviest items."""
        history = self.query_one(HistoryView)
        for index, block in enumerate(history.blocks):
            data = block.data
            prefix = "m" if isinstance(data, Message) else "s"
            if isinstance(data, Message | Summary) and f"{prefix}{data.id}" == key:
                if self.has_class("-narrow"):
                    self.pane = "history"
                history.focus()
                history.cursor = index
                return

    # ------------------------------------------------------------------ input
    @on(ChatInput.Sent, "#input")
    def _sent(self, event: ChatInput.Sent) -> None:
        text = event.text.strip()
        if self.agent is None or self.busy is not None:  # ChatInput.refusal covers this
            return
        if self.session_workers.fork_first(lambda _fork: self._sent(event)):
            return  # a recording: the fork is opened, then this input is sent there
        if self.agent.workspace is None:
            # Recorded by another agent: the user gives the folder first (or none: no tool).
            self.session_workers.ask_for_workspace(lambda: self._start_round(text))
            return
        self._start_round(text)

    def _start_round(self, text: str) -> None:
        if self.agent is None or self.busy is not None:
            return
        self.gate.reset()
        title = "" if self.query_one(SessionHeader).info.title else one_line(text, 60)
        self.busy = "round"
        self.session_workers.round_worker(self.agent, self.memo, text, title)

    @on(Input.Changed, "#input")
    def _typing(self, event: Input.Changed) -> None:
        if self.presenter is not None:
            self.presenter.typing(len(event.value))
        if self.agent is not None and self.busy is None:
            self.session_workers.decide_worker(self.agent, event.value, self.idle_built)

    # ------------------------------------------------------------------ engine messages
    @on(EngineBridge.EventReceived)
    def _engine_event(self, message: EngineBridge.EventReceived) -> None:
        if self.presenter is not None:
            self.presenter.apply(message.event)
            if message.event.type in ("round_finished", "round_interrupted"):
                self.session_workers.update_subtitles()

    @on(EngineBridge.TextStreamed)
    def _text(self, message: EngineBridge.TextStreamed) -> None:
        if self.presenter is not None:
            self.presenter.text_streamed(message.round_index, message.step)

    @on(BlockView.BlockActivated, "#chat, #scratch")
    def _open_text_block(self, event: BlockView.BlockActivated) -> None:
        block = event.block
        if isinstance(block.data, Example):
            box = self.query_one(ChatInput)
            box.value = block.data.text
            box.cursor_position = len(box.value)
            box.focus()
            return
        from tui.screens.detail_modal import DetailModal, DetailPart

        title = "".join(text for text, _ in block.header).strip() or "Text"
        self.app.push_screen(DetailModal(title, [DetailPart(title, block.body)]))

    @on(BlockView.BlockActivated, "#history")
    def _open_block(self, event: BlockView.BlockActivated) -> None:
        # The detail dialog (and Textual's TextArea) is imported when first opened.
        from tui.screens.detail_modal import DetailModal, parts_for_message, parts_for_summary

        data = event.block.data
        if isinstance(data, Summary):
            self.app.push_screen(DetailModal("Summary (L3)", parts_for_summary(data)))
        elif isinstance(data, Message) and self.agent is not None:
            observation = None
            if data.role == "tool" and data.meta.tool_use_id:
                observation = self.agent.store.observation_for(
                    self.agent.session_id, data.meta.tool_use_id
                )
            heading = f"History message · round {data.meta.round} · {data.role}"
            self.app.push_screen(DetailModal(heading, parts_for_message(data, observation)))
