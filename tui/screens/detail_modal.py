"""DetailModal: one history item in full — a message, a summary, or a tool call's raw result.

For a tool message it puts the compressed JSON that history keeps beside the full observation
the model saw in the scratchpad (``Store.observation_for``), each with its token count: the
saving that compression bought, side by side.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, TextArea

from engine.context.builder import render_messages
from engine.models import Message, Observation, Summary
from tui.formatting import round_span, tokens
from tui.text_wrap import display_safe, plain


@dataclass(frozen=True)
class DetailPart:
    """One column of the dialog."""

    title: str
    text: str


def pretty_json(text: str) -> str:
    """``text`` indented if it is JSON, as is otherwise."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (json.JSONDecodeError, TypeError):
        return text


def parts_for_message(msg: Message, observation: Observation | None) -> list[DetailPart]:
    """The columns that show ``msg`` (and its raw observation, for a tool message)."""
    if msg.role != "tool":
        return [DetailPart(f"{msg.role} · {tokens(msg.tokens)} tok", render_messages([msg]))]
    kept = DetailPart(
        f"in history (compressed) · {tokens(msg.tokens)} tok", pretty_json(msg.content)
    )
    if observation is None:
        return [kept, DetailPart("full observation", "(no raw observation stored for this call)")]
    raw = DetailPart(
        f"full observation (what the model saw) · {tokens(observation.tokens_full)} tok",
        observation.text,
    )
    return [kept, raw]


def parts_for_summary(summary: Summary) -> list[DetailPart]:
    title = f"summary of {round_span(summary.first_round, summary.last_round)}"
    return [DetailPart(f"{title} · {tokens(summary.tokens)} tok", summary.content)]


class DetailModal(ModalScreen[None]):
    """Read-only columns of text; Esc closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="detail.close", tooltip="Back to the panes"),
    ]

    def __init__(self, heading: str, parts: list[DetailPart]) -> None:
        super().__init__()
        self.heading = heading
        self.parts = parts

    def compose(self) -> ComposeResult:
        with Vertical(id="detail-dialog", classes="dialog"):
            yield Label(plain(self.heading, one_line=True), id="detail-title")
            with Horizontal(id="detail-columns"):
                for part in self.parts:
                    with Vertical(classes="detail-column"):
                        yield Label(plain(part.title, one_line=True), classes="detail-heading")
                        area = TextArea(
                            display_safe(part.text),
                            read_only=True,
                            soft_wrap=True,
                            classes="detail-text",
                        )
                        if self.app.is_headless:
                            area.cursor_blink = False
                        yield area

    def action_close(self) -> None:
        self.dismiss(None)
