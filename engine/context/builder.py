"""ContextBuilder: the request of one ReAct step, layer by layer, with a token breakdown.

Order (seed A1, D4): L1 (system prompt + tools) → L2 (``CODE_LAW.md``) → L3 (summaries, then
history) → the current user input → this round's scratchpad → the todo recap.

On the Anthropic wire:

- ``system`` = [L1 system prompt, L2 CODE_LAW, one block per L3 summary, then one block per
  text a tool injected into this run as a system message (seed 003's ``agent_load_context``,
  counted with the summaries)];
- ``messages`` = history (user text; assistant text + ``tool_use``; consecutive tool messages
  as one user message of ``tool_result`` blocks), the question, the scratchpad steps with their
  FULL results, and the todo recap as a ``<system-reminder>`` text block appended to the last
  user message (built per request, never stored).

Prompt-cache breakpoints (the API allows 4), each at the end of a prefix that stays stable:

1. the L1 system block: the API caches ``tools`` + ``system`` up to here; changes never;
2. the L2 block: changes only when the user edits CODE_LAW.md;
3. the last L3 summary: changes only at compaction. When a round closes, its full scratchpad
   is replaced by compressed steps, so the conversation prefix of the next round diverges
   inside the previous round; this breakpoint guarantees the summaries are still read from
   cache then;
4. optionally (``cache_conversation=True``, off by default) the last block of the
   conversation before the todo recap: within a round each step only appends, so the next
   step would read everything up to there from cache. It is off because that block changes
   every step, and each step would pay a cache write for it; the default keeps breakpoints
   on the stable prefix only (tools + L1, L2, summaries).

The builder also repairs what would make the API refuse the request: consecutive same-role
messages are merged (``tool_result`` blocks first), blank text is never sent, a ``tool_use``
without a result gets a synthetic error result, a result without its ``tool_use`` becomes
plain text, and a conversation that would start with the assistant gets a short user opener.
"""

from __future__ import annotations

import bisect
import gc
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from engine.compaction.placement import IN_SYSTEM, leading_messages, system_text
from engine.messages.render import render_messages, render_react, render_scratchpad
from engine.messages.request import MAX_CACHE_BREAKPOINTS, ProviderRequest
from engine.messages.scratchpad import ScratchResult, ScratchStep
from engine.messages.sequences import common_prefix
from engine.messages.tokens import (
    BLOCK_OVERHEAD,
    MESSAGE_OVERHEAD,
    count_blocks,
    count_repeated,
    count_text,
    count_tools,
    ensure_counted,
    has_text,
    tool_text,
)
from engine.messages.wire import Mark, Wire, WireState, assistant_blocks, text_block
from engine.messages.wire_check import (
    count_cache_breakpoints,
    validate_conversation,
    validate_request,
)
from engine.models import History, Message
from engine.settings.config import Settings
from prompts.system_prompt import SYSTEM_PROMPT

__all__ = [
    # re-exported: the request's parts are built here, checked and rendered next door
    "MAX_CACHE_BREAKPOINTS",
    "ScratchResult",
    "ScratchStep",
    "count_cache_breakpoints",
    "render_messages",
    "render_react",
    "render_scratchpad",
    "validate_conversation",
    "validate_request",
]

LAYERS = (
    "L1 system",
    "L1 tools",
    "L2 CODE_LAW",
    "L3 summaries",
    "L3 history",
    "current input",
    "todo recap",
    "scratchpad",
)
"""The layers of a request, in the order the breakdown reports them."""

CODE_LAW_NAME = "CODE_LAW.md"
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}


def find_code_law(workspace: Path) -> Path | None:
    """``CODE_LAW.md`` in the workspace root, name matched case-insensitively (seed C5).

    If several spellings exist (a case-sensitive file system), ``CODE_LAW.md`` wins, then
    ``code_law.md``, then the first other spelling in sorted order.
    """
    try:
        found = sorted(
            p for p in workspace.iterdir() if p.name.lower() == "code_law.md" and p.is_file()
        )
    except OSError:
        return None
    if not found:
        return None
    for preferred in (CODE_LAW_NAME, CODE_LAW_NAME.lower()):
        for path in found:
            if path.name == preferred:
                return path
    return found[0]


