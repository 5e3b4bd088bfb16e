"""HistoryView: L3 as stored — what the next request will carry.

Summaries come first, on their own colour; then the rounds, each under a separator with its
status. Every message shows its role and token count; a tool message shows the compressed JSON
that history keeps (Enter opens the full raw observation). Two marks place the session in the
compaction rules: where the next compaction would cut (rounds above go into one summary) and
the keep zone, the last ``keep_rounds`` rounds that are never compacted (a green bar). While a
cut is chosen by hand (F5), the marks say "compact here" and "stays" instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from engine.models import History, Message, Placement, RoundStatus, Summary
from engine.terminal_text import plural
from tui.formatting import is_local_command, round_span, tokens
from tui.widgets.block_view import Block, BlockView

MESSAGE_ROWS = 4
"""Body rows a message shows in the pane; the whole message is one key away."""
SUMMARY_ROWS = 14
KEEP_BAR = "▌"


@dataclass
class HistoryLayout:
    """Everything the pane needs to draw L3 and its compaction marks."""

    history: History
    keep_rounds: int
    cut_rounds: list[int] = field(default_factory=list)
    """Rounds the next compaction would archive (``Strategy.select_rounds``)."""
    statuses: dict[int, RoundStatus] = field(default_factory=dict)
    by_hand: bool = False
    """The cut is one being chosen by hand (F5): the marks say so, and how to move it."""


def _role_header(msg: Message) -> tuple[tuple[str, str], ...]:
    meta = msg.meta
    if msg.role == "user":
        parts: list[tuple[str, str]] = [("user", "block-view--user")]
    elif msg.role == "assistant":
        label = "assistant"
        if meta.final:
            label += " · final"
        elif meta.step:
            label += f" · step {meta.step}"
        parts = [(label, "block-view--assistant")]
    elif msg.role == "tool":
        label = f"tool · {meta.tool_name or '?'}"
        parts = [(label, "block-view--error" if meta.is_error else "block-view--tool")]
    else:
        parts = [(msg.role, "block-view--summary-header")]
    parts.append((f"  {tokens(msg.tokens)} tok", "block-view--dim"))
    if msg.pinned:
        parts.append(("  ◆ pinned", "block-view--keep"))
    if meta.interrupted:
        parts.append(("  ⏹ interrupted", "block-view--interrupted"))
    elif meta.is_error:
        parts.append(("  error", "block-view--error"))
    return tuple(parts)


def _body(msg: Message) -> str:
    if msg.role != "assistant" or not msg.tool_calls:
        return msg.content
    lines = [msg.content.strip()] if msg.content.strip() else []
    for call in msg.tool_calls:
        args = json.dumps(call.input, ensure_ascii=False, separators=(",", ":"))
        lines.append(f"→ {call.name} {args}")
    return "\n".join(lines)


class BlockMemo:
    """Message blocks by message id, so a redraw after each round reuses the unchanged ones.

    A stored message never changes, so its block (and the rows BlockView wrapped for it) can
    be kept for the whole session; a 10 000-message history then redraws in milliseconds.
    Used from one thread at a time (the session's worker).
    """

    def __init__(self) -> None:
        self._blocks: dict[tuple[int, bool, bool, int], Block] = {}

    def block(self, msg: Message, in_keep_zone: bool) -> Block:
        if msg.id is None:
            return message_block(msg, in_keep_zone)
        # A pin, a mask or a projection changes what is shown for the same message id.
        key = (msg.id, in_keep_zone, msg.pinned, hash(msg.content))
        found = self._blocks.get(key)
        if found is None:
            found = self._blocks[key] = message_block(msg, in_keep_zone)
        return found


def message_block(msg: Message, in_keep_zone: bool) -> Block:
    """One stored message."""
    style = "block-view--observation" if msg.role == "tool" else "block-view--body"
    return Block(
        body=_body(msg),
        header=_role_header(msg),
        style=style,
        gutter=KEEP_BAR if in_keep_zone else " ",
        gutter_style="block-view--keep" if in_keep_zone else "block-view--gutter",
        max_rows=MESSAGE_ROWS,
        data=msg,
    )


PLACEMENT_LABELS: dict[Placement, str] = {
    Placement.SYSTEM_BLOCK: "a system block",
    Placement.SYSTEM_HINT: "a hint in the system prompt",
    Placement.MOCK_PAIR: "a mock user turn + the assistant's answer",
    Placement.ASSISTANT_MESSAGE: "an assistant message",
    Placement.USER_MESSAGE: "a user message",
}
"""How the request carries each summary (``engine.compaction.placement``)."""


def summary_block(number: int, summary: Summary) -> Block:
    where = PLACEMENT_LABELS.get(summary.placement, summary.placement.value)
    label = f"▣ SUMMARY {number} · {round_span(summary.first_round, summary.last_round, True)}"
    header: tuple[tuple[str, str], ...] = (
        (label, "block-view--summary-header"),
        (f" · {tokens(summary.tokens)} tok", "block-view--summary-header"),
    )
    if summary.fallback:
        header += ((" · extractive fallback", "block-view--summary-header"),)
    return Block(
        body=f"(sent as {where})\n{summary.content.strip()}",
        header=header + ((" ", "block-view--summary-header"),),
        style="block-view--summary",
        gutter="┃",
        gutter_style="block-view--summary-header",
        max_rows=SUMMARY_ROWS,
        data=summary,
    )


def _separator(text: str, style: str, fill: str, gutter: str = " ", gstyle: str = "") -> Block:
    return Block(
        header=((text, style),),
        fill=fill,
        gutter=gutter,
        gutter_style=gstyle or "block-view--gutter",
        selectable=False,
    )


def history_blocks(layout: HistoryLayout, memo: BlockMemo | None = None) -> list[Block]:
    """The pane's blocks for ``layout`` (summaries, marks, rounds, messages)."""
    make = memo.block if memo is not None else message_block
    history = layout.history
    if not history.summaries and not history.messages:
        return [EMPTY]
    blocks = [summary_block(n, s) for n, s in enumerate(history.summaries, 1)]
    groups = history.rounds()
    keep_from = max(0, len(groups) - layout.keep_rounds)
    cut = set(layout.cut_rounds)
    cut_tokens = 0
    for i, group in enumerate(groups):
        index = group[0].meta.round
        in_keep = i >= keep_from
        if i == keep_from and (cut or i > 0):
            if cut:
                blocks.append(_cut_mark(layout, cut_tokens))
            blocks.append(_keep_mark(layout, len(groups) - keep_from))
        elif i == 0 and keep_from == 0:
            blocks.append(_keep_mark(layout, len(groups)))
        status = layout.statuses.get(index) if index is not None else None
        label = f"── round {index if index is not None else '?'}"
        if all(m.role == "user" and is_local_command(m.content) for m in group):
            status = None  # recorded without an answer, not cut short
            label += " · local command"
        label += f" · {status.value}" if status and status != RoundStatus.FINISHED else ""
        label += f" · {tokens(sum(m.tokens or 0 for m in group))} tok "
        blocks.append(
            _separator(
                label,
                "block-view--interrupted"
                if status in (RoundStatus.INTERRUPTED, RoundStatus.ERROR)
                else "block-view--separator",
                "─",
                KEEP_BAR if in_keep else " ",
                "block-view--keep" if in_keep else "",
            )
        )
        for msg in group:
            if index in cut and not msg.pinned:  # a pinned message is never archived
                cut_tokens += msg.tokens or 0
            blocks.append(make(msg, in_keep))
    if keep_from == len(groups) and cut:
        blocks.append(_cut_mark(layout, cut_tokens))
    return blocks


CUT_LABELS = ("✂ compact here ", "✂ next compaction cut ")


def cut_mark_index(blocks: list[Block]) -> int | None:
    """Where the cut mark is among ``blocks`` (None: no cut)."""
    for i, block in enumerate(blocks):
        if block.header and block.header[0][0] in CUT_LABELS:
            return i
    return None


def _cut_mark(layout: HistoryLayout, cut_tokens: int) -> Block:
    span = round_span(min(layout.cut_rounds), max(layout.cut_rounds))
    detail = f"{span} above ({tokens(cut_tokens)} tok) → one summary"
    if layout.by_hand:
        return _marker(
            "✂ compact here",
            f"{detail} · ↑ ↓ move the cut · Enter compacts · Esc cancels",
            "block-view--cut",
            "┄",
        )
    return _marker("✂ next compaction cut", detail, "block-view--cut", "┄")


EMPTY = Block(
    body=(
        "No history yet. Each step of a round is written here as soon as it is stored, "
        "compressed, as the next request will carry it."
    ),
    style="block-view--dim",
    selectable=False,
)


def _marker(
    label: str, detail: str, style: str, fill: str, gutter: str = " ", gstyle: str = ""
) -> Block:
    """A mark line (``label`` + ``fill``) with ``detail`` wrapped under it, so nothing is cut
    off however narrow the pane is."""
    return Block(
        body=detail,
        header=((label + " ", style),),
        style=style,
        fill=fill,
        gutter=gutter,
        gutter_style=gstyle or "block-view--gutter",
        selectable=False,
    )


def _keep_mark(layout: HistoryLayout, present: int) -> Block:
    keep_rounds = layout.keep_rounds
    last = "the last round" if keep_rounds == 1 else f"the last {plural(keep_rounds, 'round')}"
    if layout.by_hand:
        return _marker(
            "━ stays", f"{last}, as it is", "block-view--keep", "━", KEEP_BAR, "block-view--keep"
        )
    detail = f"{last}, never compacted" if present else "empty"
    return _marker("━ keep zone", detail, "block-view--keep", "━", KEEP_BAR, "block-view--keep")


class HistoryView(BlockView):
    """The compressed history pane."""

    def selected_message(self) -> Message | None:
        """The stored message under the cursor, or None (a summary, a mark, nothing)."""
        if self.cursor is None or not 0 <= self.cursor < len(self.blocks):
            return None
        msg = self.blocks[self.cursor].data
        return msg if isinstance(msg, Message) and msg.id is not None else None

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.layout_data: HistoryLayout | None = None
        """What is on screen now."""

    def show(
        self, layout: HistoryLayout, blocks: list[Block] | None = None, *, scroll_end: bool = True
    ) -> None:
        """Draw ``layout`` (a session opened, a round closed, a compaction finished).

        ``blocks`` are :func:`history_blocks` of the layout when the caller built them already
        (off the UI thread).
        """
        self.layout_data = layout
        self.set_blocks(history_blocks(layout) if blocks is None else blocks, scroll_end=scroll_end)

    def append_message(self, msg: Message, new_round: bool) -> None:
        """A step was written during a round: add it without redrawing everything."""
        if len(self.blocks) == 1 and self.blocks[0] is EMPTY:
            self.clear()
        if new_round:
            self.append_block(
                _separator(
                    f"── round {msg.meta.round} · open ",
                    "block-view--separator",
                    "─",
                    KEEP_BAR,
                    "block-view--keep",
                )
            )
        self.append_block(message_block(msg, True))

    def messages_shown(self) -> int:
        """How many message blocks the pane holds (for tests and the status line)."""
        return sum(1 for b in self.blocks if isinstance(b.data, Message))
