"""ChatView: the conversation as the user sees it — inputs, streamed answers, interruptions.

Only user inputs and the final answers of rounds appear here (the steps in between belong to
the scratchpad); inputs are shown as typed, without the @file system-reminder the engine
appended. A streaming answer is one block that is replaced as text arrives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tui.formatting import strip_reminders
from tui.widgets.block_view import Block, BlockView

ChatRole = Literal["user", "answer", "notice"]


@dataclass(frozen=True)
class ChatEntry:
    """One line of the conversation, as restored from the store or built from events."""

    role: ChatRole
    text: str
    round_index: int | None = None
    interrupted: bool = False
    error: bool = False


OFFLINE_PHRASES = (
    "@path, ls [dir], read FILE, glob PATTERN, grep PATTERN [in PATH]",
    "run `CMD` (asks first), todo: a; b — several joined with `then`",
)
EXAMPLES = (
    "read README.md then ls .",
    "grep TODO then glob **/*.py",
    "todo: read the code; write a test",
)
"""Three questions the offline provider answers with real tool calls (Enter or a click puts
one in the input box)."""


@dataclass(frozen=True)
class Example:
    """An example question shown in an empty chat."""

    text: str


def intro_blocks(offline: bool) -> list[Block]:
    """What an empty chat says: how to start, and (offline) what the rules understand."""
    if not offline:
        return [
            Block(
                body="Ask anything about this workspace; @path mentions a file. "
                "F1 lists every key.",
                style="block-view--dim",
                selectable=False,
            )
        ]
    lines = "\n".join(f"• {p}" for p in OFFLINE_PHRASES)
    blocks = [
        Block(
            body=f"Offline: rule-based answers, no LLM. It understands:\n{lines}\n"
            "Try one (Enter or a click puts it in the box):",
            style="block-view--dim",
            selectable=False,
        )
    ]
    blocks += [
        Block(body=f"▷ {text}", style="block-view--user", data=Example(text)) for text in EXAMPLES
    ]
    blocks.append(
        Block(
            body="With ANTHROPIC_API_KEY set, Claude answers. F1: every key.",
            style="block-view--dim",
            selectable=False,
            space_before=True,
        )
    )
    return blocks


class ChatView(BlockView):
    """The chat pane's transcript."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._streaming = False

    # ------------------------------------------------------------------ blocks
    @staticmethod
    def block_for(entry: ChatEntry) -> Block:
        """The block that shows ``entry``."""
        if entry.role == "user":
            header: tuple[tuple[str, str], ...] = (("▶ you", "block-view--user"),)
            if entry.round_index is not None:
                header += ((f"  · round {entry.round_index}", "block-view--dim"),)
            return Block(
                body=strip_reminders(entry.text), header=header, space_before=True, data=entry
            )
        if entry.role == "notice":
            return Block(body=entry.text, style="block-view--notice", selectable=False, data=entry)
        header = (("◀ agent", "block-view--assistant"),)
        style = "block-view--body"
        if entry.interrupted:
            header += (("  ⏹ interrupted", "block-view--interrupted"),)
            style = "block-view--dim"
        elif entry.error:
            header += (("  ✗ error", "block-view--error"),)
            style = "block-view--error"
        return Block(body=entry.text, header=header, style=style, data=entry)

    def load(self, entries: list[ChatEntry], *, offline: bool = False) -> None:
        """Show a whole conversation (a session opened); an empty one explains itself."""
        self._streaming = False
        if not entries:
            self.set_blocks(intro_blocks(offline))
            return
        self.set_blocks([self.block_for(e) for e in entries], scroll_end=True)

    @property
    def showing_intro(self) -> bool:
        return bool(self.blocks) and not any(isinstance(b.data, ChatEntry) for b in self.blocks)

    def add(self, entry: ChatEntry) -> None:
        """Append one entry (ends a stream in progress first)."""
        if self.showing_intro:
            self.set_blocks([])
        if self._streaming:
            self.finish_stream(None)
        self.append_block(self.block_for(entry))

    # ------------------------------------------------------------------ streaming
    def stream(self, text: str) -> None:
        """Show ``text`` (everything received so far) as the answer being written."""
        block = Block(
            body=text,
            header=(("◀ agent", "block-view--assistant"), ("  … writing", "block-view--dim")),
            style="block-view--streaming",
            selectable=False,
        )
        if self._streaming:
            self.replace_last(block)
        else:
            self.append_block(block)
            self._streaming = True

    def finish_stream(self, entry: ChatEntry | None) -> None:
        """End the stream: keep ``entry`` in its place, or drop it (the text was a thought)."""
        if not self._streaming:
            if entry is not None:
                self.append_block(self.block_for(entry))
            return
        self._streaming = False
        if entry is None:
            self.pop_last()
        else:
            self.replace_last(self.block_for(entry))

    @property
    def streaming(self) -> bool:
        """True while an answer is being streamed into the last block."""
        return self._streaming
