"""RequestsScreen: the exact requests of a session recorded by ``ctxscope proxy``, read-only.

One row per request, in order: what it was (the conversation, a compaction's call), its
model and status, its tokens per layer (tools, system, history, the newest input) from the
usage the API returned, what it appended or removed since the conversation's previous
request, where the cached prefix broke, its cost and the running total. The selected
request's detail sits below: its layers as bars, what changed and why, and its newest input;
Enter opens the request exactly as sent beside the text it changed (``show --request N`` and
``--diff N``'s);
**w** replays the conversation under each strategy beside what was really sent (the what-ifs).
The figures are :func:`engine.proxy.report.request_report`'s, the same as ``show --json``'s
``requests[]`` (docs/proxy.md). While a proxy records into the session, new requests appear:
the screen looks for them every :data:`FOLLOW_INTERVAL` seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Label, Static

from engine.exchanges import Exchange
from engine.proxy.identity import texts
from engine.proxy.report import request_report
from engine.proxy.request_text import diff_text, find, request_diff, request_text
from engine.proxy.whatif import NoConversation, what_if_lines, what_if_table
from engine.settings.config import Settings
from engine.store import Store
from engine.terminal_text import cut
from tui.formatting import short_tokens
from tui.screens.detail_modal import DetailModal, DetailPart
from tui.widgets.key_bar import KeyBar

BAR_WIDTH = 40
"""Characters of the widest layer bar in the detail."""

FOLLOW_INTERVAL = 1.0
"""Seconds between two looks for requests a running proxy stored since."""


def layer_bars(request: dict[str, Any]) -> list[str]:
    """The request's layers as bars scaled to its largest, with their tokens."""
    layers = request["layers"]
    widest = max((x["tokens"] for x in layers), default=0) or 1
    return [
        f"{x['name']:<8} {'█' * round(BAR_WIDTH * x['tokens'] / widest):<{BAR_WIDTH}} "
        f"{x['tokens']:>9,}"
        for x in layers
    ]


def detail_text(request: dict[str, Any], exchange: Exchange) -> str:
    """What the detail pane shows for one request."""
    usage = request["usage"] or {}
    lines = [
        f"request #{request['id']} · {request['kind']} · {cut(request['model'], 40)} · "
        f"{request['status']} {request['outcome']} · tokens from {request['tokens_from']}",
        *layer_bars(request),
        f"cache read {usage.get('cache_read_input_tokens', 0):,} · cache write "
        f"{usage.get('cache_creation_input_tokens', 0):,} (1 h: "
        f"{usage.get('cache_creation_1h_input_tokens', 0):,}) · output "
        f"{request['output_tokens']:,} · "
        + ("no price" if request["cost"] is None else f"${request['cost']:.4f}")
        + f" (running ${request['running_cost']:.4f})",
        f"since the previous request: {request['kept']} messages kept, "
        f"+{request['appended']} appended, -{request['removed']} removed"
        + (" · the request shrank" if request["shrank"] else ""),
    ]
    lines += [f"  {cut(change, 110)}" for change in request["changed"]]
    broke = request["cache_break"]
    lines.append(
        f"cached prefix broke at {broke['where']}: {cut(broke['why'], 100)}"
        if broke
        else "cached prefix intact"
    )
    messages = exchange.request.get("messages")
    newest = messages[-1] if isinstance(messages, list) and messages else None
    shown = " ".join(texts(newest)) if newest is not None else ""
    lines.append(f"newest input: {cut(shown, 200) or '(no text)'}")
    return "\n".join(lines)


