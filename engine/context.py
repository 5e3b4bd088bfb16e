"""ContextBuilder: the request of one ReAct step, layer by layer, with a token breakdown.

Order (seed A1, D4): L1 (system prompt + tools) → L2 (``CODE_LAW.md``) → L3 (summaries, then
history) → the current user input → this round's scratchpad → the todo recap.

On the Anthropic wire:

- ``system`` = [L1 system prompt, L2 CODE_LAW, one block per L3 summary];
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

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from engine.config import Settings
from engine.llm.base import ProviderRequest
from engine.models import History, Message
from engine.placement import IN_SYSTEM, leading_messages, system_text
from engine.tokens import (
    BLOCK_OVERHEAD,
    MESSAGE_OVERHEAD,
    count_blocks,
    count_text,
    count_tools,
    ensure_counted,
    has_text,
)
from prompts.system_prompt import SYSTEM_PROMPT

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
MAX_CACHE_BREAKPOINTS = 4
"""The Messages API refuses a request with more ``cache_control`` blocks than this."""

MISSING_RESULT_TEXT = "No result was recorded for this tool call (the round was interrupted)."
CONVERSATION_OPENER = "(Earlier conversation was shortened; it continues below.)"


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
class ScratchResult:
    """One FULL tool observation of the current round, exactly as the model sees it."""

    tool_use_id: str
    tool_name: str
    text: str
    is_error: bool = False
    tokens: int | None = field(default=None, compare=False, repr=False)
    """Cached ``tool_result`` block count (filled by the builder)."""


@dataclass
class ScratchStep:
    """One step of the current round: the assistant message (with tool_calls) and its results."""

    assistant: Message
    results: list[ScratchResult] = field(default_factory=list)


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
            "L3 history": render_messages(t.get("history", [])),
            "current input": t.get("question", ""),
            "todo recap": t.get("recap", ""),
            "scratchpad": render_scratchpad(t.get("scratchpad", [])),
        }


class _Wire:
    """Accumulates wire messages, merging same-role turns and pairing tool_use/tool_result."""

    def __init__(self, layers: dict[str, int], warnings: list[str]) -> None:
        self.messages: list[dict[str, Any]] = []
        self.layers = layers
        self.warnings = warnings
        self._open: dict[str, str] = {}
        """tool_use ids of the last assistant message still without a result -> their layer."""
        self._results_at = 0
        """Number of leading tool_result blocks of the current user message."""

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
            opener = _text(CONVERSATION_OPENER)
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
            self.user_blocks([{"type": "text", "text": text}], layer, count_blocks([_text(text)]))
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
                "content": MISSING_RESULT_TEXT,
                "is_error": True,
            }
            self.tool_result(block, layer, count_blocks([block]))

    def finish(self) -> None:
        """Close the conversation: interrupted calls get their synthetic results."""
        self._close_open()

    def add_history(self, messages: list[Message], summaries: list[str]) -> None:
        """Append L3 history from the cached per-message counts.

        The common well-formed cases are handled inline with the last turn kept in locals
        (this loop runs over every message of the session at every step); anything needing a
        repair goes through the methods above.
        """
        layer = "L3 history"
        out = self.messages
        open_ids = self._open
        total = 0
        last_role = out[-1]["role"] if out else None
        last_content: list[dict[str, Any]] = out[-1]["content"] if out else []
        for msg in messages:
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


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _assistant_blocks(msg: Message) -> tuple[list[dict[str, Any]], list[str]]:
    blocks = [_text(msg.content)] if has_text(msg.content) else []
    for call in msg.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.input})
    return blocks, [call.id for call in msg.tool_calls]


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


class ContextBuilder:
    """Builds the request of each step; counts L1 once and history from cached counts."""

    def __init__(
        self,
        workspace: Path,
        settings: Settings,
        tools: list[dict[str, Any]],
        system_prompt: str = SYSTEM_PROMPT,
        *,
        cache_conversation: bool = False,
    ) -> None:
        self.workspace = workspace
        self.settings = settings
        self.tools = tools
        self.system_prompt = system_prompt
        self.cache_conversation = cache_conversation
        # L1 never changes for a builder: count it once.
        self._l1_system = count_blocks([_text(system_prompt)]) if has_text(system_prompt) else 0
        self._l1_tools = count_tools(tools)
        self._code_law_memo: tuple[str, int] = ("", 0)
        self._summary_memo: dict[str, int] = {}
        self._question_memo: tuple[str, int] = ("", 0)

    def build(
        self,
        history: History,
        scratchpad: list[ScratchStep],
        question: str,
        todo_recap: str = "",
    ) -> BuiltContext:
        """The request for the next model call of this round.

        ``history`` is L3 as it stood before this round: the current round's input comes as
        ``question`` (already preprocessed) and its steps as ``scratchpad`` with full results,
        not as their compressed history copies. ``Message.tokens`` must be unset or come from
        :func:`engine.tokens.count_message`; missing counts are filled in (and cached).
        """
        with _gc_paused():
            return self._build(history, scratchpad, question, todo_recap)

    def _build(
        self, history: History, scratchpad: list[ScratchStep], question: str, todo_recap: str
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

        wire = _Wire(layers, warnings)
        placed = [s for s in history.summaries if has_text(s.content)]
        summaries = [system_text(s) for s in placed if s.placement in IN_SYSTEM]
        leading = [
            turn for s in placed if s.placement not in IN_SYSTEM for turn in leading_messages(s)
        ]
        # Summaries change only at compaction: keep the counts of the current ones.
        old = self._summary_memo
        memo: dict[str, int] = {}
        last_leading: dict[str, Any] | None = None
        for role, text in leading:
            tokens = memo[text] = old.get(text) or count_blocks([_text(text)])
            last_leading = _text(text)
            if role == "user":
                wire.user_blocks([last_leading], "L3 summaries", tokens)
            else:
                wire.assistant([last_leading], [], "L3 summaries", tokens)
        # One pass over history; summary-role messages found in it join the summary blocks.
        wire.add_history(history.messages, summaries)
        for text in summaries:
            memo[text] = old.get(text) or count_blocks([_text(text)])
            system.append(_text(text))
            layers["L3 summaries"] += memo[text]
        self._summary_memo = memo
        # Breakpoint 3 goes on the last summary, wherever its placement put it.
        if last_leading is not None:
            last_leading["cache_control"] = EPHEMERAL
        elif summaries:
            system[-1]["cache_control"] = EPHEMERAL

        if has_text(question):
            wire.user_blocks([_text(question)], "current input", self._count_question(question))
        for step in scratchpad:
            self._add_step(wire, step)
        wire.finish()
        messages = wire.messages
        if self.cache_conversation and messages and messages[-1]["content"]:
            messages[-1]["content"][-1]["cache_control"] = EPHEMERAL
        if has_text(todo_recap):
            reminder = todo_reminder(todo_recap)
            wire.user_blocks([_text(reminder)], "todo recap", count_blocks([_text(reminder)]))

        # Built here from well-formed parts: skip pydantic's walk over every message.
        request = ProviderRequest.model_construct(
            system=system, messages=messages, tools=self.tools, max_tokens=self.settings.max_tokens
        )
        texts: dict[str, Any] = {
            "system": self.system_prompt,
            "tools": self.tools,
            "code_law": code_law,
            "summaries": summaries,
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

    def _read_code_law(self, warnings: list[str]) -> tuple[Path | None, str]:
        # Re-read at every build (seed C5): the user may edit the rules mid-session.
        path = find_code_law(self.workspace)
        if path is None:
            return None, ""
        try:
            content = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            warnings.append(f"{path.name} could not be read ({exc}); L2 left empty")
            return None, ""
        if not has_text(content):
            return path, ""
        return path, code_law_block_text(path.name, content)

    def _count_code_law(self, text: str) -> int:
        if self._code_law_memo[0] != text:
            self._code_law_memo = (text, count_blocks([_text(text)]))
        return self._code_law_memo[1]

    def _count_question(self, text: str) -> int:
        # The question is the same for every step of a round.
        if self._question_memo[0] != text:
            self._question_memo = (text, count_blocks([_text(text)]))
        return self._question_memo[1]

    @staticmethod
    def _add_step(wire: _Wire, step: ScratchStep) -> None:
        layer = "scratchpad"
        blocks, ids = _assistant_blocks(step.assistant)
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


def validate_conversation(
    messages: list[dict[str, Any]], *, require_user_last: bool = False
) -> list[str]:
    """Problems that would make the Messages API refuse ``messages`` (empty when valid).

    Checks: non-empty; starts with user; roles alternate; no empty content or blank text block;
    ``tool_use`` only from the assistant, ``tool_result`` only from the user and before any
    other block; every ``tool_use`` answered in the very next user message and every
    ``tool_result`` answering the message before; unique ids. A trailing assistant message is
    valid (the API continues it, a "prefill"); ``require_user_last`` flags it, for a request
    that must ask the model for a new turn.
    """
    if not messages:
        return ["the conversation is empty; the API needs at least one message"]
    problems: list[str] = []
    seen_uses: set[str] = set()
    prev_uses: list[str] = []
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"message {i}: role {role!r} is not user or assistant")
        if i == 0 and role != "user":
            problems.append("message 0: the conversation must start with a user message")
        if i > 0 and role == messages[i - 1].get("role"):
            problems.append(f"messages {i - 1} and {i}: two {role} messages in a row")
        content = msg.get("content")
        blocks = [_text(content)] if isinstance(content, str) else list(content or [])
        if not blocks:
            problems.append(f"message {i}: empty content")
        uses: list[str] = []
        results: list[str] = []
        other_seen = False
        for j, block in enumerate(blocks):
            kind = block.get("type")
            if kind == "tool_result":
                if role != "user":
                    problems.append(f"message {i} block {j}: tool_result outside a user message")
                if other_seen:
                    problems.append(f"message {i} block {j}: tool_result after other content")
                results.append(str(block.get("tool_use_id")))
                continue
            other_seen = True
            if kind == "text" and not has_text(str(block.get("text", ""))):
                problems.append(f"message {i} block {j}: empty text block")
            elif kind == "tool_use":
                use_id = str(block.get("id"))
                if role != "assistant":
                    problems.append(f"message {i} block {j}: tool_use outside an assistant message")
                if use_id in seen_uses:
                    problems.append(f"message {i} block {j}: duplicate tool_use id {use_id}")
                seen_uses.add(use_id)
                uses.append(use_id)
        if role == "user":
            for rid in results:
                if rid not in prev_uses:
                    problems.append(f"message {i}: tool_result {rid} answers no tool_use before it")
            if len(set(results)) != len(results):
                problems.append(f"message {i}: a tool_use is answered twice")
            for uid in prev_uses:
                if uid not in results:
                    problems.append(f"message {i - 1}: tool_use {uid} has no tool_result after it")
        prev_uses = uses if role == "assistant" else []
    for uid in prev_uses:
        problems.append(f"message {len(messages) - 1}: tool_use {uid} has no tool_result after it")
    if require_user_last and messages[-1].get("role") != "user":
        problems.append("the conversation ends with an assistant message (a prefill)")
    return problems


def count_cache_breakpoints(request: ProviderRequest) -> int:
    """How many blocks of ``request`` carry ``cache_control`` (the API allows 4)."""
    blocks: list[dict[str, Any]] = [*request.system, *request.tools]
    for msg in request.messages:
        if isinstance(msg["content"], list):
            blocks.extend(msg["content"])
    return sum(1 for block in blocks if "cache_control" in block)


def validate_request(request: ProviderRequest) -> list[str]:
    """:func:`validate_conversation` plus the system blocks and the breakpoint limit."""
    problems = validate_conversation(request.messages)
    for i, block in enumerate(request.system):
        if block.get("type") == "text" and not has_text(str(block.get("text", ""))):
            problems.append(f"system block {i}: empty text block")
    n = count_cache_breakpoints(request)
    if n > MAX_CACHE_BREAKPOINTS:
        problems.append(f"{n} cache_control breakpoints; the API allows {MAX_CACHE_BREAKPOINTS}")
    return problems


def _react_assistant(msg: Message) -> str:
    if not msg.tool_calls:
        return f"[assistant] {msg.content.strip()}".rstrip()
    thought = msg.content.strip()
    lines: list[str] = []
    if thought:
        # The model often writes "Thought:" itself (the ReAct habit); do not double it.
        has_label = thought[:8].lower() == "thought:"
        lines.append(thought if has_label else f"Thought: {thought}")
    for call in msg.tool_calls:
        lines.append(f"Action: {call.name}[{json.dumps(call.input, ensure_ascii=False)}]")
    return "[assistant] " + "\n".join(lines)


def render_messages(messages: list[Message]) -> str:
    """History messages in the seed E1 text form (see :func:`render_react`)."""
    parts: list[str] = []
    for msg in messages:
        if msg.role == "assistant":
            parts.append(_react_assistant(msg))
        else:
            parts.append(f"[{msg.role}] {msg.content}")
    return "\n\n".join(parts)


def render_react(history: History) -> str:
    """L3 as seed E1 text, for display: ``[summary]`` blocks first, then the messages.

    ``[user] …``; an assistant step as ``[assistant] Thought: …`` with one
    ``Action: Tool[{json}]`` line per call; ``[tool] {compressed json}``. A final answer is
    ``[assistant] …`` as written: on this wire a round ends with an answer *without* a tool
    call, so E1's ``Action: Finish[...]`` would wrap the whole answer in brackets for nothing.
    """
    parts = [f"[summary] {s.content}" for s in history.summaries if has_text(s.content)]
    body = render_messages(history.messages)
    if body:
        parts.append(body)
    return "\n\n".join(parts)


def render_scratchpad(steps: list[ScratchStep]) -> str:
    """The current round's steps with their full observations, for display."""
    parts: list[str] = []
    for step in steps:
        parts.append(_react_assistant(step.assistant))
        for result in step.results:
            label = "observation, error" if result.is_error else "observation"
            parts.append(f"[{label}: {result.tool_name}] {result.text}")
    return "\n\n".join(parts)
