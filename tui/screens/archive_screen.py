"""ArchiveScreen: the session's compactions, each summary beside the raw rounds it replaced.

Nothing is deleted by compaction: the archived segment keeps every message whole. Picking a
compaction on the left shows its summary and that segment side by side, with the tokens of
both, so one can judge what the summary kept and what it lost — and the summary's fidelity,
what share of the segment's ledger items (files, commands, errors, requests, decisions) it
names. Enter on an archived tool message opens its full raw observation.

The search box finds archived messages as the Recall tool does (full-text, best first); Enter
on a hit opens the compaction whose segment holds it. A letter typed anywhere on the screen goes
to the search box: the screen opens with the focus on the compaction list, and a key there that
changed the session would fire while one types a query (issue 39: `u` undid a compaction at
once). Undo is Ctrl+Z, as on the main screen, and it asks first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Input, Label, Markdown, OptionList
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState

from engine.compaction.ledger import fidelity_line
from engine.compaction.losses import NAMES, CompactionLosses, session_losses, where
from engine.models import ArchivedSegment, Compaction, Message, RecallHit, Summary
from engine.recordings.base import recorded_compaction
from engine.store import Store
from engine.terminal_text import plural
from tui.formatting import percent, round_span, tokens
from tui.screens.confirm_modal import ConfirmModal
from tui.screens.detail_modal import DetailModal, parts_for_message
from tui.text_wrap import display_safe
from tui.widgets.block_view import Block, BlockView
from tui.widgets.history_view import message_block
from tui.widgets.key_bar import KeyBar

SEARCH_LIMIT = 20
"""Hits the archive's search box shows."""


@dataclass
class ArchiveEntry:
    """One compaction with what it produced."""

    compaction: Compaction
    summary: Summary | None
    segment: ArchivedSegment | None
    losses: CompactionLosses | None = None
    """What it lost, by name (None: nothing archived, or undone)."""


def load_archive(store: Store, session_id: int) -> list[ArchiveEntry]:
    """Every compaction of the session, newest last, with its summary, segment and losses."""
    segments = {s.compaction_id: s for s in store.segments(session_id)}
    losses = {loss.compaction_id: loss for loss in session_losses(store, session_id)}
    out = []
    for comp in store.compactions(session_id):
        summary = store.summary(comp.summary_id) if comp.summary_id is not None else None
        found = losses.get(comp.id or -1)
        out.append(ArchiveEntry(comp, summary, segments.get(comp.id or -1), found))
    return out


def lost_markdown(losses: CompactionLosses) -> str:
    """What a compaction lost, by kind, each item with where it was: a fenced block (the
    keys are a recording's text: shown as written, never read as Markdown)."""
    rows = [
        f"{NAMES[item.kind]:<14} {item.key}  ({where(item)})"
        for kind in NAMES
        for item in losses.lost_of(kind)
    ]
    text = "\n".join(rows)
    fence = "```"
    while fence in text:
        fence += "`"
    head = (
        f"> lost {len(losses.lost)} items: in the compacted part, not in the summary nor in "
        "what it kept"
    )
    return f"{head}\n\n{fence}\n{text}\n{fence}"


def segment_blocks(segment: ArchivedSegment) -> list[Block]:
    """The raw messages of a segment under one separator per round."""
    blocks: list[Block] = []
    current: int | None = None
    for msg in segment.messages:
        if msg.meta.round != current:
            current = msg.meta.round
            blocks.append(
                Block(
                    header=((f"── round {current} ", "block-view--separator"),),
                    fill="─",
                    selectable=False,
                )
            )
        blocks.append(message_block(msg, False))
    return blocks


def entry_label(entry: ArchiveEntry) -> Text:
    c = entry.compaction
    text = Text()
    undone = " · undone" if c.undone_at else ""
    text.append(f"#{c.id} {c.trigger} · {c.outcome}{undone}\n", style="bold")
    text.append(display_safe(c.strategy, one_line=True), style="italic")
    if c.placement:
        text.append(f" · {c.placement.value.replace('_', ' ')}", style="italic")
    text.append("\n")
    if entry.segment is not None:
        seg = entry.segment
        text.append(f"{round_span(seg.first_round, seg.last_round)} · ")
    text.append(f"{tokens(c.tokens_before)} → {tokens(c.tokens_after)} tok", style="dim")
    if c.error and entry.segment is None:
        text.append(f"\n{display_safe(c.error)}", style="dim italic")
    return text