def code_law_block_text(name: str, content: str) -> str:
    """The L2 system block: a header naming the file, then its content as written."""
    return f"Project rules from {name} (they override your defaults):\n\n{content.strip()}"


def todo_reminder(recap: str) -> str:
    """The todo recap as the ``<system-reminder>`` text appended to the last user message."""
    return f"<system-reminder>\n{recap.strip()}\n</system-reminder>"


@dataclass
class BuiltContext:
    """A request ready to send, with its per-layer token breakdown."""

    request: ProviderRequest
    layers: dict[str, int]
    """Tokens per layer, every :data:`LAYERS` key in order; their sum is :attr:`total`."""
    total: int
    """Local estimate of the whole request; equals ``count_request`` of :attr:`request`."""
    code_law: Path | None = None
    """The L2 file used, if any."""
    warnings: list[str] = field(default_factory=list)
    """Repairs and read failures a user may want to know about."""
    _texts: dict[str, Any] = field(default_factory=dict, repr=False)

    @cached_property
    def layer_text(self) -> dict[str, str]:
        """Each layer as readable text, for an inspector (rendered on first access)."""
        t = self._texts
        tools: list[dict[str, Any]] = t.get("tools", [])
        return {
            "L1 system": t.get("system", ""),
            "L1 tools": "\n\n".join(json.dumps(x, indent=2, ensure_ascii=False) for x in tools),
            "L2 CODE_LAW": t.get("code_law", ""),
            "L3 summaries": "\n\n".join(t.get("summaries", [])),
            "L3 history": render_messages(t.get("history", []), show_pins=True),
            "current input": t.get("question", ""),
            "todo recap": t.get("recap", ""),
            "scratchpad": render_scratchpad(t.get("scratchpad", [])),
        }


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a request is assembled.

    A build allocates tens of thousands of small dicts and lists (none in a cycle) for a long
    session; with a large heap this triggers collections that tripled the build time in
    ``bench/bench_engine.py`` (40 ms -> 110 ms every other build). The deferred collection runs
    after the build, while the request is on the network. Reference counting still frees memory.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class _Prefix:
    """What :meth:`ContextBuilder._history_wire` placed last time."""

    leading: list[tuple[str, str]]
    messages: list[Message]
    state: WireState
    found: list[str]


def _mark_index(mark: Mark) -> int:
    return mark.index


