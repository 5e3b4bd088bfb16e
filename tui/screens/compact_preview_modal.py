"""CompactPreviewModal: the compaction before it happens — what goes, the draft summary, the
figures after — with the draft editable before it is committed.

It is shown with a :class:`~engine.context.history.CompactionDraft` (nothing stored yet) and
dismisses
with what the user chose: :class:`Commit` (the text as it stands in the editor, edited or not),
:class:`Regenerate` (another focus), or None (abandon: nothing changes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, TextArea

from engine.compaction.ledger import fidelity_line
from engine.context.history import CompactionDraft
from engine.terminal_text import printable
from tui.formatting import tokens


@dataclass(frozen=True)
class Commit:
    """Store the compaction with this summary text."""

    content: str


@dataclass(frozen=True)
class Regenerate:
    """Write the draft again with this focus."""

    focus: str


def describe(draft: CompactionDraft, strategy: str) -> str:
    """What the draft archives and what is left, in words."""
    record = draft.record
    rounds = sorted({m.meta.round for m in draft.messages if m.meta.round is not None})
    if not rounds:
        span = "no round"
    elif len(rounds) == 1:
        span = f"round {rounds[0]}"
    else:
        span = f"rounds {rounds[0]}–{rounds[-1]}"
    archived = sum(m.tokens or 0 for m in draft.messages)
    lines = [
        f"{strategy}: archives {len(draft.messages)} messages of {span} "
        f"({tokens(archived)} tok); history {tokens(record.tokens_before)} → "
        f"{tokens(record.tokens_after)} tok.",
    ]
    if draft.supersede:
        n = len(draft.supersede)
        lines.append(f"It re-compacts or replaces {n} earlier summar{'y' if n == 1 else 'ies'}.")
    if draft.summary is not None:
        where = draft.summary.placement.value.replace("_", " ")
        fallback = " (extractive fallback)" if draft.summary.fallback else ""
        if record.fidelity is not None:
            lines.append(f"The draft keeps {fidelity_line(record.fidelity)} of the ledger.")
        lines.append(f"Draft summary{fallback}, sent as a {where}; edit it before committing:")
    else:
        lines.append("This strategy writes no summary.")
    return "\n".join(lines)


class CompactPreviewModal(ModalScreen[Commit | Regenerate | None]):
    """The draft: commit (Ctrl+S), regenerate with another focus, or abandon (Esc)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s",
            "commit",
            "Commit",
            id="compact_preview.commit",
            tooltip="Store the compaction with the summary as it stands in the editor",
        ),
        Binding(
            "escape",
            "abandon",
            "Abandon",
            id="compact_preview.abandon",
            tooltip="Close the preview; nothing is stored",
        ),
    ]

    def __init__(self, draft: CompactionDraft, strategy: str) -> None:
        super().__init__()
        self.draft = draft
        self.strategy = strategy

    def compose(self) -> ComposeResult:
        summary = self.draft.summary
        with Vertical(id="compact-preview-dialog", classes="dialog"):
            yield Label("Compaction preview — nothing is stored yet", id="compact-preview-title")
            yield Static(describe(self.draft, self.strategy), id="compact-preview-plan")
            yield TextArea(
                # Drawn as it will be committed: any control character copied from a recorded
                # message is shown (and kept) escaped.
                printable(summary.content) if summary else "",
                id="compact-preview-summary",
                soft_wrap=True,
                read_only=summary is None,
            )
            with Horizontal(classes="dialog-buttons"):
                yield Input(placeholder="another focus…", id="compact-preview-focus")
                yield Button("Regenerate", id="compact-preview-regenerate")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Commit (Ctrl+S)", variant="primary", id="compact-preview-commit")
                yield Button("Abandon (Esc)", id="compact-preview-abandon")

    def on_mount(self) -> None:
        area = self.query_one("#compact-preview-summary", TextArea)
        if self.app.is_headless:
            area.cursor_blink = False
            self.query_one("#compact-preview-focus", Input).cursor_blink = False
        area.focus()

    def action_commit(self) -> None:
        self.dismiss(Commit(self.query_one("#compact-preview-summary", TextArea).text))

    def action_abandon(self) -> None:
        self.dismiss(None)

    def _regenerate(self) -> None:
        self.dismiss(Regenerate(self.query_one("#compact-preview-focus", Input).value.strip()))

    @on(Button.Pressed, "#compact-preview-commit")
    def _commit_pressed(self) -> None:
        self.action_commit()

    @on(Button.Pressed, "#compact-preview-abandon")
    def _abandon_pressed(self) -> None:
        self.action_abandon()

    @on(Button.Pressed, "#compact-preview-regenerate")
    def _regenerate_pressed(self) -> None:
        self._regenerate()

    @on(Input.Submitted, "#compact-preview-focus")
    def _focus_submitted(self) -> None:
        self._regenerate()
