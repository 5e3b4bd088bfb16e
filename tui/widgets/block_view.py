"""BlockView: a virtual list of text blocks on Textual's Line API (ScrollView + render_line).

The chat, the scratchpad and the history panes are all lists of *blocks* (a header row, then
wrapped body rows). A session can hold 10 000 messages, so no widget is mounted per block:
the view keeps the blocks as plain data, wraps them into rows once per width (cheap string
slicing, with an optional cap of rows per block), finds a row's block by bisection, and
renders only the rows on screen, with an LRU cache of strips.

Appending or replacing the last block (a streaming answer) re-wraps that block only.
A cursor selects a block (Up/Down, Page keys, Home/End); Enter posts
:class:`BlockView.BlockActivated`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import Reactive, reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.blocks import GUTTER_WIDTH, Block
from tui.text_wrap import display_safe, wrap_rows

__all__ = ["Block", "BlockView"]


class BlockView(ScrollView, can_focus=True):
    """A scrollable, virtual list of :class:`Block` with a block cursor."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        f"block-view--{part}"
        for part in (
            "body gutter cursor header dim user assistant tool summary summary-header error "
            "separator keep cut thought action observation streaming interrupted notice"
        ).split()
    }
    """The styles blocks name (``Block.style``, header parts), themed in DEFAULT_CSS below."""

    DEFAULT_CSS = """
    BlockView {
        background: $surface;
        height: 1fr;
        scrollbar-gutter: stable;
        overflow-x: hidden;
        overflow-y: scroll;
        & > .block-view--body { color: $foreground; }
        & > .block-view--gutter { color: $foreground-muted; }
        & > .block-view--cursor { background: $boost; text-style: bold; }
        & > .block-view--header { color: $foreground-muted; text-style: bold; }
        & > .block-view--dim { color: $foreground-muted; }
        & > .block-view--user { color: $primary; text-style: bold; }
        & > .block-view--assistant { color: $success; text-style: bold; }
        & > .block-view--tool { color: $warning; text-style: bold; }
        & > .block-view--summary { color: $foreground; background: $secondary 20%; }
        & > .block-view--summary-header {
            color: $text; background: $secondary 60%; text-style: bold;
        }
        & > .block-view--error { color: $error; }
        & > .block-view--separator { color: $foreground-muted; }
        & > .block-view--keep { color: $success; }
        & > .block-view--cut { color: $error; text-style: bold; }
        & > .block-view--thought { color: $foreground; text-style: italic; }
        & > .block-view--action { color: $accent; }
        & > .block-view--observation { color: $foreground-muted; }
        & > .block-view--streaming { color: $foreground; text-style: italic; }
        & > .block-view--interrupted { color: $warning; text-style: bold; }
        & > .block-view--notice { color: $accent; text-style: bold; }
        &:focus > .block-view--cursor { background: $primary 30%; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Up", show=False, id="block.up", tooltip="Previous item"),
        Binding("down", "cursor_down", "Down", show=False, id="block.down", tooltip="Next item"),
        Binding("home", "cursor_first", "Top", show=False, id="block.home", tooltip="First item"),
        Binding("end", "cursor_last", "End", show=False, id="block.end", tooltip="Last item"),
        Binding("pageup", "page_up", "PgUp", show=False, id="block.pageup", tooltip="Page up"),
        Binding("pagedown", "page_down", "PgDn", show=False, id="block.pagedown", tooltip="Down"),
        Binding("enter", "activate", "Open", id="block.open", tooltip="The item in full"),
    ]

    cursor: Reactive[int | None] = reactive[int | None](None, layout=False)
    """Index of the selected block, or None."""

    @dataclass
    class BlockActivated(Message):
        """Enter was pressed on a block."""

        view: BlockView
        index: int
        block: Block

        @property
        def control(self) -> BlockView:
            return self.view

    def __init__(
        self,
        *,
        auto_scroll: bool = True,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.auto_scroll = auto_scroll
        """Follow new blocks when the view is already at the end."""
        self._blocks: list[Block] = []
        self._rows: list[list[str]] = []
        """Per block, its rendered rows (header row first when it has one)."""
        self._starts: list[int] = [0]
        """``_starts[i]`` is the first row of block i; the last item is the total row count."""
        self._width = 0
        self._wrapped: dict[int, tuple[Block, list[str]]] = {}
        """Rows of the blocks shown, by block identity, valid for ``_width``."""
        self._following = True
        """The view shows the end and keeps showing it as blocks arrive. A resize changes the
        height and the row count without scrolling, so "at the end" cannot be read off the
        offsets then: this flag changes only when the offset does (the user scrolled)."""
        self._cache: LRUCache[tuple[int, bool], Strip] = LRUCache(2048)
        self._styles: dict[str, Style] = {}
        self._combined: dict[tuple[str, bool], Style] = {}
        self._base: Style | None = None
        """The widget's own style (``rich_style`` walks its ancestors: once per style change,
        not once per row)."""

    # ------------------------------------------------------------------ data
    @property
    def blocks(self) -> Sequence[Block]:
        """The blocks shown (read only: change them with the methods below)."""
        return self._blocks

    @property
    def rows_ready(self) -> bool:
        """The blocks are wrapped at the view's width: False while blocks given before its
        first layout (one row each for now) wait for the resize that wraps them."""
        return not self._blocks or (self.size.width > 0 and self._width == self._content_width())

    @property
    def row_count(self) -> int:
        """Total number of rows at the current width."""
        return self._starts[-1]

    def set_blocks(self, blocks: Iterable[Block], *, scroll_end: bool = False) -> None:
        """Replace everything (a session opened, history reloaded)."""
        self._blocks = list(blocks)
        if self.cursor is not None and self.cursor >= len(self._blocks):
            self.cursor = None
        self._relayout()
        if scroll_end:
            self._following = True
            if self.size.width:
                self._to_end()
        elif self.size.width == 0:
            self._following = not self._blocks
        else:
            self._following = round(self.scroll_y) >= self.max_scroll_y

    def append_block(self, block: Block) -> None:
        """Add one block at the end (O(its rows))."""
        at_end = self._following
        self._blocks.append(block)
        rows = self._wrap(block)
        self._rows.append(rows)
        self._starts.append(self._starts[-1] + len(rows))
        self._after_tail_change(at_end)

    def replace_last(self, block: Block) -> None:
        """Replace the last block (a streaming answer grows); re-wraps that block only."""
        if not self._blocks:
            self.append_block(block)
            return
        at_end = self._following
        self._blocks[-1] = block
        rows = self._wrap(block)
        first = self._starts[-2]
        self._rows[-1] = rows
        self._starts[-1] = first + len(rows)
        for key in [k for k in self._cache.keys() if k[0] >= first]:
            self._cache.discard(key)
        self._after_tail_change(at_end)

    def pop_last(self) -> Block | None:
        """Remove the last block (a stream that turned out to be a thought)."""
        if not self._blocks:
            return None
        block = self._blocks.pop()
        self._rows.pop()
        first = self._starts[-2]
        self._starts.pop()
        for key in [k for k in self._cache.keys() if k[0] >= first]:
            self._cache.discard(key)
        if self.cursor is not None and self.cursor >= len(self._blocks):
            self.cursor = None
        self._after_tail_change(self._following)
        return block

    def clear(self) -> None:
        self.set_blocks([])

    # ------------------------------------------------------------------ layout
    def _content_width(self) -> int:
        return max(1, self.scrollable_content_region.width - GUTTER_WIDTH)

    def _wrap(self, block: Block) -> list[str]:
        if self.size.width == 0:
            return [""]  # wrapped for real on the first resize
        width = self._width or self._content_width()
        rows = wrap_rows(block.body, width, block.max_rows) if block.body else []
        rows = ([""] + rows) if block.header else (rows or [""])
        return [""] + rows if block.space_before else rows

    def _relayout(self) -> None:
        if self.size.width == 0:
            # Not laid out yet: one row per block for now, wrapped on the first resize.
            self._rows = [[""] for _ in self._blocks]
            self._starts = list(range(len(self._blocks) + 1))
            self._width = 0
            self._cache.clear()
            return
        width = self._content_width()
        if width != self._width:
            self._wrapped.clear()
        self._width = width
        wrapped = self._wrapped
        rows_of: list[list[str]] = []
        for block in self._blocks:
            # Blocks reused from the previous layout keep their rows (same width).
            key = id(block)
            hit = wrapped.get(key)
            if hit is None or hit[0] is not block:
                hit = (block, self._wrap(block))
            rows_of.append(hit[1])
        self._wrapped = {id(b): (b, rows) for b, rows in zip(self._blocks, rows_of, strict=True)}
        self._rows = rows_of
        starts = [0]
        total = 0
        for rows in self._rows:
            total += len(rows)
            starts.append(total)
        self._starts = starts
        self._cache.clear()
        self.virtual_size = Size(self._width + GUTTER_WIDTH, total)
        self.refresh()

    def _after_tail_change(self, at_end: bool) -> None:
        self.virtual_size = Size(self._width + GUTTER_WIDTH, self._starts[-1])
        self.refresh()
        if self.auto_scroll and at_end:
            self._to_end()

    def _to_end(self) -> None:
        """Scroll to the last row now, and again once the new size is laid out."""
        # force: right after a relayout the scrollbar (and so "may scroll") is not updated yet.
        self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)
        self.call_after_refresh(self._end_after_layout)
        # (The vertical bar is always shown, ``overflow-y: scroll``, so its thumb follows.)

    def _end_after_layout(self) -> None:
        if not self._following:
            return  # the blocks were replaced (or the user scrolled) in between
        self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self.size.height and self.virtual_size.height:
            self._following = round(new_value) >= self.max_scroll_y

    def on_resize(self, event: events.Resize) -> None:
        following = self._following
        top = self.block_at_row(int(self.scroll_y))
        if self._content_width() != self._width:
            self._relayout()
        if following:
            self._to_end()
        elif top is not None:
            self.scroll_to(y=self._starts[top], animate=False, immediate=True)
        self._following = following

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self._combined.clear()
        self._base = None
        self._cache.clear()

    # ------------------------------------------------------------------ rendering
    def block_at_row(self, row: int) -> int | None:
        """Index of the block that owns ``row`` (None past the end)."""
        if row < 0 or row >= self._starts[-1]:
            return None
        return bisect_right(self._starts, row) - 1

    def block_region(self, index: int) -> Region:
        """The rows of block ``index`` in virtual coordinates."""
        top = self._starts[index]
        return Region(0, top, self._width + GUTTER_WIDTH, self._starts[index + 1] - top)

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self.get_component_rich_style(name, partial=True)
            self._styles[name] = style
        return style

    def render_line(self, y: int) -> Strip:
        return self.row_strip(int(self.scroll_y) + y)

    def row_strip(self, row: int) -> Strip:
        """Row ``row`` of the whole list as drawn at the current width (on screen or not)."""
        width = self.scrollable_content_region.width
        index = self.block_at_row(row)
        base = self.base_style
        if index is None or not self._width:
            # No row, or rows not wrapped yet (blocks given before the first layout: the
            # resize that wraps them comes right after this frame).
            return Strip.blank(width, base)
        selected = index == self.cursor
        key = (row, selected)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        strip = self._render_row(index, row - self._starts[index], width, selected)
        self._cache[key] = strip
        return strip

    @property
    def base_style(self) -> Style:
        """The widget's style, computed once per style change."""
        if self._base is None:
            self._base = self.rich_style
        return self._base

    def _full_style(self, name: str, selected: bool) -> Style:
        """The widget's style + component ``name`` (+ the cursor), combined once."""
        key = (name, selected)
        style = self._combined.get(key)
        if style is None:
            style = self.base_style + self._style(name)
            if selected:
                style += self._style("block-view--cursor")
            self._combined[key] = style
        return style

    def _render_row(self, index: int, offset: int, width: int, selected: bool) -> Strip:
        block = self._blocks[index]
        if block.space_before:
            if offset == 0:
                return Strip.blank(width, self.base_style)
            offset -= 1
        segments = [Segment(block.gutter + " ", self._full_style(block.gutter_style, False))]
        used = GUTTER_WIDTH
        if block.header and offset == 0:
            for raw, cls in block.header:
                text = display_safe(raw, one_line=True)
                segments.append(Segment(text, self._full_style(cls, selected)))
                used += cell_len(text)
            fill = block.fill * max(0, width - used)
            segments.append(Segment(fill, self._full_style(block.header[-1][1], selected)))
        else:
            text = self._rows[index][offset + (1 if block.space_before else 0)]
            style = self._full_style(block.style, selected)
            segments.append(Segment(text, style))
            used += cell_len(text)
            segments.append(Segment(" " * max(0, width - used), style))
        if used <= width:
            return Strip(segments, width)
        return Strip(segments).crop_extend(0, width, self.base_style)

    # ------------------------------------------------------------------ cursor
    def watch_cursor(self, old: int | None, new: int | None) -> None:
        self._cache.clear()
        self.refresh()
        if new is not None and 0 <= new < len(self._blocks):
            self.scroll_to_region(self.block_region(new), animate=False, immediate=True)

    def _step(self, start: int, delta: int) -> int | None:
        i = start
        while 0 <= i < len(self._blocks):
            if self._blocks[i].selectable:
                return i
            i += delta
        return None

    def action_cursor_up(self) -> None:
        if not self._blocks:
            return
        start = len(self._blocks) - 1 if self.cursor is None else self.cursor - 1
        found = self._step(start, -1)
        if found is not None:
            self.cursor = found

    def action_cursor_down(self) -> None:
        if not self._blocks:
            return
        start = 0 if self.cursor is None else self.cursor + 1
        found = self._step(start, 1)
        if found is not None:
            self.cursor = found

    def action_cursor_first(self) -> None:
        found = self._step(0, 1)
        if found is not None:
            self.cursor = found
        self.scroll_home(animate=False, immediate=True)

    def action_cursor_last(self) -> None:
        found = self._step(len(self._blocks) - 1, -1)
        if found is not None:
            self.cursor = found
        self.scroll_end(animate=False, immediate=True)

    def action_activate(self) -> None:
        if self.cursor is not None and 0 <= self.cursor < len(self._blocks):
            self.post_message(self.BlockActivated(self, self.cursor, self._blocks[self.cursor]))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        index = self.block_at_row(int(self.scroll_y) + offset.y)
        if index is not None and self._blocks[index].selectable:
            if index == self.cursor and event.chain >= 2:
                self.action_activate()
            self.cursor = index
