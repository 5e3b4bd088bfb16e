"""What ate the context, by source: the parts of a request a user can act on.

A request (the Messages API body) is split into disjoint sources whose tokens add up to its
total:

- ``system``: the system prompt;
- ``tools``: the built-in tools' definitions (with the API's tool-use preamble,
  :data:`~engine.messages.tokens.TOOL_USE_SYSTEM_OVERHEAD`), their names listed;
- ``mcp``: one source per MCP server, from the tools named ``mcp__<server>__<tool>``, its
  tools listed by name;
- ``deferred_tools``: tools sent with ``defer_loading`` (loaded only when searched: 0 tokens,
  listed), and a reminder that lists deferred tools;
- ``memory``: a ``<system-reminder>`` holding a memory file ("Contents of …/CLAUDE.md"), one
  source per file;
- ``skills``: a reminder that lists the skills;
- ``reminders``: any other reminder the harness put in the user's turn;
- ``conversation``: the rest, by what it is: ``user text``, ``assistant text``, ``thinking``,
  and each tool by name (its calls and their results together).

``files`` drills into the tools: the tokens of the calls and results that name each file
(``file_path`` / ``path`` / ``notebook_path``); a part of the tool sources, not added again.

Each piece is counted locally (``cl100k_base``: :mod:`engine.messages.tokens`, with its block
and message overheads). With ``api_total`` (a proxied request's usage: input, cache read and
cache write) the local counts are scaled so that the sources add up to exactly that figure
(largest remainders); without it the total is the local count, and a recording's breakdown is
labelled an estimate.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.figures import call_input
from engine.messages.tokens import (
    BLOCK_OVERHEAD,
    MESSAGE_OVERHEAD,
    TOOL_USE_SYSTEM_OVERHEAD,
    compact_json,
    count_system,
    count_text,
    count_tool,
)
from engine.models import History, Message, Observation, Session
from engine.recordings.own_agent import OwnAgentView
from engine.store import Store

KINDS = (
    "system",
    "tools",
    "mcp",
    "deferred_tools",
    "memory",
    "skills",
    "reminders",
    "conversation",
    "agent_prefix",
)
"""Every kind of source, in the order they are shown."""
PATH_KEYS = ("file_path", "path", "notebook_path")
_REMINDER = re.compile(r"<system-reminder>(.*?)</system-reminder>", re.S)
_MEMORY = re.compile(r"Contents of (\S+?)(?: \(|:)")
_SKILLS = re.compile(r"\bskills?\b.*\bavailable\b|<skills?>|available skills", re.I | re.S)
_DEFERRED = re.compile(r"deferred.tools|available-deferred-tools", re.I)


@dataclass
class Source:
    """One part of the context."""

    kind: str
    name: str
    tokens: int = 0
    items: list[str] = field(default_factory=list)
    """What it holds by name: a server's tools, the built-in tools."""

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name, "tokens": self.tokens}
        if self.items:
            out["items"] = self.items
        return out


@dataclass
class Breakdown:
    """A context by source."""

    sources: list[Source]
    files: dict[str, int]
    total: int
    exact: bool
    """The total is the API's (the sources are scaled to it), not a local count."""
    method: str
    """How it was worked out, in words."""

    @property
    def label(self) -> str:
        """``exact total``, ``estimated`` (a recording) or ``counted locally``."""
        if self.exact:
            return "exact total"
        return "estimated" if self.method.startswith("estimated") else "counted locally"

    def mcp_servers(self) -> list[str]:
        return [s.name.removeprefix("MCP ") for s in self.sources if s.kind == "mcp"]

    def as_json(self) -> dict[str, Any]:
        by_kind: dict[str, int] = defaultdict(int)
        for s in self.sources:
            by_kind[s.kind] += s.tokens
        return {
            "total": self.total,
            "exact": self.exact,
            "method": self.method,
            "by_kind": {k: by_kind[k] for k in KINDS if k in by_kind},
            "sources": [s.as_json() for s in self.sources],
            "files": [{"path": p, "tokens": n} for p, n in self.files.items()],
        }