def strategy_line(c: Compaction) -> str:
    """How the strategy decided and what it did, in one line (its stored stats)."""
    parts = [f"{c.strategy}"]
    if c.stats.get("recorded"):
        parts = ["recorded: made by the original agent"]
        figures = recorded_compaction(c.stats)
        if figures:
            parts.append(figures)
        if c.stats.get("model"):
            parts.append(f"summary by {c.stats['model']}")
    measured = c.stats.get("measured")
    if measured and c.stats.get("fired") is False:
        # Asked for by hand: the rule's measure was under its threshold; never say ">=".
        kept = c.stats.get("kept_rounds")
        how = "compacted by hand"
        if isinstance(kept, int):
            how += f", the last {plural(kept, 'round')} kept"
        below = str(measured).replace(" >= ", " < ").replace(" > ", " ≤ ")
        parts.append(f"{how} (the automatic rule had not fired: {below})")
    elif measured:
        parts.append(f"measured {measured}")
    retired = c.stats.get("superseded_summaries") or []
    if retired:
        parts.append(f"retired summaries {', '.join(f'#{i}' for i in retired)}")
    if c.stats.get("raw_middle_file"):
        parts.append(f"raw middle {c.stats['raw_middle_file']}")
    if c.undone_at:
        parts.append(f"undone {c.undone_at:%Y-%m-%d %H:%M}")
    return " · ".join(parts)


