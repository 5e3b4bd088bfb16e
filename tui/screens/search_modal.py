"""SearchModal (``/``): find text in the history as stored, its summaries and the archive.

Matching is case-insensitive on the stored text (tool messages: the compressed JSON history
keeps; archived messages: whole). The search runs in a thread worker as one types; the modal
returns the chosen :class:`SearchHit` (or None), and the main screen jumps to it: a history
message or summary is selected in the history pane, an archived message opens whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState

from engine.models import History, Message, Summary
from engine.store import Store
from tui.focus import focus_steady
from tui.formatting import one_line
from tui.text_wrap import plain

MAX_HITS = 200


@dataclass(frozen=True)
class SearchHit:
    """One match: where it is and a line of context."""

    where: Literal["history", "summary", "archive"]
    label: str
    snippet: str
    message: Message | None = None
    summary: Summary | None = None

    @property
    def key(self) -> str | None:
        """The history pane's key for the item (``m<id>`` / ``s<id>``), None for the archive."""
        if self.where == "history" and self.message is not None:
            return f"m{self.message.id}"
        if self.where == "summary" and self.summary is not None:
            return f"s{self.summary.id}"
        return None


def _snippet(text: str, needle: str, width: int = 50) -> str:
    at = text.lower().find(needle)
    start = max(0, at - width // 3)
    return one_line(("…" if start else "") + text[start : start + width], width + 1)


def search(store: Store, session_id: int, history: History, query: str) -> list[SearchHit]:
    """Hits for ``query`` in ``history`` (L3 as stored) and the session's archive."""
    needle = query.strip().lower()
    if not needle:
        return []
    hits: list[SearchHit] = []
    for summary in history.summaries:
        if needle in summary.content.lower():
            label = f"summary r{summary.first_round}–{summary.last_round}"
            hits.append(
                SearchHit("summary", label, _snippet(summary.content, needle), summary=summary)
            )
    for msg in history.messages:
        if needle in msg.content.lower():
            label = f"history r{msg.meta.round} {msg.role}"
            hits.append(SearchHit("history", label, _snippet(msg.content, needle), message=msg))
        if len(hits) >= MAX_HITS:
            return hits
    for segment in store.segments(session_id):
        for msg in segment.messages:
            if needle in msg.content.lower():
                label = f"archive r{msg.meta.round} {msg.role}"
                hits.append(SearchHit("archive", label, _snippet(msg.content, needle), message=msg))
            if len(hits) >= MAX_HITS:
                return hits
    return hits


class SearchModal(ModalScreen[SearchHit | None]):
    """Type to search; ↓ to the results, Enter jumps, Esc closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="search.close", tooltip="Close the search"),
    ]

    def __init__(self, store: Store, session_id: int, history: History) -> None:
        super().__init__()
        self.store = store
        self.session_id = session_id
        self.history = history
        self.hits: list[SearchHit] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="search-dialog", classes="dialog"):
            yield Label("Search the history, its summaries and the archive", id="search-title")
            yield Input(placeholder="text to find (case-insensitive)", id="search-input")
            yield OptionList(id="search-results")

    def on_mount(self) -> None:
        focus_steady(self.query_one("#search-input", Input))

    @on(Input.Changed, "#search-input")
    def _changed(self, event: Input.Changed) -> None:
        self.search_worker(event.value)

    @on(Input.Submitted, "#search-input")
    def _submitted(self) -> None:
        results = self.query_one("#search-results", OptionList)
        if self.hits:
            results.focus()
            results.highlighted = 0

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def search_worker(self, query: str) -> list[SearchHit]:
        try:
            return search(self.store, self.session_id, self.history, query)
        finally:
            self.store.db.close()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "search" or event.state != WorkerState.SUCCESS:
            return
        self.hits = list(event.worker.result or [])
        results = self.query_one("#search-results", OptionList)
        results.clear_options()
        results.add_options(
            Option(plain(f"{hit.label:<22} {hit.snippet}", one_line=True)) for hit in self.hits
        )

    @on(OptionList.OptionSelected, "#search-results")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.hits[event.option_index])

    def action_close(self) -> None:
        self.dismiss(None)
