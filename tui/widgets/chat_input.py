"""ChatInput: the question box, with ``@path`` completion from the workspace's files.

Typing ``@src/ma`` suggests ``@src/main.py`` as ghost text (Right or End accepts it). The file
list is gathered off the UI thread with the tools' own walk (``.gitignore`` honoured) and handed
over with :meth:`WorkspaceSuggester.set_files`.

Enter is handled in the box's own key handler, in order with the keys typed after it: the text
is taken and the box cleared in one step, then :class:`ChatInput.Sent` is posted. (Through the
app-level ``enter`` binding, keys typed ~50 ms after Enter reached the box before the submit
action ran and were sent with the message.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from textual import events
from textual.message import Message
from textual.suggester import Suggester
from textual.widgets import Input

from tools.walk import walk_files

MENTION_PREFIX = re.compile(r"(?:^|(?<=[^a-zA-Z0-9]))@([a-zA-Z0-9/._-]*)$")
"""An @mention being typed at the end of the input (the engine's A7 rule for what counts)."""
MENTIONABLE = re.compile(r"[a-zA-Z0-9/._-]+")
"""A path an @mention can name (the characters :data:`MENTION_PREFIX` takes)."""
MAX_FILES = 20_000


def workspace_files(root: Path, limit: int = MAX_FILES) -> list[str]:
    """Workspace-relative paths of files, shallow ones first (what completion offers first)."""
    root = root.resolve()
    found: list[str] = []
    try:
        for rel, _entry in walk_files(root, root):
            if MENTIONABLE.fullmatch(rel) is None:
                # An @mention cannot name it (and its name may hold control characters,
                # which the suggestion would draw raw): not offered.
                continue
            found.append(rel)
            if len(found) >= limit:
                break
    except OSError:
        pass
    found.sort(key=lambda p: (p.count("/"), p))
    return found


class WorkspaceSuggester(Suggester):
    """Completes the ``@path`` at the end of the input from a list of workspace files."""

    def __init__(self, files: Iterable[str] = ()) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self._files = list(files)

    def set_files(self, files: Iterable[str]) -> None:
        self._files = list(files)

    @property
    def files(self) -> list[str]:
        return self._files

    def complete(self, value: str) -> str | None:
        """``value`` with its trailing @mention completed, or None."""
        match = MENTION_PREFIX.search(value)
        if match is None:
            return None
        prefix = match.group(1)
        for path in self._files:
            if path.startswith(prefix) and path != prefix:
                return value + path[len(prefix) :]
        return None

    async def get_suggestion(self, value: str) -> str | None:
        return self.complete(value)


class ChatInput(Input):
    """The input box of the chat pane."""

    PLACEHOLDER = "Ask… (@path mentions a file)"

    @dataclass
    class Sent(Message):
        """Enter was pressed: ``text`` was taken out of the box (which is empty now)."""

        input: ChatInput
        text: str

        @property
        def control(self) -> ChatInput:
            return self.input

    refusal: str | None = None
    """Why nothing can be sent now (the agent is busy), or None: Enter then keeps the text."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            placeholder=self.PLACEHOLDER,
            suggester=WorkspaceSuggester(),
            id=id,
            select_on_focus=False,  # keys redirected from a pane add to the text
        )

    @property
    def workspace_suggester(self) -> WorkspaceSuggester:
        suggester = self.suggester
        assert isinstance(suggester, WorkspaceSuggester)
        return suggester

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.send()
            return
        await super()._on_key(event)

    def send(self) -> None:
        """Take the text and clear the box in one step, then post :class:`Sent`."""
        text = self.value
        if not text.strip():
            return
        if self.refusal is not None:
            self.notify(self.refusal, title="Busy", severity="warning")
            return
        self.value = ""
        self.post_message(self.Sent(self, text))

    def on_mount(self) -> None:
        # A blinking cursor makes screenshots differ from run to run; tests run headless.
        if self.app.is_headless:
            self.cursor_blink = False
