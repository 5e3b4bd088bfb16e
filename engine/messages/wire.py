"""The Anthropic wire form of a conversation, and the repairs that keep it acceptable.

:class:`Wire` accumulates wire messages from history and the scratchpad, merging same-role turns
(``tool_result`` blocks first), giving every ``tool_use`` without a result a synthetic error
result, sending a result without its ``tool_use`` as plain text, and opening a conversation that
would start with the assistant with a short user turn. Token counts are attributed to layers as
blocks are placed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.messages.tokens import MESSAGE_OVERHEAD, count_blocks, ensure_counted, has_text
from engine.models import MISSING_RESULT, Message

CONVERSATION_OPENER = "(Earlier conversation was shortened; it continues below.)"
"""The user turn put before a conversation that would otherwise open with the assistant
(a summary placed as the first assistant turn, say)."""

HISTORY = "L3 history"
"""The layer history messages are counted in."""


@dataclass(slots=True)
class Mark:
    """Where a history message began a new wire message: the wire just before it.

    Every wire message before that point is complete (a wire only ever changes its last
    message), so a later build whose history is the same up to this message can take those
    messages as they are and place history again from here (:meth:`Wire.resume_at`)."""

    index: int
    """The history message's position in the history placed."""
    messages: int
    """Wire messages before it."""
    open: dict[str, str]
    results_at: int
    tokens: int
    """History tokens placed before it."""
    found: int
    """Summary-role texts found in history before it."""
    warnings: int
    """Warnings of this wire before it."""


@dataclass
class WireState:
    """A :class:`Wire` frozen after some messages, to resume from without redoing them.

    A state is resumed once: the wire resumed from it takes its lists over (copying a long
    conversation at every step would cost more than placing the step's new messages)."""

    messages: list[dict[str, Any]]
    open: dict[str, str]
    results_at: int
    layers: dict[str, int]
    warnings: list[str]
    """The warnings this wire added (not those of the list it was given)."""
    marks: list[Mark] = field(default_factory=list)
    """Where history messages began new wire messages, in order."""


