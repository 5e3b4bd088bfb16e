"""KeyBar: the main screen's footer line, which always fits.

Textual's ``Footer`` lays every shown binding out in a row and docks the command-palette key on
top of the last ones when the row is too long (at 80 columns ``Quit`` and ``Interrupt`` fell
off and a stray ``paletteq`` showed). This bar lists the active bindings of the screen (public
``Screen.active_bindings``) and, when they do not fit, leaves out the least important first, as
ranked by ``drop_order``; the ones that matter most (Quit, Interrupt, Keys) stay. A click on a
key runs its action. Every binding is also on the keys screen (F1) and in the command palette.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import RenderResult
from textual.binding import Binding
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widget import Widget


@dataclass(frozen=True)
class _Shown:
    key: str
    label: str
    action: str
    node: DOMNode
    start: int
    end: int


class KeyBar(Widget):
    """One line of ``key label`` pairs for the screen's shown, enabled bindings."""

    COMPONENT_CLASSES = {"key-bar--key", "key-bar--palette"}
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        background: $footer-background;
        color: $footer-foreground;
        & > .key-bar--key { color: $footer-key-foreground; text-style: bold; }
        & > .key-bar--palette { color: $footer-foreground; text-style: dim; }
    }
    """

    def __init__(
        self, drop_order: Sequence[str] = (), *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.drop_order = tuple(drop_order)
        """Actions to leave out first when the line is too long (first = least important)."""
        self._shown: list[_Shown] = []

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self.refresh()

    def _candidates(self) -> list[tuple[Binding, DOMNode]]:
        seen: set[str] = set()
        out: list[tuple[Binding, DOMNode]] = []
        for active in self.screen.active_bindings.values():
            binding = active.binding
            if not binding.show or not active.enabled or binding.action in seen:
                continue
            seen.add(binding.action)
            out.append((binding, active.node))
        # One order whatever the focus went through first (Textual's map lists a priority
        # binding first or not by how it was reached): the focused widgets' keys, then the
        # screen's, then the app's, each node's priority keys first, then in the order it
        # declares them.
        return sorted(
            out,
            key=lambda item: (_rank(item[1], self.screen), not item[0].priority, _declared(*item)),
        )

    def labels(self) -> list[str]:
        """The ``key label`` pairs on the line now (for tests)."""
        return [f"{s.key} {s.label}" for s in self._shown]

    def render(self) -> RenderResult:
        width = self.size.width
        items = self._candidates()
        palette = f" {self.app.get_key_display(Binding('ctrl+p', 'command_palette'))} palette"

        def length(chosen: list[tuple[Binding, DOMNode]]) -> int:
            return sum(
                cell_len(f" {self.app.get_key_display(b)} {b.description} ") for b, _ in chosen
            )

        for action in self.drop_order:
            if length(items) <= width:
                break
            items = [(b, n) for b, n in items if b.action != action]
        while items and length(items) > width:
            # Still too long: leave out the last key but Quit.
            last = max(i for i, (b, _) in enumerate(items) if b.action != "quit" or i == 0)
            items.pop(last)
        text = Text(no_wrap=True, overflow="crop")
        key_style = self.get_component_rich_style("key-bar--key")
        shown: list[_Shown] = []
        for binding, node in items:
            key = self.app.get_key_display(binding)
            start = cell_len(text.plain)
            text.append(f" {key} ", style=key_style)
            text.append(f"{binding.description} ")
            shown.append(_Shown(key, binding.description, binding.action, node, start, len(text)))
        if cell_len(text.plain) + cell_len(palette) <= width:
            text.append(" " * (width - cell_len(text.plain) - cell_len(palette)))
            text.append(palette, style=self.get_component_rich_style("key-bar--palette"))
        self._shown = shown
        return text

    async def on_click(self, event: events.Click) -> None:
        for item in self._shown:
            if item.start <= event.x < item.end:
                await self.app.run_action(item.action, item.node)
                return


def _rank(node: DOMNode, screen: Screen[object]) -> int:
    """Widgets 0, the screen 1, the app 2."""
    if node is screen:
        return 1
    return 2 if node is node.app else 0


def _declared(binding: Binding, node: DOMNode) -> int:
    """Where ``binding`` stands in its node's class ``BINDINGS`` (at the end: not there)."""
    for index, declared in enumerate(getattr(type(node), "BINDINGS", ())):
        if isinstance(declared, Binding) and declared.action == binding.action:
            return index
    return 1_000
