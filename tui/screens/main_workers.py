"""The main screen's workers and what their results change on screen.

A part :class:`~tui.screens.main_screen.MainScreen` holds (:class:`SessionWorkers`, handed the
screen): the thread workers that open a session, run a round, compact, undo, pin, redraw and
decide, run on the screen; their results, each a type of its own and dispatched on it with
``match``, and failures, keyed on the worker group, handled in one place
(:meth:`SessionWorkers.state_changed`, called by the screen's ``on_worker_state_changed``); and
applying a measured
:class:`~tui.session_loader.SessionView` to the history pane, the gauge, the todos and the
subtitles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial, update_wrapper
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from textual.worker import Worker, WorkerState

from engine.context.builder import BuiltContext
from engine.context.history import CompactionDraft, CompactionResult
from engine.models import Compaction, Session
from engine.settings.params import describe_params, strategy_params
from engine.store.forking import Fork
from engine.terminal_text import plural
from tui.formatting import tokens, workspace_label
from tui.gauge_state import Decision
from tui.session_loader import (
    OpenedSession,
    Resume,
    SessionView,
    decide,
    forget_if_empty,
    is_offline,
    last_scratchpad_blocks,
    measure,
    save_grants,
)
from tui.widgets.block_view import Block
from tui.widgets.chat_input import ChatInput, workspace_files
from tui.widgets.chat_view import ChatView
from tui.widgets.history_view import BlockMemo, HistoryView
from tui.widgets.scratchpad_view import ScratchpadView
from tui.widgets.session_header import HeaderInfo, SessionHeader

if TYPE_CHECKING:
    from engine.session import Agent
    from tui.screens.main_screen import MainScreen


P = ParamSpec("P")
R = TypeVar("R")

RECORDED_PLACEHOLDER = "Typing here forks this recording into a new session (it stays as it was)"
"""The input box of a recorded session: what sending there does."""


@dataclass
class RoundDone:
    """What a round worker hands back."""

    view: SessionView
    title: str
    last_scratch: list[Block]


@dataclass
class Prepared:
    """A compaction previewed (F5): its draft, or why there is none."""

    draft: CompactionDraft | CompactionResult


@dataclass
class Measured:
    """The session measured again (redrawn)."""

    view: SessionView


@dataclass
class Compacted:
    """A compaction stored, and the session measured after it."""

    result: CompactionResult
    view: SessionView


@dataclass
class Undone:
    """A compaction undone, and the session measured after it."""

    compaction: Compaction
    view: SessionView


@dataclass
class Pinned:
    """A message pinned or unpinned, and the session measured after it."""

    pinned: bool
    view: SessionView


@dataclass
class FilesListed:
    """The workspace's files, for the input's @file suggestions."""

    files: list[str]


def in_thread(
    group: str,
) -> Callable[
    [Callable[Concatenate[SessionWorkers, P], R]], Callable[Concatenate[SessionWorkers, P], None]
]:
    """Textual's ``@work(thread=True, exclusive=True, group=group, exit_on_error=False)`` for a
    method of the part: the worker runs on the part's screen, so its end (result or failure)
    reaches :meth:`SessionWorkers.state_changed` through the screen."""

    def decorator(
        method: Callable[Concatenate[SessionWorkers, P], R],
    ) -> Callable[Concatenate[SessionWorkers, P], None]:
        def start(part: SessionWorkers, /, *args: P.args, **kwargs: P.kwargs) -> None:
            part.screen.run_worker(
                partial(method, part, *args, **kwargs),
                name=method.__name__,
                group=group,
                exclusive=True,
                thread=True,
                exit_on_error=False,
            )

        update_wrapper(start, method)
        return start

    return decorator


BUSY_GROUPS = ("open", "round", "prepare", "compact", "redraw", "undo", "pin")
"""The workers that keep the agent busy (the history pane shows it loading) until they end."""


class SessionWorkers:
    """The main screen's workers and what their results change on screen: a part
    :class:`~tui.screens.main_screen.MainScreen` holds, handed the screen."""

    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen

    # ------------------------------------------------------------------ workers
    def leave_session(self) -> None:
        """The open session is being left: if nothing was ever sent in it, it is not kept
        (every launch used to store an empty "(untitled)" session)."""
        screen = self.screen
        if screen.session_id is not None and screen.busy is None:
            forget_if_empty(screen.ctx_app.store, screen.session_id)

    def open(self, resume: Resume) -> None:
        screen = self.screen
        if screen.session_id is not None:
            # The first session's objects, frozen with the start-up's heap when its frame was
            # up (tui/gc_pause.py), may become garbage in cycles from now on.
            screen.ctx_app.gc_pause.thaw()
        if resume != screen.session_id:
            self.leave_session()
        # The loading indicator marks a session's panes as about to change; before the first
        # one there is nothing to mark (the header says "opening…", the input box too), and its
        # animation woke the UI thread 16 times a second while the worker wanted the GIL.
        screen.query_one(HistoryView).loading = screen.session_id is not None
        screen.busy = "opening"
        screen.session_shown = False
        self.open_worker(resume)

    @in_thread(group="open")
    def open_worker(self, resume: Resume) -> OpenedSession:
        screen = self.screen
        app = screen.ctx_app
        try:
            return app.open_session(resume, screen.bridge, screen.gate)
        finally:
            app.store.db.close()

    def fork_first(self, then: Callable[[Fork], None]) -> bool:
        """A recorded session (imported, watched) is read-only: a change to it goes to a fork,
        opened in its place, and ``then`` runs on the fork. True when a fork is being made
        (the caller stops there); False when the session can change itself."""
        screen = self.screen
        agent = screen.agent
        if agent is None or not agent.session.recorded or screen.busy is not None:
            return False
        screen.busy = "opening"
        screen.after_fork = then
        self.fork_worker(agent.session)
        return True

    @in_thread(group="open")
    def fork_worker(self, session: Session) -> OpenedSession:
        screen = self.screen
        app = screen.ctx_app
        try:
            fork = app.store.fork_to_change(session)
            assert fork is not None and fork.session.id is not None
            opened = app.open_session(fork.session.id, screen.bridge, screen.gate)
            opened.fork = fork
            return opened
        finally:
            app.store.db.close()

    def drop_trial_fork(self) -> None:
        """The fork made for a compaction that stored nothing (nothing to compact, a skipped
        summary, the preview abandoned) is deleted and the recording opened again: a change
        that does nothing makes no fork (issue 39)."""
        screen = self.screen
        fork, screen.trial_fork = screen.trial_fork, None
        if fork is None or screen.session_id != fork.session.id:
            return
        screen.notify(
            f"Nothing was changed, so session {fork.session.id} ({fork.source}) was not kept; "
            f"#{fork.of} is open again.",
            title="Fork",
        )
        screen.call_later(self._discard_fork, fork)  # once the worker that ended is over

    def _discard_fork(self, fork: Fork) -> None:
        screen = self.screen
        screen.busy = "opening"
        screen.query_one(HistoryView).loading = True
        self.discard_fork_worker(fork)

    @in_thread(group="open")
    def discard_fork_worker(self, fork: Fork) -> OpenedSession:
        app = self.screen.ctx_app
        try:
            if fork.session.id is not None:
                app.store.delete_session(fork.session.id)
            return app.open_session(fork.of, self.screen.bridge, self.screen.gate)
        finally:
            app.store.db.close()

    @in_thread(group="round")
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

    @in_thread(group="prepare")
    def prepare_worker(self, agent: Agent, focus: str, keep: int | None) -> Prepared:
        try:
            return Prepared(agent.prepare_compaction(focus or None, dry_run=True, keep_rounds=keep))
        finally:
            agent.store.db.close()

    @in_thread(group="compact")
    def compact_now_worker(self, agent: Agent, memo: BlockMemo, focus: str, keep: int) -> Compacted:
        try:
            result = agent.compact(focus or None, keep_rounds=keep)
            return Compacted(result, measure(agent, memo))
        finally:
            agent.store.db.close()

    @in_thread(group="undo")
    def undo_worker(self, agent: Agent, memo: BlockMemo) -> Undone:
        try:
            undone = agent.uncompact()
            return Undone(undone, measure(agent, memo))
        finally:
            agent.store.db.close()

    @in_thread(group="compact")
    def compact_worker(
        self, agent: Agent, memo: BlockMemo, draft: CompactionDraft, content: str | None
    ) -> Compacted:
        try:
            result = agent.commit_compaction(draft, content)
            return Compacted(result, measure(agent, memo))
        finally:
            agent.store.db.close()

    @in_thread(group="pin")
    def pin_worker(self, agent: Agent, memo: BlockMemo, message_id: int, pinned: bool) -> Pinned:
        try:
            agent.pin([message_id], pinned)
            return Pinned(pinned, measure(agent, memo))
        finally:
            agent.store.db.close()

    @in_thread(group="redraw")
    def redraw_worker(self, agent: Agent, memo: BlockMemo) -> Measured:
        try:
            return Measured(measure(agent, memo))
        finally:
            agent.store.db.close()

    @in_thread(group="decide")
    def decide_worker(self, agent: Agent, text: str, built: BuiltContext | None) -> Decision:
        try:
            return decide(agent, text, built)
        finally:
            agent.store.db.close()

    @in_thread(group="files")
    def load_files(self) -> FilesListed:
        screen = self.screen
        return FilesListed(workspace_files(screen.ctx_app.workspace))

    def state_changed(self, event: Worker.StateChanged) -> None:
        screen = self.screen
        worker: Worker[Any] = event.worker
        if event.state == WorkerState.ERROR:
            self._worker_failed(worker.group, worker.error)
        elif event.state == WorkerState.SUCCESS:
            self._show_result(worker.result)
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            if worker.group in BUSY_GROUPS:
                screen.busy = None
                screen.query_one(HistoryView).loading = False
            if worker.group == "open":
                screen.show_panes()  # the first frame shows them with the session
                screen.call_after_refresh(screen.after_rows_drawn, screen.opening_drawn)

    def _show_result(self, result: object) -> None:
        """What a worker's result changes on screen, by its type."""
        screen = self.screen
        match result:
            case OpenedSession():
                self._opened(result)
            case RoundDone():
                self._round_done(result)
            case Prepared(draft=draft):
                screen.actions.prepared(draft)
            case Measured(view=view):
                self.apply_view(view, scroll_end=False)
            case Compacted(result=compacted, view=view):
                self._compacted(compacted, view)
            case Undone(compaction=compaction, view=view):
                self._undone(compaction, view)
            case Pinned(pinned=pinned, view=view):
                self._pinned(pinned, view)
            case Decision():
                if screen.busy is None and screen.presenter is not None:
                    screen.presenter.decided(result)
            case FilesListed(files=files):
                screen.query_one(ChatInput).workspace_suggester.set_files(files)

    def _worker_failed(self, group: str, error: BaseException | None) -> None:
        screen = self.screen
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
        screen.notify(detail, title=what, severity="error", timeout=10)
        if group in ("prepare", "compact"):
            self.drop_trial_fork()  # the compaction a fork was made for stored nothing

    # ------------------------------------------------------------------ results
    def _opened(self, opened: OpenedSession) -> None:
        screen = self.screen
        screen.agent = opened.agent
        screen.memo = opened.memo
        screen.session_id = opened.agent.session_id
        session = opened.session
        if opened.workspace is None:
            label = f"no workspace (recorded in {workspace_label(session.workspace) or '?'})"
        else:
            label = screen.ctx_app.workspace_label or workspace_label(opened.workspace)
        own = opened.view.gauge.own
        screen.input_placeholder = (
            RECORDED_PLACEHOLDER if own is not None else ChatInput.PLACEHOLDER
        )
        screen.query_one(ChatInput).placeholder = screen.input_placeholder
        screen.query_one(SessionHeader).info = HeaderInfo(
            session_id=session.id,
            title=session.title,
            workspace=label,
            provider=session.provider,
            model=session.model,
            strategy=opened.agent.strategy.name,
            offline=is_offline(session.provider),
            numbers=describe_params(strategy_params(opened.agent.settings, session.strategy)),
            recorded_by="" if own is None else own.agent or "recorded",
            cost="" if own is None else own.cost_text,
        )
        screen.query_one(ChatView).load(opened.chat, offline=is_offline(session.provider))
        screen.query_one(ScratchpadView).end_round()
        screen.last_scratch = opened.last_scratch
        screen.show_banner("", False)
        self.apply_view(opened.view)
        for notice in opened.notices:
            screen.notify(notice, title="Workspace", severity="warning")
        if opened.workspace is None:
            recorded = session.workspace or "no folder"
            screen.notify(
                f"Recorded by another agent in {recorded}: no tool runs until you give this "
                "session a workspace (asked when you send a message).",
                title="Workspace",
                severity="warning",
            )
        then, screen.after_fork = screen.after_fork, None
        if opened.fork is not None:
            screen.notify(opened.fork.note, title="Fork")
            if then is not None:
                fork = opened.fork
                screen.call_later(lambda: then(fork))  # once the opening is over (busy is None)

    def ask_for_workspace(self, then: Callable[[], None]) -> None:
        """A session recorded by another agent, about to run a round: ask the user for its
        folder, naming the recorded one (issue 29); ``then`` runs either way (without a
        folder, its tools refuse)."""
        from tui.screens.workspace_modal import WorkspaceModal, suggested_folder  # when asked

        screen = self.screen
        agent = screen.agent
        if agent is None:
            return
        session = agent.store.get_session(agent.session_id)
        suggestion = suggested_folder(session.workspace, screen.ctx_app.workspace)

        def given(folder: Path | None) -> None:
            if folder is not None and screen.agent is agent:
                agent.give_workspace(folder)
                header = screen.query_one(SessionHeader)
                label = screen.ctx_app.workspace_label or workspace_label(folder)
                header.info = HeaderInfo(**{**header.info.__dict__, "workspace": label})
                screen.notify(f"Session #{agent.session_id} works in {folder}.", title="Workspace")
            then()

        screen.app.push_screen(
            WorkspaceModal(agent.session_id, session.workspace, suggestion), given
        )

    def apply_view(self, view: SessionView, *, scroll_end: bool = True) -> None:
        """Show a measured session: the history pane, the gauge, the todos, what Ctrl+Z would
        undo and the panes' subtitles (after a worker's measure, or a watched file's redraw)."""
        screen = self.screen
        history = screen.query_one(HistoryView)
        history.show(view.layout, view.blocks, scroll_end=scroll_end)
        assert screen.presenter is not None
        screen.idle_built = view.built
        screen.presenter.set_gauge(view.gauge)
        screen.show_todos(view.todos)
        screen.undoable = view.undoable
        screen.refresh_bindings()
        self.update_subtitles()

    def update_subtitles(self) -> None:
        screen = self.screen
        history = screen.query_one(HistoryView)
        layout = history.layout_data
        if layout is not None:
            hist = layout.history
            summaries = sum(s.tokens or 0 for s in hist.summaries)
            messages = sum(m.tokens or 0 for m in hist.messages)
            # Each figure says what it counts (stored counts, without the request's framing:
            # the gauge's "L3 history" layer is the same messages as sent).
            screen.query_one("#history-pane").border_subtitle = (
                f"{plural(len(hist.summaries), 'summary', 'summaries')}"
                f" {tokens(summaries)} tok · {plural(len(hist.messages), 'message')}"
                f" {tokens(messages)} tok"
            )
        scratch = screen.query_one(ScratchpadView)
        pad = screen.query_one("#scratch-pane")
        screen.set_class(scratch.showing_last, "-pad-last")
        if scratch.showing_last:
            pad.border_title = "Scratchpad · last round"
            pad.border_subtitle = "F6: back to live"
        else:
            pad.border_title = "Scratchpad · live"
            pad.border_subtitle = "F6: last round"

    def _round_done(self, done: RoundDone) -> None:
        screen = self.screen
        screen.last_scratch = done.last_scratch
        if done.title:
            header = screen.query_one(SessionHeader)
            info = header.info
            header.info = HeaderInfo(**{**info.__dict__, "title": done.title})
        self.apply_view(done.view)

    def _compacted(self, result: CompactionResult, view: SessionView) -> None:
        screen = self.screen
        self.apply_view(view, scroll_end=False)
        record = result.compaction
        if result.segment is None:
            screen.notify(
                record.error or "nothing to compact", title="Nothing compacted", severity="warning"
            )
            self.drop_trial_fork()
            return
        screen.trial_fork = None  # a compaction was stored: the fork it went to stays
        screen.notify(
            f"{plural(record.messages_compacted, 'message')} of "
            f"{plural(record.rounds_compacted, 'round')} archived; history "
            f"{tokens(record.tokens_before)} → {tokens(record.tokens_after)} tok. "
            "Ctrl+Z undoes it.",
            title="Compacted",
        )
        history = screen.query_one(HistoryView)
        history.scroll_home(animate=False, immediate=True)
        if result.summary is not None and view.layout.history.summaries:
            history.cursor = len(view.layout.history.summaries) - 1

    def _undone(self, undone: Compaction, view: SessionView) -> None:
        screen = self.screen
        screen.show_banner("", False)  # the banner told of the compaction just undone
        self.apply_view(view, scroll_end=False)
        screen.notify(
            f"Compaction #{undone.id} undone: {plural(undone.messages_compacted, 'message')} "
            "are back in the history.",
            title="Undo",
        )

    def _pinned(self, pinned: bool, view: SessionView) -> None:
        screen = self.screen
        history = screen.query_one(HistoryView)
        cursor = history.cursor
        self.apply_view(view, scroll_end=False)
        if cursor is not None and cursor < len(history.blocks):
            history.cursor = cursor
        screen.notify(
            "Pinned: no compaction archives this message (Ctrl+T again unpins it)."
            if pinned
            else "Unpinned: a compaction may archive this message again.",
            title="Pin",
        )