class ArchiveScreen(Screen[bool]):
    """Browse compactions: summary | archived raw segment. Dismisses with True when a
    compaction was undone here (the session's history changed)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", id="archive.back", tooltip="Back to the session"),
        Binding(
            "ctrl+z",
            "undo",
            "Undo compaction",
            id="archive.undo",
            tooltip="Undo the highlighted compaction (the latest one), after asking: its "
            "messages return to history, its summary stays here as superseded",
        ),
    ]

    def __init__(
        self,
        store: Store,
        session_id: int,
        undo: Callable[[int], Compaction] | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.session_id = session_id
        self.entries: list[ArchiveEntry] = []
        self._undo = undo
        """Reverses a compaction through the session's agent (None: undo unavailable)."""
        self.changed = False

    def compose(self) -> ComposeResult:
        yield Label("Archive — compactions of this session (Esc goes back)", id="archive-title")
        # not select_on_focus: the key that moved the focus here is already in the box
        yield Input(
            placeholder="Search the archived messages (Enter)",
            id="archive-search",
            select_on_focus=False,
        )
        with Horizontal(id="archive-body"):
            yield OptionList(id="archive-list")
            with Vertical(id="archive-summary-pane", classes="pane"):
                with VerticalScroll(id="archive-summary-scroll"):
                    yield Markdown("", id="archive-summary")
            with Vertical(id="archive-segment-pane", classes="pane"):
                yield BlockView(id="archive-segment")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#archive-summary-pane").border_title = "Summary"
        self.query_one("#archive-segment-pane").border_title = "Archived raw segment"
        self.query_one(OptionList).loading = True
        self.load()

    @work(thread=True, exclusive=True, group="archive", exit_on_error=False)
    def load(self) -> list[ArchiveEntry]:
        try:
            return load_archive(self.store, self.session_id)
        finally:
            self.store.db.close()

    @on(Input.Submitted, "#archive-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.search(event.value.strip())

    @work(thread=True, exclusive=True, group="archive-search", exit_on_error=False)
    def search(self, query: str) -> tuple[str, list[RecallHit]]:
        try:
            return query, self.store.search_archive(self.session_id, query, SEARCH_LIMIT)
        finally:
            self.store.db.close()

    def show_hits(self, query: str, hits: list[RecallHit]) -> None:
        """The hits in the right pane; Enter on one opens its compaction."""
        pane = self.query_one("#archive-segment-pane")
        pane.border_title = f"Search “{query}” · {len(hits)} hits, best first"
        view = self.query_one("#archive-segment", BlockView)
        view.set_blocks(
            [
                Block(
                    header=(
                        (
                            f"segment #{h.segment_id} · round {h.round} · message "
                            f"{h.message_id} ({h.role})",
                            "block-view--header",
                        ),
                    ),
                    body=h.snippet,
                    data=h,
                )
                for h in hits
            ]
            or [Block(body="No archived message matches.", selectable=False)]
        )
        view.cursor = 0 if hits else None
        view.scroll_home(animate=False)
        view.focus()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group == "archive-undo":
            self._undo_finished(event)
            return
        if worker.group == "archive-search":
            if event.state == WorkerState.SUCCESS and worker.result is not None:
                self.show_hits(*worker.result)
            elif event.state == WorkerState.ERROR:
                self.notify(f"Cannot search the archive: {worker.error}", severity="error")
            return
        if worker.group != "archive":
            return
        options = self.query_one(OptionList)
        if event.state == WorkerState.SUCCESS and worker.result is not None:
            options.loading = False
            self.entries = list(worker.result)
            if not self.entries:
                options.add_option(Option("No compactions yet (F5 compacts now)", disabled=True))
                return
            for i, entry in enumerate(self.entries):
                options.add_option(Option(entry_label(entry), id=str(i)))
            options.highlighted = len(self.entries) - 1
            options.focus()
        elif event.state == WorkerState.ERROR:
            options.loading = False
            self.notify(f"Cannot read the archive: {worker.error}", severity="error")

    @on(OptionList.OptionHighlighted, "#archive-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id is not None:
            self.show_entry(self.entries[int(event.option.id)])

    def show_entry(self, entry: ArchiveEntry) -> None:
        summary_pane = self.query_one("#archive-summary-pane")
        segment_pane = self.query_one("#archive-segment-pane")
        c = entry.compaction
        if entry.summary is None:
            summary_pane.border_title = "Summary — none"
            body = f"*No summary: {c.outcome}.*\n\n{c.error or ''}"
        else:
            s = entry.summary
            kind = " (extractive fallback)" if s.fallback else ""
            summary_pane.border_title = f"Summary{kind} · {tokens(s.tokens)} tok"
            body = s.content
        if c.stats.get("edited"):
            draft = str(c.stats.get("draft_summary", ""))
            body = f"*Edited before it was committed. The draft follows the edit.*\n\n{body}"
            body += f"\n\n---\n\n**The draft as written**\n\n{draft}"
        if entry.losses is not None and entry.losses.lost:
            body = f"{lost_markdown(entry.losses)}\n\n{body}"
        if c.fidelity is not None:
            body = f"> keeps {fidelity_line(c.fidelity)}\n\n{body}"
        if c.focus:
            body = f"> focus: {c.focus}\n\n{body}"
        body = f"> {strategy_line(c)}\n\n{body}"
        self.query_one("#archive-summary", Markdown).update(display_safe(body))
        view = self.query_one("#archive-segment", BlockView)
        if entry.segment is None:
            segment_pane.border_title = "Archived raw segment — none"
            view.set_blocks([])
            return
        seg = entry.segment
        ratio = percent(entry.summary.tokens or 0, seg.tokens) if entry.summary else "–"
        segment_pane.border_title = (
            f"Archived {round_span(seg.first_round, seg.last_round, short=True)}"
            f" · {len(seg.messages)} msgs"
            f" · {tokens(seg.tokens)} tok · summary {ratio}"
        )
        view.set_blocks(segment_blocks(seg))
        view.scroll_home(animate=False)

    @on(BlockView.BlockActivated, "#archive-segment")
    def _open_message(self, event: BlockView.BlockActivated) -> None:
        block: Block = event.block
        if isinstance(block.data, RecallHit):
            self._open_hit(block.data)
            return
        msg = block.data
        if not isinstance(msg, Message):
            return
        observation = None
        if msg.role == "tool" and msg.meta.tool_use_id:
            observation = self.store.observation_for(self.session_id, msg.meta.tool_use_id)
        heading = f"Archived message · round {msg.meta.round}"
        self.app.push_screen(DetailModal(heading, parts_for_message(msg, observation)))

    def _open_hit(self, hit: RecallHit) -> None:
        for i, entry in enumerate(self.entries):
            if entry.segment is not None and entry.segment.id == hit.segment_id:
                options = self.query_one(OptionList)
                options.highlighted = i
                self.show_entry(entry)
                return

    def on_key(self, event: events.Key) -> None:
        """A printable key typed outside the search box goes into it."""
        search = self.query_one("#archive-search", Input)
        if self.focused is search or not event.is_printable or event.character is None:
            return
        event.stop()
        event.prevent_default()
        search.focus()
        search.insert_text_at_cursor(event.character)

    def action_undo(self) -> None:
        options = self.query_one(OptionList)
        if self._undo is None or options.highlighted is None or not self.entries:
            return
        comp = self.entries[options.highlighted].compaction
        if comp.id is None:
            return
        compaction_id = comp.id
        if comp.undone_at is not None:
            self.notify(f"Compaction #{compaction_id} is undone already.", title="Undo")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.undo(compaction_id)

        self.app.push_screen(
            ConfirmModal(
                f"Undo compaction #{compaction_id}?",
                f"Its {plural(comp.messages_compacted, 'message')} return to history, and its "
                "summary stays here as superseded. The next request is larger again.",
                "Undo",
            ),
            answered,
        )

    @work(thread=True, exclusive=True, group="archive-undo", exit_on_error=False)
    def undo(self, compaction_id: int) -> Compaction:
        assert self._undo is not None
        try:
            return self._undo(compaction_id)
        finally:
            self.store.db.close()

    def _undo_finished(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.SUCCESS and event.worker.result is not None:
            undone: Compaction = event.worker.result
            self.changed = True
            self.notify(
                f"Compaction #{undone.id} undone: {undone.messages_compacted} messages are back "
                "in history.",
                title="Undone",
            )
            options = self.query_one(OptionList)
            options.clear_options()
            options.loading = True
            self.load()
        elif event.state == WorkerState.ERROR:
            self.notify(str(event.worker.error), title="Cannot undo", severity="error")

    def action_close(self) -> None:
        self.dismiss(self.changed)
