"""ScratchpadView: the current round's ReAct steps as they happen, with FULL observations.

Seed 000 A2: within a round the model sees every observation whole; history keeps only the
compressed form. This pane shows what the model sees: the thought (streamed), each action with
its arguments, each full observation with its token cost next to what history keeps. It is
empty between rounds; the last round's steps can be brought back (``show_last``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from textual.reactive import Reactive, reactive

from engine.context.builder import ScratchStep
from engine.events import ToolFinished
from engine.models import Message, ToolCall
from tui.formatting import tokens
from tui.widgets.block_view import Block, BlockView


def thought_block(step: int | None, text: str, *, streaming: bool = False) -> Block:
    label = "◇ thought" + (f" · step {step}" if step else "")
    header: tuple[tuple[str, str], ...] = ((label, "block-view--header"),)
    if streaming:
        header += (("  … streaming", "block-view--dim"),)
    style = "block-view--streaming" if streaming else "block-view--thought"
    return Block(body=text.strip(), header=header, style=style, selectable=not streaming)


def action_block(step: int | None, call: ToolCall) -> Block:
    args = json.dumps(call.input, indent=2, ensure_ascii=False)
    label = "▸ action" + (f" · step {step}" if step else "")
    return Block(
        body=f"{call.name} {args}",
        header=((label, "block-view--action"), (f"  {call.name}", "block-view--tool")),
        style="block-view--action",
        data=call,
    )


def running_block(call: ToolCall) -> Block:
    return Block(
        header=(
            (f"◂ observation · {call.name}", "block-view--observation"),
            ("  … running", "block-view--dim"),
        ),
        selectable=False,
    )


def observation_block(
    tool_name: str, status: str, text: str, full: int | None, kept: int | None
) -> Block:
    bad = status != "success"
    header: tuple[tuple[str, str], ...] = (
        (f"◂ observation · {tool_name}", "block-view--error" if bad else "block-view--tool"),
        (f" · {status}", "block-view--error" if bad else "block-view--dim"),
    )
    if full is not None:
        header += ((f"  {tokens(full)} tok seen → {tokens(kept)} kept", "block-view--dim"),)
    return Block(body=text, header=header, style="block-view--observation")


def answer_block(text: str) -> Block:
    return Block(body=text, header=(("✔ final answer", "block-view--assistant"),))


def blocks_from_steps(
    steps: Iterable[ScratchStep], costs: Mapping[str, tuple[int, int]] | None = None
) -> list[Block]:
    """The blocks of a finished round's scratchpad (``Agent.last_scratchpad``); ``costs``
    maps a tool_use id to (tokens seen, tokens kept in history)."""
    costs = costs or {}
    out: list[Block] = []
    for scratch in steps:
        step = scratch.assistant.meta.step
        if scratch.assistant.content.strip():
            out.append(thought_block(step, scratch.assistant.content))
        results = {r.tool_use_id: r for r in scratch.results}
        for call in scratch.assistant.tool_calls:
            out.append(action_block(step, call))
            result = results.get(call.id)
            if result is not None:
                status = "error" if result.is_error else "success"
                full, kept = costs.get(call.id, (None, None))
                out.append(observation_block(result.tool_name, status, result.text, full, kept))
    return out


class ScratchpadView(BlockView):
    """The live scratchpad (or, on request, the last round's)."""

    showing_last: Reactive[bool] = reactive(False)
    """True while the pane shows the last round's scratchpad instead of the live one."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._stream_step: int | None = None
        self._live: list[Block] = []

    # ------------------------------------------------------------------ modes
    def show_last(self, blocks: list[Block]) -> None:
        """Show a finished round's steps; live blocks are set aside until :meth:`show_live`."""
        if not self.showing_last:
            self._live = list(self.blocks)
        self.showing_last = True
        self.set_blocks(blocks)

    def show_live(self) -> None:
        if self.showing_last:
            self.showing_last = False
            self.set_blocks(self._live, scroll_end=True)
            self._live = []

    # ------------------------------------------------------------------ live events
    def start_round(self) -> None:
        """A round began: the pad starts empty."""
        self.show_live()
        self._stream_step = None
        self.clear()

    def end_round(self) -> None:
        """The round closed: the scratchpad is cleared (seed A2)."""
        self.show_live()
        self._stream_step = None
        self.clear()

    def stream(self, step: int, text: str) -> None:
        """The model's text of ``step`` so far."""
        self.show_live()
        block = thought_block(step, text, streaming=True)
        if self._stream_step == step:
            self.replace_last(block)
        else:
            self.append_block(block)
            self._stream_step = step

    def _end_stream(self, final: Block | None) -> None:
        if self._stream_step is not None:
            self._stream_step = None
            if final is None:
                self.pop_last()
            else:
                self.replace_last(final)
        elif final is not None:
            self.append_block(final)

    def step_stored(self, message: Message) -> None:
        """An assistant step reached history: its thought and actions are now known."""
        self.show_live()
        if message.role != "assistant":
            return
        step = message.meta.step
        if message.tool_calls:
            thought = thought_block(step, message.content) if message.content.strip() else None
            self._end_stream(thought)
            for call in message.tool_calls:
                self.append_block(action_block(step, call))
        else:
            self._end_stream(answer_block(message.content))

    def tool_started(self, call: ToolCall) -> None:
        self.show_live()
        self.append_block(running_block(call))

    def tool_finished(self, event: ToolFinished) -> None:
        self.show_live()
        block = observation_block(
            event.call.name,
            event.status,
            event.full_text,
            event.tokens_full,
            event.tokens_compressed,
        )
        last = self.blocks[-1] if self.blocks else None
        if last is not None and not last.selectable and not last.body:
            self.replace_last(block)
        else:
            self.append_block(block)