class RequestsScreen(Screen[None]):
    """The proxied requests of one session."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "app.pop_screen", "Back", id="requests.back", tooltip="Back to the session"
        ),
        Binding(
            "w",
            "what_ifs",
            "What-ifs",
            id="requests.what_ifs",
            tooltip="Replay the conversation under each strategy, beside what was really sent",
        ),
    ]

    @dataclass
    class WhatIfsBuilt(Message):
        """The what-if table, or why there is none."""

        rows: list[dict[str, Any]]
        error: str = ""

    @dataclass
    class ReportBuilt(Message):
        """The session's requests and their report, built off the UI thread."""

        exchanges: list[Exchange]
        report: list[dict[str, Any]]

    def __init__(self, store: Store, session_id: int, settings: Settings) -> None:
        super().__init__()
        self.store = store
        self.session_id = session_id
        self.settings = settings
        self.exchanges: list[Exchange] = []
        self.report: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="requests-screen"):
            yield Label(f"Requests · session {self.session_id} · reading…", id="requests-title")
            yield DataTable(id="requests-table", cursor_type="row", zebra_stripes=True)
            yield Static(id="requests-detail")
            yield Static(id="requests-whatifs")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(
            "#", "kind", "model", "status", "tools", "system", "history", "input", "out",
            "+/-", "cache", "cost", "running",
        )  # fmt: skip
        self.build_report()
        self.set_interval(FOLLOW_INTERVAL, self.follow)

    @work(thread=True, exclusive=True, group="requests", exit_on_error=False)
    def build_report(self) -> None:
        exchanges = self.store.exchanges(self.session_id)
        report = request_report(exchanges, self.settings)
        self.post_message(self.ReportBuilt(exchanges, report))

    @work(thread=True, exclusive=True, group="requests-follow", exit_on_error=False)
    def follow(self) -> None:
        """Rebuild the report when the session holds more requests than it shows."""
        if self.store.exchange_count(self.session_id) != len(self.report):
            self.app.call_from_thread(self.build_report)

    @on(ReportBuilt)
    def show_report(self, message: ReportBuilt) -> None:
        self.exchanges, self.report = message.exchanges, message.report
        title = self.query_one("#requests-title", Label)
        if not self.report:
            title.update(
                Text(
                    f"Requests · session {self.session_id} · none: only a session recorded by "
                    "`ctxscope proxy` has requests"
                )
            )
            return
        total = self.report[-1]["running_cost"]
        title.update(
            Text(
                f"Requests · session {self.session_id} · {len(self.report)} requests · "
                f"${total:.4f} at list price"
            )
        )
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear()
        for r in self.report:
            tokens = {x["name"]: x["tokens"] for x in r["layers"]}
            usage = r["usage"] or {}
            cache = (
                f"broke: {r['cache_break']['where']}"
                if r["cache_break"]
                else f"read {short_tokens(usage.get('cache_read_input_tokens', 0))}"
            )
            table.add_row(
                *(
                    Text(cell)
                    for cell in (
                        str(r["id"]),
                        r["kind"],
                        cut(r["model"], 24),
                        f"{r['status']} {r['outcome']}",
                        short_tokens(tokens["tools"]),
                        short_tokens(tokens["system"]),
                        short_tokens(tokens["history"]),
                        short_tokens(tokens["input"]),
                        short_tokens(r["output_tokens"]),
                        f"+{r['appended']} -{r['removed']}",
                        cache,
                        "—" if r["cost"] is None else f"${r['cost']:.4f}",
                        f"${r['running_cost']:.4f}",
                    )
                ),
                key=str(r["id"]),
            )
        table.focus()
        table.move_cursor(row=min(max(row, 0), len(self.report) - 1))
        self._show_detail(table.cursor_row)

    def action_what_ifs(self) -> None:
        self.query_one("#requests-whatifs", Static).update(
            Text("Replaying the conversation under each strategy…")
        )
        self.build_what_ifs()

    @work(thread=True, exclusive=True, group="requests-what-ifs", exit_on_error=False)
    def build_what_ifs(self) -> None:
        try:
            rows = what_if_table(self.store.exchanges(self.session_id), self.settings)
        except NoConversation as exc:
            self.post_message(self.WhatIfsBuilt([], str(exc)))
            return
        self.post_message(self.WhatIfsBuilt(rows))

    @on(WhatIfsBuilt)
    def show_what_ifs(self, message: WhatIfsBuilt) -> None:
        text = message.error or "\n".join(what_if_lines(message.rows))
        self.query_one("#requests-whatifs", Static).update(Text(text))

    @on(DataTable.RowHighlighted, "#requests-table")
    def row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.cursor_row)

    @on(DataTable.RowSelected, "#requests-table")
    def row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter: the request exactly as sent beside what it changed since the one before."""
        row = event.cursor_row
        if not 0 <= row < len(self.exchanges):
            return
        exchange = self.exchanges[row]
        assert exchange.id is not None
        previous, _ = find(self.exchanges, exchange.id)
        diff = request_diff(previous, exchange)
        against = "first request" if previous is None else f"changed since #{previous.id}"
        self.app.push_screen(
            DetailModal(
                f"request #{exchange.id} · {exchange.kind} · as sent",
                [
                    DetailPart("the body as sent", request_text(exchange)),
                    DetailPart(against, diff_text(diff)),
                ],
            )
        )

    def _show_detail(self, row: int) -> None:
        if 0 <= row < len(self.report):
            text = detail_text(self.report[row], self.exchanges[row])
            self.query_one("#requests-detail", Static).update(Text(text))
