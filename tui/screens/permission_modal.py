"""PermissionModal: a tool asks before running Bash or changing a file (policy ``ask``).

Shows the command, or the unified diff the change would make, and returns the answer: allow
once, always for this session (that kind of tool stops asking), or deny.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from tools.base import PermissionAnswer, PermissionRequest
from tui.text_wrap import display_safe, plain


def render_detail(request: PermissionRequest) -> Text:
    """The command as is, or the diff with added / removed lines coloured."""
    if request.kind == "bash":
        return Text("$ " + display_safe(request.detail), style="bold")
    text = Text()
    for line in display_safe(request.detail).splitlines():
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        text.append(line + "\n", style=style)
    return text


class PermissionModal(ModalScreen[PermissionAnswer]):
    """Allow once / always for this session / deny."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "a",
            "answer('allow')",
            "Allow once",
            id="permission.allow",
            tooltip="Run this call once",
        ),
        Binding(
            "s",
            "answer('always')",
            "Always (session)",
            id="permission.always",
            tooltip="Run this kind of call without asking for the rest of the session",
        ),
        Binding(
            "d,escape",
            "answer('deny')",
            "Deny",
            id="permission.deny",
            tooltip="Refuse; the agent is told the user denied the call",
        ),
    ]

    def __init__(self, request: PermissionRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        req = self.request
        what = "run a shell command" if req.kind == "bash" else "change a file"
        with Vertical(id="permission-dialog", classes="dialog"):
            # The model chose the command and the file (a recording's text can steer it):
            # shown escaped, never read as markup.
            title = plain(f"The agent wants to {what} ({req.tool_name})", one_line=True)
            yield Label(title, id="permission-title")
            yield Static(plain(req.summary), id="permission-summary")
            with VerticalScroll(id="permission-detail"):
                yield Static(render_detail(req))
            with Horizontal(classes="dialog-buttons"):
                yield Button("Allow once (a)", variant="success", id="allow")
                yield Button("Always this session (s)", variant="warning", id="always")
                yield Button("Deny (d / Esc)", variant="error", id="deny")

    def on_mount(self) -> None:
        self.query_one("#deny", Button).focus()

    def action_answer(self, answer: PermissionAnswer) -> None:
        self.dismiss(answer)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        answers: dict[str, PermissionAnswer] = {
            "allow": "allow",
            "always": "always",
            "deny": "deny",
        }
        self.dismiss(answers.get(event.button.id or "", "deny"))