class _Counter:
    """Local counts accumulated by source (in order of first appearance) and by file."""

    def __init__(self) -> None:
        self.sources: dict[tuple[str, str], Source] = {}
        self.files: dict[str, int] = defaultdict(int)

    def add(self, kind: str, name: str, tokens: int, item: str | None = None) -> Source:
        source = self.sources.setdefault((kind, name), Source(kind, name))
        source.tokens += tokens
        if item is not None and item not in source.items:
            source.items.append(item)
        return source


def _text_block(counter: _Counter, text: str, role: str) -> None:
    """A text block: the user's reminders by what they hold, the rest as text."""
    if role == "user":
        for match in _REMINDER.finditer(text):
            body = match.group(1)
            tokens = count_text(match.group(0))
            if memory := _MEMORY.search(body):
                counter.add("memory", memory.group(1), tokens)
            elif _DEFERRED.search(body):
                counter.add("deferred_tools", "deferred tools (listed)", tokens)
            elif _SKILLS.search(body):
                counter.add("skills", "skills", tokens)
            else:
                counter.add("reminders", "reminders", tokens)
        text = _REMINDER.sub("", text)
    if text.strip():
        counter.add("conversation", f"{role} text", count_text(text))
    counter.add("conversation", f"{role} text", BLOCK_OVERHEAD)


def _file_of(call_input: Any) -> str | None:
    if not isinstance(call_input, dict):
        return None
    for key in PATH_KEYS:
        value = call_input.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _content(counter: _Counter, content: Any, role: str, calls: dict[str, tuple[str, Any]]) -> None:
    if isinstance(content, str):
        _text_block(counter, content, role)
        return
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            _text_block(counter, str(block.get("text", "")), role)
        elif kind in ("thinking", "redacted_thinking"):
            text = str(block.get("thinking") or block.get("data") or "")
            counter.add("conversation", "thinking", BLOCK_OVERHEAD + count_text(text))
        elif kind == "tool_use":
            name = str(block.get("name", ""))
            calls[str(block.get("id", ""))] = (name, block.get("input"))
            tokens = (
                BLOCK_OVERHEAD
                + count_text(name)
                + count_text(compact_json(block.get("input") or {}))
            )
            counter.add("conversation", f"tool {name}", tokens)
            if path := _file_of(block.get("input")):
                counter.files[path] += tokens
        elif kind == "tool_result":
            name, call_input = calls.get(str(block.get("tool_use_id", "")), ("(unknown)", None))
            inner = block.get("content", "")
            texts = (
                [inner]
                if isinstance(inner, str)
                else [str(b.get("text", compact_json(b))) for b in inner if isinstance(b, dict)]
            )
            tokens = BLOCK_OVERHEAD * (1 + (0 if isinstance(inner, str) else len(texts)))
            tokens += sum(count_text(t) for t in texts)
            counter.add("conversation", f"tool {name}", tokens)
            if path := _file_of(call_input):
                counter.files[path] += tokens
        else:  # an image, a document: its JSON, as the request count takes it
            payload = compact_json({k: v for k, v in block.items() if k != "cache_control"})
            counter.add("conversation", f"{role} {kind}", BLOCK_OVERHEAD + count_text(payload))


def request_breakdown(body: dict[str, Any], api_total: int | None = None) -> Breakdown:
    """A Messages API request body by source (see the module docstring)."""
    counter = _Counter()
    system = body.get("system")
    if system:
        counter.add("system", "system prompt", count_system(system))
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    loaded = [t for t in tools if not t.get("defer_loading")]
    if loaded:
        counter.add("tools", "built-in tools", TOOL_USE_SYSTEM_OVERHEAD)
    for tool in tools:
        name = str(tool.get("name", ""))
        if tool.get("defer_loading"):
            counter.add("deferred_tools", "deferred tools (defer_loading)", 0, name)
        elif name.startswith("mcp__") and name.count("__") >= 2:
            _, server, tool_name = name.split("__", 2)
            counter.add("mcp", f"MCP {server}", count_tool(tool), tool_name)
        else:
            counter.add("tools", "built-in tools", count_tool(tool), name)
    calls: dict[str, tuple[str, Any]] = {}
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role = str(message.get("role", "user"))
        counter.add("conversation", "message framing", MESSAGE_OVERHEAD)
        _content(counter, message.get("content", ""), role, calls)
    sources = list(counter.sources.values())
    files = dict(sorted(counter.files.items(), key=lambda kv: -kv[1]))
    local = sum(s.tokens for s in sources)
    if api_total is None:
        return Breakdown(sources, files, local, False, "counted locally (cl100k_base)")
    _scale(sources, files, local, api_total)
    return Breakdown(
        sources,
        files,
        api_total,
        True,
        "the total is the API's (input + cache read + cache write of this request); each "
        "source is its share of it by local count (cl100k_base)",
    )


