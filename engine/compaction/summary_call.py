"""A summary that always fits: the summary call through any provider, split into parts when a
segment is larger than the summary request may be.

The provider only sends (:meth:`~engine.llm.base.Provider.ask_text`: one system prompt, one
user text, the answer's text); this module decides what to send. A segment that fits goes in
one call; one that does not (by the estimate, or because the API answered "prompt is too
long") is split at message boundaries, each part summarised, and the part summaries merged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from engine.compaction.extractive import time_label
from engine.compaction.summary import render_messages_for_summary
from engine.llm.base import Provider, ProviderError
from engine.models import Message
from engine.settings.config import Settings

_MIN_SUMMARY_CHUNK_CHARS = 1_000
"""Chunks never get smaller than this, so a tiny window cannot split a segment forever."""

_MAX_SPLIT_HALVINGS = 4
"""Times a "prompt is too long" answer may halve the chunk size before the summary gives up."""


class ProviderSummariser:
    """The :class:`~engine.compaction.summary.Summariser` of a provider: a model's summary of
    archived messages, within the summary call's budget, split when it does not fit."""

    def __init__(self, provider: Provider, settings: Settings) -> None:
        self.provider = provider
        self.settings = settings
        self.is_model = provider.is_model

    def summarize(
        self,
        messages: list[Message],
        prompt: str,
        focus: str | None,
        timeout: float,
        render: Callable[[Sequence[Message]], str] | None = None,
        provider_retries: int | None = None,
    ) -> str:
        """Summarise ``messages`` with ``prompt`` as the system prompt, within ``timeout`` s,
        asking ``summary_model`` when it is set.

        The deadline covers every call, chunks included; past it :class:`TimeoutError`.
        ``provider_retries``: the provider's own retries of each call (None: its setting; 0
        when the strategy retries the summary itself, seed 004 F-007).
        """
        deadline = time.monotonic() + timeout
        ratio, per_token = self.settings.threshold_ratio, self.settings.input_chars_per_token
        budget_tokens = int(ratio * self.settings.context_window) - len(prompt) // per_token
        max_chars = max(budget_tokens * per_token, _MIN_SUMMARY_CHUNK_CHARS)

        def ask(text: str) -> str:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("summary call timed out")
            return self.provider.ask_text(
                prompt,
                text,
                remaining,
                model=self.settings.summary_model,
                retries=provider_retries,
            )

        return summarize_in_chunks(
            messages, ask, max_chars=max_chars, focus=focus, render=render or render_for_summary
        )


def render_for_summary(messages: Sequence[Message]) -> str:
    """The segment as plain text, in the E1 form ``engine.compaction.summary`` renders."""
    return render_messages_for_summary(list(messages))


def _frame(body: str, focus: str | None, header: str = "") -> str:
    """The user message of a summary call: header, the text in the ``<archive>`` tags that
    SUMMARY_PROMPT announces, and the user's focus instructions."""
    parts = [header] if header else []
    parts.append(f"<archive>\n{body}\n</archive>")
    if focus:
        parts.append(f"Focus instructions from the user: {focus}")
    return "\n\n".join(parts)


def _time_header(messages: Sequence[Message]) -> str:
    if not messages:
        return ""
    first, last = time_label(messages[0].created_at), time_label(messages[-1].created_at)
    return f"Segment time range: {first} to {last}."


def _pack(pieces: Sequence[str], max_chars: int) -> list[str]:
    """Greedily join pieces (with blank lines) into chunks of at most ``max_chars``.

    A piece longer than ``max_chars`` is cut into slices first.
    """
    slices: list[str] = []
    for piece in pieces:
        slices.extend(piece[i : i + max_chars] for i in range(0, max(len(piece), 1), max_chars))
    chunks: list[str] = []
    for piece in slices:
        if chunks and len(chunks[-1]) + 2 + len(piece) <= max_chars:
            chunks[-1] += "\n\n" + piece
        else:
            chunks.append(piece)
    return chunks


def summarize_in_chunks(
    messages: Sequence[Message],
    summarize_text: Callable[[str], str],
    *,
    max_chars: int,
    focus: str | None = None,
    render: Callable[[Sequence[Message]], str] = render_for_summary,
) -> str:
    """Summarise a segment with ``summarize_text`` (one model call), never sending more than
    ``max_chars`` characters of user content in one call.

    A segment that fits goes in one call. One that does not (by the estimate, or because the
    API answered "prompt is too long") is split at message boundaries into parts that fit;
    each part is summarised, then the part summaries are merged (in rounds, if even they do
    not fit together). A "prompt is too long" answer halves the chunk size and starts over.
    """
    header = _time_header(messages)
    sent = 0

    def call(text: str) -> str:
        nonlocal sent
        sent = len(text)
        return summarize_text(text)

    for _ in range(_MAX_SPLIT_HALVINGS + 1):
        try:
            whole = _frame(render(messages), focus, header)
            if len(whole) <= max_chars:
                return call(whole)
            return _summarize_parts(messages, call, max_chars, focus, header, render)
        except ProviderError as exc:
            if exc.kind != "prompt_too_long" or max_chars <= _MIN_SUMMARY_CHUNK_CHARS:
                raise
            # The estimate was wrong for this text: aim at half of what was refused.
            max_chars = max(min(max_chars, sent) // 2, _MIN_SUMMARY_CHUNK_CHARS)
    raise ProviderError(
        "prompt_too_long", "The segment is still too long for a summary after splitting it."
    )


def _summarize_parts(
    messages: Sequence[Message],
    summarize_text: Callable[[str], str],
    max_chars: int,
    focus: str | None,
    header: str,
    render: Callable[[Sequence[Message]], str],
) -> str:
    frame_room = len(_frame("", focus, f"{header}\nPart 9999 of 9999 of the segment to archive."))
    body_chars = max(max_chars - frame_room, _MIN_SUMMARY_CHUNK_CHARS // 2)
    parts = _pack([render([m]) for m in messages], body_chars)
    summaries = [
        summarize_text(
            _frame(part, focus, f"{header}\nPart {i} of {len(parts)} of the segment to archive.")
        )
        for i, part in enumerate(parts, 1)
    ]
    merge_header = (
        f"{header}\nBelow are summaries of consecutive parts of ONE archived conversation "
        "segment, oldest first. Merge them into a single summary that follows the template "
        "exactly."
    )
    merge_room = len(_frame("", focus, merge_header))
    while True:
        groups = _pack(
            [f"### Part {i}\n{s}" for i, s in enumerate(summaries, 1)],
            max(max_chars - merge_room, _MIN_SUMMARY_CHUNK_CHARS // 2),
        )
        if len(groups) == 1:
            return summarize_text(_frame(groups[0], focus, merge_header))
        if len(groups) >= len(summaries):
            # No two summaries fit together: shorten them so the merge rounds make progress.
            room = max(max_chars - merge_room, _MIN_SUMMARY_CHUNK_CHARS // 2)
            summaries = [s[: room // 2 - 16] for s in summaries]
            continue
        summaries = [summarize_text(_frame(g, focus, merge_header)) for g in groups]
