"""SessionHeader: one line naming the session, its workspace, provider and model, strategy;
its tooltip says the numbers the strategy plans with (stored with the session).

The title, the workspace and the model may come from a recording: each is drawn escaped
(:func:`tui.text_wrap.display_safe`) into a ``Text``, which Rich never reads as markup.

The offline provider is spelled out in a warning colour so nobody mistakes its rule-based
answers for a model's.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.reactive import Reactive, reactive
from textual.widget import Widget

from tui.formatting import one_line, provider_label
from tui.text_wrap import display_safe


@dataclass(frozen=True)
class HeaderInfo:
    """What the header shows."""

    session_id: int | None = None
    title: str = ""
    workspace: str = ""
    provider: str = ""
    model: str = ""
    strategy: str = ""
    offline: bool = False
    numbers: str = ""
    """The numbers the session's strategy plans with
    (``engine.settings.params.describe_params``)."""
    recorded_by: str = ""
    """For a recorded session: the agent that recorded it (``Claude Code``); the header then
    names it and the recorded model, says it is read-only, and gives its ``cost``."""
    cost: str = ""
    """A recorded session's calls at list price (``$11.85``, ``–`` without a price)."""


class SessionHeader(Widget):
    """The top line of the main screen."""

    DEFAULT_CSS = """
    SessionHeader {
        height: 1;
        background: $panel;
        color: $foreground;
    }
    """

    info: Reactive[HeaderInfo] = reactive(HeaderInfo)
    """The session described; set when a session opens or is renamed."""

    def watch_info(self, info: HeaderInfo) -> None:
        plans = f"{info.strategy} plans with {info.numbers}"
        self.tooltip = display_safe(plans) if info.numbers else None  # ctxscope's own words

    def render(self) -> Text:
        info = self.info
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(" ctxscope ", style="bold reverse")
        if info.session_id is None:
            text.append("  opening…", style="dim")
            return text
        title = one_line(info.title, 40) if info.title else "(untitled)"
        text.append(f" #{info.session_id} ", style="bold")
        text.append(title, style="bold")
        text.append("  │ ", style="dim")
        if info.recorded_by:
            # Another agent's session: its own model and cost first (what a narrow terminal
            # keeps), then what it is; the folder it names and ctxscope's strategy after.
            text.append(
                display_safe(f"{info.recorded_by} · {info.model or '?'}", one_line=True),
                style="bold",
            )
            text.append(f" · {info.cost}" if info.cost else "", style="bold")
            text.append("  │ ", style="dim")
            text.append("recorded, read-only", style="italic")
            text.append("  │ ", style="dim")
            text.append(f"what-if {info.strategy}", style="dim")
            text.append("  │ ", style="dim")
            text.append(display_safe(info.workspace, one_line=True), style="dim")
            return text
        text.append(display_safe(info.workspace, one_line=True))
        text.append("  │ ", style="dim")
        label = display_safe(provider_label(info.provider, info.model), one_line=True)
        text.append(label, style="bold black on yellow" if info.offline else "bold")
        text.append("  │ ", style="dim")
        text.append(f"strategy {display_safe(info.strategy, one_line=True)}")
        return text