def _scale(sources: list[Source], files: dict[str, int], local: int, total: int) -> None:
    """Sources scaled to add up to ``total`` exactly (largest remainders); files alike."""
    if local <= 0:
        return
    exact = [s.tokens * total / local for s in sources]
    floors = [int(x) for x in exact]
    left = total - sum(floors)
    order = sorted(range(len(sources)), key=lambda i: -(exact[i] - floors[i]))
    for i in order[:left]:
        floors[i] += 1
    for source, value in zip(sources, floors, strict=True):
        source.tokens = value
    for path in files:
        files[path] = round(files[path] * total / local)


def _share(tokens: int, part: int, whole: int) -> int:
    return round(tokens * part / whole) if whole else 0


def _stored_messages(
    counter: _Counter, messages: Sequence[Message], full_results: dict[str, int]
) -> None:
    """Each stored message by what it holds, from its stored count (no tokenizer): a tool
    result at ``full_results[call id]`` when given; a message's parts shared out by their
    characters."""
    calls: dict[str, tuple[str, Any]] = {}
    for msg in messages:
        tokens = msg.tokens or 0
        if msg.role == "tool":
            use = msg.meta.tool_use_id or ""
            name, call_input = calls.get(use, (msg.meta.tool_name or "(unknown)", None))
            tokens = full_results.get(use, tokens)
            counter.add("conversation", f"tool {name}", tokens)
            if path := _file_of(call_input):
                counter.files[path] += tokens
        elif msg.role == "assistant":
            parts = [("assistant text", len(msg.content), None)] + [
                (f"tool {c.name}", len(c.name) + len(compact_json(c.input)), c.input)
                for c in msg.tool_calls
            ]
            whole = sum(n for _, n, _ in parts)
            for c in msg.tool_calls:
                calls[c.id] = (c.name, c.input)
            for name, n, call_input in parts:
                share = _share(tokens, n, whole)
                if n:
                    counter.add("conversation", name, share)
                if path := _file_of(call_input):
                    counter.files[path] += share
        else:
            rest = msg.content
            for match in _REMINDER.finditer(msg.content):
                body, share = match.group(1), _share(tokens, len(match.group(0)), len(msg.content))
                if memory := _MEMORY.search(body):
                    counter.add("memory", memory.group(1), share)
                elif _DEFERRED.search(body):
                    counter.add("deferred_tools", "deferred tools (listed)", share)
                elif _SKILLS.search(body):
                    counter.add("skills", "skills", share)
                else:
                    counter.add("reminders", "reminders", share)
                rest = rest.replace(match.group(0), "", 1)
            counter.add("conversation", "user text", _share(tokens, len(rest), len(msg.content)))


