"""The workbench following another agent's session (``ctxscope watch`` without ``--jsonl``).

:class:`WatchApp` is the workbench opened on the watched session, plus one thread worker that
reads the file (:class:`engine.recordings.follow.Follower`: the same parser and store as
``import``), and a bar above the panes with the agent's real usage from its last response
against its window and the tokens left before its own auto-compaction. Updates come back as
:class:`WatchApp.Updated` messages that replace one another while queued, so a burst of a
thousand records is one redraw; the redraw itself (history, gauge, chat) runs in a worker too.
"""

from __future__ import annotations

import time
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import work
from textual.message import Message
from textual.widget import Widget
from textual.worker import Worker, WorkerState, get_current_worker

from engine.recordings.follow import Figures, Follower
from engine.recordings.watching import Target, follow
from engine.terminal_text import printable
from tui.app import CtxscopeApp
from tui.formatting import short_tokens
from tui.session_loader import SessionView, chat_entries, measure
from tui.widgets.chat_view import ChatEntry, ChatView


def worker_wait(seconds: float) -> None:
    """The wait between two looks in the follow worker's thread."""
    time.sleep(seconds)


def bar_text(fig: Figures, width: int | None = None) -> str:
    """The bar's line: the context against the agent's window, the tokens before its
    auto-compaction and the compactions so far first (with a warning from ``watch_warn_ratio``
    on: what a narrow terminal must not cut off), then the agent's last usage. Given a
    ``width``, a line that would not fit is said shorter, the least important part going
    first: the usage, shortened, then cut, then left out."""
    u = fig.last_usage
    usage = (
        f"last call: in {u.get('input', 0):,} · cache read {u.get('cache_read', 0):,} · "
        f"cache write {u.get('cache_write', 0):,} · out {u.get('output', 0):,}"
        if u
        else "no usage recorded yet"
    )
    head = "⚠ auto-compact near · " if fig.warning else "watching · "
    line = (
        f"{head}context {fig.context_tokens:,} / {fig.context_window:,} ({fig.percent}%) · "
        f"until auto-compact {fig.until_compact:,} · compactions {fig.compactions} · {usage}"
    )
    if width is None or len(line) <= width:
        return line
    first = (
        f"{'⚠ ' if fig.warning else ''}context {fig.context_tokens:,} / {fig.context_window:,}"
        f" ({fig.percent}%) · until auto-compact {fig.until_compact:,}"
        f" · compactions {fig.compactions}"
    )
    short = (
        f"in {short_tokens(u.get('input', 0))} · read {short_tokens(u.get('cache_read', 0))} · "
        f"write {short_tokens(u.get('cache_write', 0))} · out {short_tokens(u.get('output', 0))}"
        if u
        else "no usage yet"
    )
    for rest in (f" · last call: {short}", f" · {short}"):
        if len(first + rest) <= width:
            return first + rest
    room = width - len(first) - 4  # " · " and "…"
    return first + f" · {short[:room]}…" if room >= 8 else first


class WatchBar(Widget):
    """One line over the panes: what the watched agent's context holds now, fitted to the
    width the bar has when it is drawn (so a resize, or figures that come before the bar is
    laid out, never leave a line made for another width)."""

    DEFAULT_CSS = """
    WatchBar { height: 1; background: $boost; padding: 0 1; }
    WatchBar.-warning { background: $warning 40%; text-style: bold; }
    """

    figures: Figures | None = None
    """The figures shown."""

    def show(self, fig: Figures) -> None:
        self.figures = fig
        self.set_class(fig.warning, "-warning")
        self.refresh()

    def render(self) -> Text:
        if self.figures is None:
            return Text()
        width = self.size.width
        return Text(bar_text(self.figures, max(20, width) if width else None), no_wrap=True)


@dataclass
class Redrawn:
    view: SessionView
    chat: list[ChatEntry]


class WatchApp(CtxscopeApp):
    """The workbench, kept current with a file another agent writes."""

    @dataclass
    class Updated(Message):
        """The watched file grew; the latest figures (a newer one replaces it in the queue)."""

        figures: Figures
        records: int
        """Records read since the last update."""
        total: int
        """Records read from the file so far (a replaced message's records are in it)."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, WatchApp.Updated)

    @dataclass
    class Noticed(Message):
        """The follower could not read something (yet): said as the import report says it."""

        text: str

    def __init__(self, follower: Follower, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.follower = follower
        follower.store = self.store
        self.figures: Figures | None = None
        self.updates = 0
        """Updates handled (a burst of records coalesced is one)."""
        self.records_seen = 0
        """Records the follow worker read since the app started (its thread counts them)."""
        self.records_shown = len(follower.records)
        """Records of the file the screen shows (the last handled update's total)."""

    def on_mount(self) -> None:
        self.figures = self.follower.figures
        self.call_after_refresh(self._mount_bar)
        self.follow_worker()

    def _mount_bar(self) -> None:
        main = self.main_screen
        if main is None:
            return
        bar = WatchBar(id="watch-bar")
        main.mount(bar, before=main.query_one("#panes"))
        if self.figures is not None:
            bar.show(self.figures)

    @work(thread=True, exclusive=True, group="watch", exit_on_error=False)
    def follow_worker(self) -> None:
        """The engine's follow loop (:func:`engine.recordings.watching.follow`, the one
        ``watch --jsonl`` runs), each update stored before it is posted: the redraw reads
        the store."""
        worker = get_current_worker()
        follower = self.follower
        loop = follow(
            Target(follower.path, self.settings),
            self.settings,
            self.store,
            lambda: worker.is_cancelled,
            worker_wait,
            follower=follower,
            save_at_once=True,
        )
        try:
            with closing(loop) as events:
                for event, _path, _follower in events:
                    if isinstance(event, str):
                        self.post_message(self.Noticed(event))
                        continue
                    self.records_seen += event.records
                    total = len(follower.records)
                    self.post_message(self.Updated(event.figures, event.records, total))
        finally:
            self.store.db.close()

    def on_watch_app_noticed(self, message: WatchApp.Noticed) -> None:
        self.notify(printable(message.text), title="watch", severity="warning", timeout=10)

    def on_watch_app_updated(self, message: WatchApp.Updated) -> None:
        self.updates += 1
        self.records_shown = message.total
        before = self.figures.compactions if self.figures else 0
        self.figures = message.figures
        main = self.main_screen
        if main is None:
            return
        for bar in main.query(WatchBar):
            bar.show(message.figures)
        if message.figures.compactions > before:
            self.notify(
                "The agent compacted its context: the history pane shows what it archived, "
                "its summary and what the summary kept (Enter on the mark).",
                title="Compaction",
                severity="warning",
            )
        if main.agent is not None and main.busy is None:
            self.redraw_worker(main.agent, main.memo)

    @work(thread=True, exclusive=True, group="watch-redraw", exit_on_error=False)
    def redraw_worker(self, agent: Any, memo: Any) -> Redrawn:
        try:
            history = agent.history.reload()
            return Redrawn(
                measure(agent, memo), chat_entries(self.store, agent.session_id, history)
            )
        finally:
            self.store.db.close()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker: Worker[Any] = event.worker
        main = self.main_screen
        if worker.group != "watch-redraw" or main is None:
            return
        if event.state == WorkerState.SUCCESS and isinstance(worker.result, Redrawn):
            main.query_one(ChatView).load(worker.result.chat, offline=True)
            main.apply_view(worker.result.view)
        elif event.state == WorkerState.ERROR:
            self.notify(
                str(worker.error), title="Cannot redraw the watched session", severity="error"
            )