def _detach_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with its last message (the one later blocks may merge into) replaced by a
    copy, in place."""
    if messages:
        last = messages[-1]
        messages[-1] = {"role": last["role"], "content": list(last["content"])}
    return messages


class Wire:
    """Accumulates wire messages, merging same-role turns and pairing tool_use/tool_result."""

    def __init__(self, layers: dict[str, int], warnings: list[str]) -> None:
        self.messages: list[dict[str, Any]] = []
        self.layers = layers
        self.warnings = warnings
        self._open: dict[str, str] = {}
        """tool_use ids of the last assistant message still without a result -> their layer."""
        self._results_at = 0
        """Number of leading tool_result blocks of the current user message."""
        self._warnings_from = len(warnings)
        """Where this wire's own warnings begin in ``warnings``."""
        self.marks: list[Mark] = []
        """Where history messages began new wire messages (see :class:`Mark`)."""

    def snapshot(self, layers: tuple[str, ...]) -> WireState:
        """The state now, with the tokens placed so far in ``layers`` (the layers this wire
        filled up to now); later appends to this wire's messages do not change it. The marks
        are handed over: no history is placed after a snapshot."""
        return WireState(
            messages=_detach_last(list(self.messages)),
            open=dict(self._open),
            results_at=self._results_at,
            layers={name: self.layers[name] for name in layers},
            warnings=self.warnings[self._warnings_from :],
            marks=self.marks,
        )

    @classmethod
    def resume(cls, state: WireState, layers: dict[str, int], warnings: list[str]) -> Wire:
        """A wire that continues from ``state`` (its layers and warnings copied in), taking
        its lists over: ``state`` is used up."""
        wire = cls(layers, warnings)
        wire.messages = state.messages  # its last message is its own copy (snapshot)
        wire._open = dict(state.open)
        wire._results_at = state.results_at
        wire.marks = state.marks
        layers.update(state.layers)
        warnings.extend(state.warnings)
        return wire

    @classmethod
    def resume_at(
        cls, state: WireState, at: int, layers: dict[str, int], warnings: list[str]
    ) -> Wire:
        """A wire that continues from ``state.marks[at]``: as it was just before that history
        message was placed (the messages after it are placed again by the caller). It takes
        ``state``'s lists over, cut there: ``state`` is used up."""
        mark = state.marks[at]
        wire = cls(layers, warnings)
        del state.messages[mark.messages :]
        # The message that was last then may take more blocks now, and the last request holds
        # it: a copy.
        wire.messages = _detach_last(state.messages)
        wire._open = dict(mark.open)
        wire._results_at = mark.results_at
        del state.marks[at + 1 :]
        wire.marks = state.marks
        layers.update(state.layers)
        layers[HISTORY] = mark.tokens
        warnings.extend(state.warnings[: mark.warnings])
        return wire

    def _last_role(self) -> str | None:
        return self.messages[-1]["role"] if self.messages else None

    def _start(self, role: str, layer: str) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        self.messages.append({"role": role, "content": content})
        self.layers[layer] += MESSAGE_OVERHEAD
        if role == "user":
            self._results_at = 0
        return content

    def _user_content(self, layer: str) -> list[dict[str, Any]]:
        if self._last_role() == "user":
            content: list[dict[str, Any]] = self.messages[-1]["content"]
            return content
        return self._start("user", layer)

    def user_blocks(self, blocks: list[dict[str, Any]], layer: str, tokens: int) -> None:
        """Append text (or other non-result) blocks to the current user turn."""
        self._user_content(layer).extend(blocks)
        self.layers[layer] += tokens

    def assistant(
        self, blocks: list[dict[str, Any]], ids: list[str], layer: str, tokens: int
    ) -> None:
        """Append an assistant step; its ``ids`` must be answered in the next user turn."""
        role = self._last_role()
        if role is None:
            opener = text_block(CONVERSATION_OPENER)
            self.user_blocks([opener], layer, count_blocks([opener]))
            role = "user"
        if role == "user":
            self._close_open()
            content = self._start("assistant", layer)
        else:
            content = self.messages[-1]["content"]
        content.extend(blocks)
        self.layers[layer] += tokens
        for tool_use_id in ids:
            self._open[tool_use_id] = layer

    def tool_result(self, block: dict[str, Any], layer: str, tokens: int) -> None:
        """Place a result in the user turn after its tool_use, or keep it as text if orphaned."""
        tool_use_id = block.get("tool_use_id")
        if tool_use_id is None and self._open:
            # A result stored without its id answers the oldest call still open.
            tool_use_id = block["tool_use_id"] = next(iter(self._open))
        if tool_use_id is None or tool_use_id not in self._open:
            content = block.get("content", "")
            text = f"[result of tool call {tool_use_id}, whose call is not in context]\n{content}"
            self.warnings.append(f"tool result {tool_use_id} has no matching call; sent as text")
            self.user_blocks(
                [{"type": "text", "text": text}], layer, count_blocks([text_block(text)])
            )
            return
        del self._open[tool_use_id]
        content = self._user_content(layer)
        content.insert(self._results_at, block)
        self._results_at += 1
        self.layers[layer] += tokens

    def _close_open(self) -> None:
        """Give every still-open tool_use a synthetic error result (an interrupted step)."""
        if not self._open:
            return
        for tool_use_id, layer in list(self._open.items()):
            self.warnings.append(f"tool call {tool_use_id} has no result; sent as interrupted")
            block = {
                "type": "tool_result",
                "tool_use_id": tool_use_id,
                "content": MISSING_RESULT,
                "is_error": True,
            }
            self.tool_result(block, layer, count_blocks([block]))

    def finish(self) -> None:
        """Close the conversation: interrupted calls get their synthetic results."""
        self._close_open()

    def _mark(self, index: int, tokens: int, found: int) -> None:
        self.marks.append(
            Mark(
                index,
                len(self.messages),
                dict(self._open),
                self._results_at,
                self.layers[HISTORY] + tokens,
                found,
                len(self.warnings) - self._warnings_from,
            )
        )

    def add_history(self, messages: list[Message], summaries: list[str], start: int = 0) -> None:
        """Append L3 history from the cached per-message counts; ``messages`` begin at
        position ``start`` of the history placed (for the :class:`Mark` records).

        The common well-formed cases are handled inline with the last turn kept in locals
        (this loop runs over every message of the session at every step); anything needing a
        repair goes through the methods above.
        """
        layer = HISTORY
        out = self.messages
        open_ids = self._open
        total = 0
        last_role = out[-1]["role"] if out else None
        last_content: list[dict[str, Any]] = out[-1]["content"] if out else []
        for index, msg in enumerate(messages, start):
            tokens = msg.tokens
            if tokens is None:
                tokens = ensure_counted(msg)
            # The cached count includes one message overhead; the wire adds it per real turn.
            tokens -= MESSAGE_OVERHEAD
            role = msg.role
            content = msg.content
            if role == "tool":
                meta = msg.meta
                use_id = meta.tool_use_id
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": use_id,
                    "content": content,
                }
                if meta.is_error:
                    block["is_error"] = True
                if use_id in open_ids:
                    if last_role != "user":
                        self._mark(index, total, len(summaries))
                    del open_ids[use_id]
                    if last_role == "user":
                        last_content.insert(self._results_at, block)
                        self._results_at += 1
                    else:
                        last_role, last_content = "user", [block]
                        out.append({"role": "user", "content": last_content})
                        self._results_at = 1
                        total += MESSAGE_OVERHEAD
                    total += tokens
                    continue
                self.tool_result(block, layer, tokens)
            elif role == "assistant":
                calls = msg.tool_calls
                blocks: list[dict[str, Any]]
                if content and not content.isspace():
                    blocks = [{"type": "text", "text": content}]
                elif calls:
                    blocks = []
                else:
                    continue
                if last_role == "user" and not open_ids:
                    self._mark(index, total, len(summaries))
                for call in calls:
                    blocks.append(
                        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}
                    )
                    open_ids[call.id] = layer
                if last_role == "assistant":
                    last_content.extend(blocks)
                    total += tokens
                    continue
                if last_role == "user" and len(open_ids) == len(calls):
                    last_role, last_content = "assistant", blocks
                    out.append({"role": "assistant", "content": blocks})
                    total += MESSAGE_OVERHEAD + tokens
                    continue
                # A repair: an opener first, or calls of the step before left without results.
                for call in calls:
                    open_ids.pop(call.id, None)
                self.assistant(blocks, [c.id for c in calls], layer, tokens)
            elif role == "user":
                if not content or content.isspace():
                    continue
                if last_role == "user":
                    last_content.append({"type": "text", "text": content})
                else:
                    self._mark(index, total, len(summaries))
                    last_role, last_content = "user", [{"type": "text", "text": content}]
                    out.append({"role": "user", "content": last_content})
                    self._results_at = 0
                    total += MESSAGE_OVERHEAD
                total += tokens
                continue
            elif has_text(content):
                summaries.append(content)
                continue
            # A repair method changed the last turn: pick it up again.
            last_role, last_content = out[-1]["role"], out[-1]["content"]
        self.layers[layer] += total


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def assistant_blocks(msg: Message) -> tuple[list[dict[str, Any]], list[str]]:
    blocks = [text_block(msg.content)] if has_text(msg.content) else []
    for call in msg.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.input})
    return blocks, [call.id for call in msg.tool_calls]