def recorded_breakdown(
    messages: Sequence[Message],
    summary_tokens: Sequence[int],
    full_results: dict[str, int],
    agent_prefix: tuple[int, int],
    who: str,
    last_input: int | None = None,
    tools: Sequence[str] = (),
) -> Breakdown:
    """A recording's context, estimated from the counts the import stored (no tokenizer: a
    recorded session's ``context`` never loads one): its agent's own prompt and tools
    (``agent_prefix``: the hidden prefix as (prompt and the rest, tools), the second the
    ``tools`` the recording lists, else 0 and the first one source: first prompt −
    transcript), the summaries, and each message by what it holds (a tool result at its full
    size, ``full_results`` by call id; a message's parts shared out by their characters); with
    ``last_input`` (the last recorded call's input side) the conversation is scaled to the rest
    of it."""
    counter = _Counter()
    prompt, tool_tokens = agent_prefix
    if prompt and tool_tokens:
        counter.add(
            "agent_prefix", f"{who}'s system prompt and the rest (first prompt − transcript − "
            "its tools)", prompt,
        )  # fmt: skip
    elif prompt:
        counter.add("agent_prefix", f"{who}'s prompt and tools (first prompt − transcript)",
                    prompt)  # fmt: skip
    tool_source = f"{who}'s tools (as recorded)"
    if tool_tokens:
        listed = counter.add("tools", tool_source, tool_tokens)
        listed.items.extend(tools)
    if summary_tokens:
        counter.add("conversation", "compaction summaries", sum(summary_tokens))
    _stored_messages(counter, messages, full_results)
    sources = list(counter.sources.values())
    files = dict(sorted(counter.files.items(), key=lambda kv: -kv[1]))
    local = sum(x.tokens for x in sources)
    breakdown = Breakdown(
        sources,
        files,
        local,
        False,
        (
            "estimated: its agent's tools as the recording lists them, the rest of what it "
            "sent around the conversation as one source (the first prompt less the transcript "
            "and the tools)"
            if tool_tokens
            else "estimated: the recording does not list its agent's system prompt, tools or "
            "MCP servers (one source, the first prompt less the transcript)"
        )
        + "; the conversation from the counts stored at import (cl100k_base; tool results "
        "in full)",
    )
    fixed = prompt + tool_tokens
    rest_sources = [x for x in sources if x.kind != "agent_prefix" and x.name != tool_source]
    if last_input and last_input > fixed:
        # The prefix is itself worked out from the API's figures: it stays; the conversation
        # takes the rest of the last call's input, by local count.
        _scale(rest_sources, files, local - fixed, last_input - fixed)
        breakdown.total = last_input
        breakdown.method += (
            f"; the conversation scaled to the rest of the last recorded call's input "
            f"({last_input:,}: input + cache read + cache write)"
        )
    return breakdown


def session_breakdown(
    store: Store,
    session: Session,
    own: OwnAgentView | None,
    layers: dict[str, int] | None = None,
    tool_names: Sequence[str] = (),
    history: History | None = None,
    observations: list[Observation] | None = None,
) -> Breakdown:
    """What a session's context is made of, by source: a proxied session's last request as
    sent (scaled to its usage: exact), a recording's estimate (``own``: its agent's view),
    else ctxscope's own next request from its ``layers`` (the builder's counts, its tools
    named) and its history's stored counts (no tokenizer is loaded but for a proxied
    request). ``history``, ``observations``: the session's as the store gives them, when the
    caller has read them already."""
    sid = session.id or 0
    mains = [e for e in store.exchanges(sid) if e.kind == "main"]
    if mains:
        last = mains[-1]
        return request_breakdown(last.request, last.usage.input_side if last.usage else None)
    if history is None:
        history = store.history(sid)
    if own is not None:
        last_usage = store.last_usage(sid)
        if observations is None:
            observations = store.observations(sid)
        return recorded_breakdown(
            history.messages,
            [s.tokens or 0 for s in history.summaries],
            {o.tool_use_id: o.tokens_full for o in observations},
            own.prefix_parts,
            own.who,
            None if last_usage is None else call_input(last_usage.usage, last_usage.local_estimate),
            own.prompt.tools if own.prompt is not None else (),
        )
    counter = _Counter()
    layers = layers or {}
    if layers.get("L1 system"):
        counter.add("system", "system prompt", layers["L1 system"])
    if layers.get("L1 tools"):
        counter.add("tools", "built-in tools", layers["L1 tools"])
        counter.sources[("tools", "built-in tools")].items = list(tool_names or [])
    if layers.get("L2 CODE_LAW"):
        counter.add("memory", "CODE_LAW.md", layers["L2 CODE_LAW"])
    if layers:
        counter.add("conversation", "compaction summaries", layers.get("L3 summaries", 0))
    else:
        counter.add("conversation", "compaction summaries",
                    sum(s.tokens or 0 for s in history.summaries))  # fmt: skip
    _stored_messages(counter, history.messages, {})
    for name in ("current input", "todo recap", "scratchpad"):
        if layers.get(name):
            counter.add("conversation", name, layers[name])
    sources = [x for x in counter.sources.values() if x.tokens or x.items]
    what = "ctxscope's next request" if layers else "ctxscope's history as stored"
    return Breakdown(
        sources,
        dict(sorted(counter.files.items(), key=lambda kv: -kv[1])),
        sum(x.tokens for x in sources),
        False,
        f"{what}, from the counts ctxscope keeps (cl100k_base)",
    )