class ContextBuilder:
    """Builds the request of each step; counts L1 once and history from cached counts."""

    def __init__(
        self,
        workspace: Path | None,
        settings: Settings,
        tools: list[dict[str, Any]],
        system_prompt: str = SYSTEM_PROMPT,
        *,
        cache_conversation: bool = False,
    ) -> None:
        self.workspace = workspace
        """Where ``CODE_LAW.md`` is read from; None: nowhere (a session without a workspace)."""
        self.settings = settings
        self.tools = tools
        self.system_prompt = system_prompt
        self.cache_conversation = cache_conversation
        # L1 never changes for a builder: count it once.
        self._l1_system = (
            BLOCK_OVERHEAD + count_repeated(system_prompt) if has_text(system_prompt) else 0
        )
        self._l1_tools = count_tools(tools)
        self._code_law_memo: tuple[str, int] = ("", 0)
        self._summary_memo: dict[str, int] = {}
        self._question_memo: tuple[str, int] = ("", 0)
        self._injected_memo: dict[str, int] = {}
        self._prefix: _Prefix | None = None
        """The wire of the last build's summaries and history, to resume from."""

    def build(
        self,
        history: History,
        scratchpad: list[ScratchStep],
        question: str,
        todo_recap: str = "",
        *,
        injected_system: Sequence[str] = (),
    ) -> BuiltContext:
        """The request for the next model call of this round.

        ``history`` is L3 as it stood before this round: the current round's input comes as
        ``question`` (already preprocessed) and its steps as ``scratchpad`` with full results,
        not as their compressed history copies. ``Message.tokens`` must be unset or come from
        :func:`engine.messages.tokens.count_message`; missing counts are filled in (and cached).
        Messages are treated as values: a changed message is a new object (the store and the
        strategies' projections make new ones), so an unchanged prefix is not placed again.

        ``injected_system``: texts a tool injected into this run as system messages (seed 003);
        they follow the summaries, after the last cache breakpoint, and count as L3 summaries.
        """
        with _gc_paused():
            return self._build(history, scratchpad, question, todo_recap, injected_system)

    def _build(
        self,
        history: History,
        scratchpad: list[ScratchStep],
        question: str,
        todo_recap: str,
        injected_system: Sequence[str] = (),
    ) -> BuiltContext:
        layers = dict.fromkeys(LAYERS, 0)
        layers["L1 system"] = self._l1_system
        layers["L1 tools"] = self._l1_tools
        warnings: list[str] = []
        system: list[dict[str, Any]] = []
        if self._l1_system:
            system.append({"type": "text", "text": self.system_prompt, "cache_control": EPHEMERAL})

        code_law_path, code_law = self._read_code_law(warnings)
        if code_law:
            system.append({"type": "text", "text": code_law, "cache_control": EPHEMERAL})
            layers["L2 CODE_LAW"] = self._count_code_law(code_law)

        placed = [s for s in history.summaries if has_text(s.content)]
        summaries = [system_text(s) for s in placed if s.placement in IN_SYSTEM]
        leading = [
            turn for s in placed if s.placement not in IN_SYSTEM for turn in leading_messages(s)
        ]
        # Summaries change only at compaction: keep the counts of the current ones.
        old = self._summary_memo
        memo: dict[str, int] = {text: old.get(text) or BLOCK_OVERHEAD + count_repeated(text)
                                for _, text in leading}  # fmt: skip
        wire, found = self._history_wire(history.messages, leading, memo, layers, warnings)
        summaries += found
        for text in summaries:
            memo[text] = old.get(text) or BLOCK_OVERHEAD + count_repeated(text)
            system.append(text_block(text))
            layers["L3 summaries"] += memo[text]
        self._summary_memo = memo
        # Breakpoint 3 goes on the last summary, wherever its placement put it (the leading
        # summaries were marked when they were placed).
        if not leading and summaries:
            system[-1]["cache_control"] = EPHEMERAL
        injected = [text for text in injected_system if has_text(text)]
        for text in injected:
            # After the breakpoints: an injection lasts one run, the prefix before it stays.
            system.append(text_block(text))
            layers["L3 summaries"] += self._count_injected(text)

        if has_text(question):
            wire.user_blocks(
                [text_block(question)], "current input", self._count_question(question)
            )
        for step in scratchpad:
            self._add_step(wire, step)
        wire.finish()
        messages = wire.messages
        if self.cache_conversation and messages and messages[-1]["content"]:
            # A copy: the block may also sit in the resumable history prefix.
            last = messages[-1]["content"]
            last[-1] = {**last[-1], "cache_control": EPHEMERAL}
        if has_text(todo_recap):
            reminder = todo_reminder(todo_recap)
            wire.user_blocks(
                [text_block(reminder)], "todo recap", count_blocks([text_block(reminder)])
            )

        # Built here from well-formed parts: skip pydantic's walk over every message.
        request = ProviderRequest.model_construct(
            system=system, messages=messages, tools=self.tools, max_tokens=self.settings.max_tokens
        )
        texts: dict[str, Any] = {
            "system": self.system_prompt,
            "tools": self.tools,
            "code_law": code_law,
            "summaries": [*(text for _, text in leading), *summaries, *injected],
            "history": history.messages,
            "question": question,
            "recap": todo_reminder(todo_recap) if has_text(todo_recap) else "",
            "scratchpad": scratchpad,
        }
        return BuiltContext(
            request=request,
            layers=layers,
            total=sum(layers.values()),
            code_law=code_law_path,
            warnings=warnings,
            _texts=texts,
        )

    def _history_wire(
        self,
        messages: list[Message],
        leading: list[tuple[str, str]],
        counts: dict[str, int],
        layers: dict[str, int],
        warnings: list[str],
    ) -> tuple[Wire, list[str]]:
        """The wire after the leading summaries and history, and the summary-role texts found
        in history.

        When the last build began with the same summaries, its wire is resumed: from its end
        when history only grew (the next step, the next round: only the new messages are
        placed), else from the last wire message that began at or before the first message
        that differs from last time's (a projection that changed a message in the middle:
        masking's moving window). Either way the result is the one a build from scratch
        gives; a step costs the messages placed again plus one comparison of the old ones
        (the same objects, mostly: :func:`~engine.messages.sequences.common_prefix`)."""
        prev, self._prefix = self._prefix, None  # a resumed state is used up
        wire: Wire | None = None
        start = 0
        if prev is not None and prev.leading == leading:
            same = common_prefix(prev.messages, messages)
            if same == len(prev.messages):
                wire = Wire.resume(prev.state, layers, warnings)
                found, start = list(prev.found), same
            else:
                at = bisect.bisect_right(prev.state.marks, same, key=_mark_index) - 1
                if at >= 0:
                    mark = prev.state.marks[at]
                    wire = Wire.resume_at(prev.state, at, layers, warnings)
                    found, start = prev.found[: mark.found], mark.index
        if wire is None:
            wire, found = Wire(layers, warnings), []
            for i, (role, text) in enumerate(leading):
                block = text_block(text)
                if i == len(leading) - 1:
                    block["cache_control"] = EPHEMERAL  # breakpoint 3: the last summary
                if role == "user":
                    wire.user_blocks([block], "L3 summaries", counts[text])
                else:
                    wire.assistant([block], [], "L3 summaries", counts[text])
        # One pass over the new messages; summary-role messages join the summary blocks.
        wire.add_history(messages[start:], found, start)
        state = wire.snapshot(("L3 summaries", "L3 history"))
        self._prefix = _Prefix(leading, list(messages), state, list(found))
        return wire, found

    def _read_code_law(self, warnings: list[str]) -> tuple[Path | None, str]:
        # Re-read at every build (seed C5): the user may edit the rules mid-session.
        if self.workspace is None:
            return None, ""
        path = find_code_law(self.workspace)
        if path is None:
            return None, ""
        # The tools' confined reading, imported when there is a file to read: a recording
        # has no workspace, most workspaces no CODE_LAW.md (issue 44).
        from engine.context.code_law import NotReadable, read_workspace_text

        try:
            content = read_workspace_text(path, self.workspace)  # the tools' confinement
        except NotReadable as exc:
            warnings.append(f"{path.name} was not read ({exc}); L2 left empty")
            return None, ""
        if not has_text(content):
            return path, ""
        return path, code_law_block_text(path.name, content)

    def repeated_texts(self) -> list[str]:
        """The texts the last build repeats from earlier requests and counted with
        :func:`~engine.messages.tokens.count_repeated`: L1, the tool definitions, CODE_LAW,
        summaries."""
        return [
            self.system_prompt,
            *(tool_text(t) for t in self.tools),
            self._code_law_memo[0],
            *self._summary_memo,
        ]

    def _count_code_law(self, text: str) -> int:
        if self._code_law_memo[0] != text:
            self._code_law_memo = (text, BLOCK_OVERHEAD + count_repeated(text))
        return self._code_law_memo[1]

    def _count_injected(self, text: str) -> int:
        # The same injected text is sent at every step of the run that injected it.
        memo = self._injected_memo
        if text not in memo:
            if len(memo) >= 8:  # of earlier runs: a run injects a few texts at most
                memo.clear()
            memo[text] = BLOCK_OVERHEAD + count_text(text)
        return memo[text]

    def _count_question(self, text: str) -> int:
        # The question is the same for every step of a round.
        if self._question_memo[0] != text:
            self._question_memo = (text, count_blocks([text_block(text)]))
        return self._question_memo[1]

    @staticmethod
    def _add_step(wire: Wire, step: ScratchStep) -> None:
        layer = "scratchpad"
        blocks, ids = assistant_blocks(step.assistant)
        if blocks:
            wire.assistant(blocks, ids, layer, ensure_counted(step.assistant) - MESSAGE_OVERHEAD)
        for result in step.results:
            if result.tokens is None:
                result.tokens = BLOCK_OVERHEAD + count_text(result.text)
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": result.tool_use_id,
                "content": result.text,
            }
            if result.is_error:
                block["is_error"] = True
            wire.tool_result(block, layer, result.tokens)
