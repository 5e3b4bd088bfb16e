"""MainScreen: chat, live scratchpad, compressed history and token gauge, side by side.

The screen owns the session's :class:`~engine.session.Agent`. Everything slow runs in thread
workers (opening a session, a round, a compaction, listing workspace files); the panes change
only from engine events (through :class:`~tui.bridge.EngineBridge` and the
:class:`~tui.presenter.Presenter`) and from the workers' results, handled in one place,
:meth:`MainScreen.on_worker_state_changed`, keyed on the worker group.

Below 110 columns the scratchpad, history and gauge share one column behind tabs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.reactive import Reactive, reactive
from textual.widgets import Input, ProgressBar, Static, Tab, Tabs
from textual.worker import Worker, WorkerState

from engine.context.builder import BuiltContext
from engine.context.history import CompactionDraft, CompactionResult
from engine.models import Compaction, Message, Summary, TodoItem
from engine.params import describe_params, strategy_params
from tui.bridge import EngineBridge, PermissionGate
from tui.formatting import one_line, plural, tokens, workspace_label
from tui.gauge_state import Decision
from tui.presenter import Panes, Presenter
from tui.screens.detail_modal import (
    DetailModal,
    DetailPart,
    parts_for_message,
    parts_for_summary,
)
from tui.screens.main_actions import MAIN_ACTIONS, MainActions
from tui.screens.search_modal import SearchHit, SearchModal
from tui.session_loader import (
    OpenedSession,
    Resume,
    SessionView,
    decide,
    forget_if_empty,
    is_offline,
    last_scratchpad_blocks,
    layout_for,
    measure,
    save_grants,
)
from tui.widgets.block_view import Block, BlockView
from tui.widgets.chat_input import ChatInput, workspace_files
from tui.widgets.chat_view import ChatView, Example
from tui.widgets.compact_bar import CompactBar, FocusInput
from tui.widgets.history_view import BlockMemo, HistoryLayout, HistoryView, history_blocks
from tui.widgets.key_bar import KeyBar
from tui.widgets.scratchpad_view import ScratchpadView
from tui.widgets.session_header import HeaderInfo, SessionHeader
from tui.widgets.token_gauge import TokenGauge

if TYPE_CHECKING:
    from engine.session import Agent
    from tui.app import CtxscopeApp

PANES = ("scratch", "history", "gauge")
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


@dataclass
class RoundDone:
    """What a round worker hands back."""

    view: SessionView
    title: str
    last_scratch: list[Block]


class MainScreen(MainActions):
    """The workbench."""

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

    busy: Reactive[str | None] = reactive[str | None](None)
    """What the agent is doing: ``opening``, ``round``, ``compacting``, or None when idle."""
    pane: Reactive[str] = reactive("history")
    """The pane shown in the narrow layout: ``scratch``, ``history`` or ``gauge``."""

    def __init__(self, resume: Resume) -> None:
        super().__init__()
        self.resume = resume
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
        self._permission_modals: dict[int, Any] = {}
        self.cutting = False
        """F5 is on: the compaction bar is shown and the history shows the cut by hand."""
        self.cut_base: HistoryLayout | None = None
        """The history as it was before F5 (drawn again when the cut is left)."""
        self.manual_keep: int | None = None
        """The rounds kept by the compaction by hand being previewed (Ctrl+E)."""
        self.undoable: int | None = None
        """The compaction Ctrl+Z would undo (the latest one not undone), or None."""

    @property
    def ctx_app(self) -> CtxscopeApp:
        from tui.app import CtxscopeApp

        app = self.app
        assert isinstance(app, CtxscopeApp)
        return app

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield SessionHeader(id="header")
        with Horizontal(id="panes"):
            with Vertical(id="chat-pane", classes="pane"):
                yield ChatView(id="chat")
                yield ChatInput(id="input")
                yield CompactBar(id="compact-bar")
            with Vertical(id="right"):
                yield Tabs(
                    Tab("Scratchpad", id="tab-scratch"),
                    Tab("History", id="tab-history"),
                    Tab("Gauge", id="tab-gauge"),
                    active="tab-history",
                    id="pane-tabs",
                )
                with Horizontal(id="work"):
                    with Vertical(id="scratch-pane", classes="pane"):
                        yield Static(id="todos")
                        yield ScratchpadView(id="scratch")
                    with Vertical(id="history-pane", classes="pane"):
                        yield Static(id="history-banner")
                        yield ProgressBar(id="compact-progress", show_eta=False)
                        yield HistoryView(id="history")
                with Vertical(id="gauge-pane", classes="pane"):
                    yield TokenGauge(id="gauge")
        yield KeyBar(FOOTER_DROP_ORDER, id="keys")

    def on_mount(self) -> None:
        self.query_one("#chat-pane").border_title = "Chat"
        self.query_one("#scratch-pane").border_title = "Scratchpad · live"
        self.query_one("#history-pane").border_title = "History"
        self.query_one("#gauge-pane").border_title = "Token gauge"
        self.query_one("#compact-progress").display = False
        self.query_one("#history-banner").display = False
        self.query_one(CompactBar).display = False
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
        self.set_class(True, "-pane-history")
        # Ctrl+T (pin) is offered while a history message is selected: the footer follows.
        self.watch(self.query_one(HistoryView), "cursor", self._history_cursor_moved, init=False)
        self.query_one(ChatInput).focus()
        # Draw the screen first: the open worker holds the GIL for a while on a long session.
        self.busy = "opening"
        self.call_after_refresh(self._open_after_first_frame)

    def _open_after_first_frame(self) -> None:
        self.open(self.resume)
        self.load_files()

    def on_resize(self, event: events.Resize) -> None:
        # The breakpoint class (-narrow / -wide) decides whether F7 does anything: show it
        # only where it does, once the class has changed.
        self.call_after_refresh(self.refresh_bindings)

    def watch_pane(self, pane: str) -> None:
        for name in PANES:
            self.set_class(name == pane, f"-pane-{name}")
        if self.is_mounted:
            self.query_one(Tabs).active = f"tab-{pane}"

    @on(Tabs.TabActivated, "#pane-tabs")
    def _tab(self, event: Tabs.TabActivated) -> None:
        if event.tab.id:
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
        }.get(busy or "", ChatInput.PLACEHOLDER)
        self.query_one("#compact-progress").display = busy == "compacting"
        # The scratchpad is wide while it has something to show (a round runs, or F6).
        self.set_class(busy == "round", "-round")
        self.refresh_bindings()
        if busy is None:
            box.focus()

    def show_todos(self, todos: list[TodoItem]) -> None:
        widget = self.query_one("#todos", Static)
        widget.display = bool(todos)
        marks = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
        done = sum(1 for t in todos if t.status == "completed")
        lines = [f"Todo {done}/{len(todos)}"] + [f"{marks[t.status]} {t.content}" for t in todos]
        widget.update("\n".join(lines))

    def show_banner(self, text: str, in_progress: bool) -> None:
        banner = self.query_one("#history-banner", Static)
        banner.update(text)
        banner.display = bool(text)
        banner.set_class(in_progress, "-progress")

    def reload_history(self) -> None:
        """A compaction fired inside a round (budget rule or "prompt too long"): show its
        result now rather than when the round ends. (A manual compaction's worker redraws.)"""
        if self.agent is None or self.busy != "round":
            return
        layout = layout_for(self.agent, self.agent.store)
        self.query_one(HistoryView).show(layout, history_blocks(layout, self.memo))

    # ------------------------------------------------------------------ workers
    def leave_session(self) -> None:
        """The open session is being left: if nothing was ever sent in it, it is not kept
        (every launch used to store an empty "(untitled)" session)."""
        if self.session_id is not None and self.busy is None:
            forget_if_empty(self.ctx_app.store, self.session_id)

    def open(self, resume: Resume) -> None:
        if resume != self.session_id:
            self.leave_session()
        self.busy = "opening"
        self.query_one(HistoryView).loading = True
        self.open_worker(resume)

    @work(thread=True, exclusive=True, group="open", exit_on_error=False)
    def open_worker(self, resume: Resume) -> OpenedSession:
        app = self.ctx_app
        try:
            return app.open_session(resume, self.bridge, self.gate)
        finally:
            app.store.db.close()

    @work(thread=True, exclusive=True, group="round", exit_on_error=False)
    def round_worker(self, agent: Agent, memo: BlockMemo, text: str, title: str) -> RoundDone:
        try:
            if title:
                agent.store.update_session(agent.session_id, title=title)
            agent.run(text)
            save_grants(agent)
            return RoundDone(
                measure(agent, memo), title, last_scratchpad_blocks(agent.store, agent)
            )
        finally:
            agent.store.db.close()

    @work(thread=True, exclusive=True, group="prepare", exit_on_error=False)
    def prepare_worker(
        self, agent: Agent, focus: str, keep: int | None
    ) -> CompactionDraft | CompactionResult:
        try:
            return agent.prepare_compaction(focus or None, dry_run=True, keep_rounds=keep)
        finally:
            agent.store.db.close()

    @work(thread=True, exclusive=True, group="compact", exit_on_error=False)
    def compact_now_worker(
        self, agent: Agent, memo: BlockMemo, focus: str, keep: int
    ) -> tuple[CompactionResult, SessionView]:
        try:
            result = agent.compact(focus or None, keep_rounds=keep)
            return result, measure(agent, memo)
        finally:
            agent.store.db.close()

    @work(thread=True, exclusive=True, group="undo", exit_on_error=False)
    def undo_worker(self, agent: Agent, memo: BlockMemo) -> tuple[Compaction, SessionView]:
        try:
            undone = agent.uncompact()
            return undone, measure(agent, memo)
        finally:
            agent.store.db.close()

    @work(thread=True, exclusive=True, group="compact", exit_on_error=False)
    def compact_worker(
        self, agent: Agent, memo: BlockMemo, draft: CompactionDraft, content: str | None
    ) -> tuple[CompactionResult, SessionView]:
        try:
            result = agent.commit_compaction(draft, content)
            return result, measure(agent, memo)
        finally:
            agent.store.db.close()

    @work(thread=True, exclusive=True, group="pin", exit_on_error=False)
    def pin_worker(
        self, agent: Agent, memo: BlockMemo, message_id: int, pinned: bool
    ) -> tuple[bool, SessionView]:
        try:
            agent.pin([message_id], pinned)
            return pinned, measure(agent, memo)
        finally:
            agent.store.db.close()

    @work(thread=True, exclusive=True, group="redraw", exit_on_error=False)
    def redraw_worker(self, agent: Agent, memo: BlockMemo) -> SessionView:
        try:
            return measure(agent, memo)
        finally:
            agent.store.db.close()

    @work(thread=True, exclusive=True, group="decide", exit_on_error=False)
    def decide_worker(self, agent: Agent, text: str, built: BuiltContext | None) -> Decision:
        try:
            return decide(agent, text, built)
        finally:
            agent.store.db.close()

    @work(thread=True, exclusive=True, group="files", exit_on_error=False)
    def load_files(self) -> list[str]:
        return workspace_files(self.ctx_app.workspace)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker: Worker[Any] = event.worker
        group = worker.group
        if event.state == WorkerState.ERROR:
            self._worker_failed(group, worker.error)
        elif event.state == WorkerState.SUCCESS and worker.result is not None:
            result = worker.result
            if group == "open":
                self._opened(result)
            elif group == "round":
                self._round_done(result)
            elif group == "prepare":
                self._prepared(result)
            elif group == "redraw":
                self._apply_view(result, scroll_end=False)
            elif group == "compact":
                self._compacted(*result)
            elif group == "undo":
                self._undone(*result)
            elif group == "pin":
                self._pinned(*result)
            elif group == "decide":
                if self.busy is None and self.presenter is not None:
                    self.presenter.decided(result)
            elif group == "files":
                self.query_one(ChatInput).workspace_suggester.set_files(result)
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            if group in ("open", "round", "prepare", "compact", "redraw", "undo", "pin"):
                self.busy = None
                self.query_one(HistoryView).loading = False

    def _worker_failed(self, group: str, error: BaseException | None) -> None:
        what = {
            "open": "Cannot open the session",
            "round": "The round stopped",
            "prepare": "Cannot prepare the compaction",
            "redraw": "Cannot redraw the session",
            "compact": "Compaction failed",
            "undo": "Cannot undo the compaction",
            "pin": "Cannot pin the message",
            "files": "Cannot list the workspace files",
            "decide": "Cannot work out the strategy's decision",
        }.get(group, "Something failed")
        detail = f"{type(error).__name__}: {error}" if error else "unknown error"
        self.notify(detail, title=what, severity="error", timeout=10)

    # ------------------------------------------------------------------ results
    def _opened(self, opened: OpenedSession) -> None:
        self.agent = opened.agent
        self.memo = opened.memo
        self.session_id = opened.agent.session_id
        session = opened.session
        label = self.ctx_app.workspace_label or workspace_label(opened.workspace)
        self.query_one(SessionHeader).info = HeaderInfo(
            session_id=session.id,
            title=session.title,
            workspace=label,
            provider=session.provider,
            model=session.model,
            strategy=opened.agent.strategy.name,
            offline=is_offline(session.provider),
            numbers=describe_params(strategy_params(opened.agent.settings, session.strategy)),
        )
        self.query_one(ChatView).load(opened.chat, offline=is_offline(session.provider))
        self.query_one(ScratchpadView).end_round()
        self.last_scratch = opened.last_scratch
        self.show_banner("", False)
        self._apply_view(opened.view)
        for notice in opened.notices:
            self.notify(notice, title="Workspace", severity="warning")

    def _apply_view(self, view: SessionView, *, scroll_end: bool = True) -> None:
        history = self.query_one(HistoryView)
        history.show(view.layout, view.blocks, scroll_end=scroll_end)
        assert self.presenter is not None
        self.idle_built = view.built
        self.presenter.set_gauge(view.gauge)
        self.show_todos(view.todos)
        self.undoable = view.undoable
        self.refresh_bindings()
        self._update_subtitles()

    def _update_subtitles(self) -> None:
        history = self.query_one(HistoryView)
        layout = history.layout_data
        if layout is not None:
            hist = layout.history
            summaries = sum(s.tokens or 0 for s in hist.summaries)
            messages = sum(m.tokens or 0 for m in hist.messages)
            # Each figure says what it counts (stored counts, without the request's framing:
            # the gauge's "L3 history" layer is the same messages as sent).
            self.query_one("#history-pane").border_subtitle = (
                f"{plural(len(hist.summaries), 'summary', 'summaries')}"
                f" {tokens(summaries)} tok · {plural(len(hist.messages), 'message')}"
                f" {tokens(messages)} tok"
            )
        scratch = self.query_one(ScratchpadView)
        pad = self.query_one("#scratch-pane")
        self.set_class(scratch.showing_last, "-pad-last")
        if scratch.showing_last:
            pad.border_title = "Scratchpad · last round"
            pad.border_subtitle = "F6: back to live"
        else:
            pad.border_title = "Scratchpad · live"
            pad.border_subtitle = "F6: last round"

    def _round_done(self, done: RoundDone) -> None:
        self.last_scratch = done.last_scratch
        if done.title:
            header = self.query_one(SessionHeader)
            info = header.info
            header.info = HeaderInfo(**{**info.__dict__, "title": done.title})
        self._apply_view(done.view)

    def _compacted(self, result: CompactionResult, view: SessionView) -> None:
        self._apply_view(view, scroll_end=False)
        record = result.compaction
        if result.segment is None:
            self.notify(
                record.error or "nothing to compact", title="Nothing compacted", severity="warning"
            )
            return
        self.notify(
            f"{plural(record.messages_compacted, 'message')} of "
            f"{plural(record.rounds_compacted, 'round')} archived; history "
            f"{tokens(record.tokens_before)} → {tokens(record.tokens_after)} tok. "
            "Ctrl+Z undoes it.",
            title="Compacted",
        )
        history = self.query_one(HistoryView)
        history.scroll_home(animate=False, immediate=True)
        if result.summary is not None and view.layout.history.summaries:
            history.cursor = len(view.layout.history.summaries) - 1

    def _history_cursor_moved(self, _cursor: int | None) -> None:
        self.refresh_bindings()

    def _undone(self, undone: Compaction, view: SessionView) -> None:
        self.show_banner("", False)  # the banner told of the compaction just undone
        self._apply_view(view, scroll_end=False)
        self.notify(
            f"Compaction #{undone.id} undone: {plural(undone.messages_compacted, 'message')} "
            "are back in the history.",
            title="Undo",
        )

    def _pinned(self, pinned: bool, view: SessionView) -> None:
        history = self.query_one(HistoryView)
        cursor = history.cursor
        self._apply_view(view, scroll_end=False)
        if cursor is not None and cursor < len(history.blocks):
            history.cursor = cursor
        self.notify(
            "Pinned: no compaction archives this message (Ctrl+T again unpins it)."
            if pinned
            else "Unpinned: a compaction may archive this message again.",
            title="Pin",
        )

    def action_focus_pane(self, name: str) -> None:
        """Jump to a pane (Alt+1–4); in the narrow layout its tab comes to the front."""
        if name != "chat" and self.has_class("-narrow"):
            self.pane = name
        target = {"chat": "#chat", "scratch": "#scratch", "history": "#history"}.get(name)
        if target is not None:
            self.query_one(target).focus()

    def action_search(self) -> None:
        history = self.query_one(HistoryView).layout_data
        if self.session_id is None or history is None:
            return
        modal = SearchModal(self.ctx_app.store, self.session_id, history.history)
        self.app.push_screen(modal, self._found)

    def _found(self, hit: SearchHit | None) -> None:
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

    def on_key(self, event: events.Key) -> None:
        # Every printable key typed while a pane (or nothing) has the focus goes to the text box
        # (the compaction bar's focus while F5 is on, else the question box): no pane takes a
        # printable key, so no key of a question is ever lost (pane jumps are Alt+1–4).
        if isinstance(self.focused, Input) or not event.is_printable:
            return
        if event.character is None or event.key.startswith(("alt+", "ctrl+")):
            return
        box: Input = self.query_one(FocusInput) if self.cutting else self.query_one(ChatInput)
        if box.disabled:
            return
        event.stop()
        event.prevent_default()
        box.focus()
        box.insert_text_at_cursor(event.character)

    # ------------------------------------------------------------------ input
    @on(ChatInput.Sent, "#input")
    def _sent(self, event: ChatInput.Sent) -> None:
        text = event.text.strip()
        if self.agent is None or self.busy is not None:  # ChatInput.refusal covers this
            return
        self.gate.reset()
        title = "" if self.query_one(SessionHeader).info.title else one_line(text, 60)
        self.busy = "round"
        self.round_worker(self.agent, self.memo, text, title)

    @on(Input.Changed, "#input")
    def _typing(self, event: Input.Changed) -> None:
        if self.presenter is not None:
            self.presenter.typing(len(event.value))
        if self.agent is not None and self.busy is None:
            self.decide_worker(self.agent, event.value, self.idle_built)

    # ------------------------------------------------------------------ engine messages
    @on(EngineBridge.EventReceived)
    def _engine_event(self, message: EngineBridge.EventReceived) -> None:
        if self.presenter is not None:
            self.presenter.apply(message.event)
            if message.event.type in ("round_finished", "round_interrupted"):
                self._update_subtitles()

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
        title = "".join(text for text, _ in block.header).strip() or "Text"
        self.app.push_screen(DetailModal(title, [DetailPart(title, block.body)]))

    @on(BlockView.BlockActivated, "#history")
    def _open_block(self, event: BlockView.BlockActivated) -> None:
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
