"""The counts of the texts every request of an imported session repeats, stored at import.

A request's messages carry their own counts (``Message.tokens``, stored with them); the texts
around them — the system prompt, the tool definitions, the summaries — are counted with
:func:`~engine.messages.tokens.count_repeated` and remembered in the database by digest
(``Store.token_counts``). A live session stores them when its writer lease ends; an import
writes no round through an agent, so it stores them here, and ``context`` or the workbench of
the imported session never loads the tokenizer. (A ``CLAUDE.md`` / ``AGENTS.md`` in the
session's workspace, CODE_LAW, is read when the request is built and counted then: the file is
the workspace's, not the recording's.)

The texts are the ones :class:`~engine.context.builder.ContextBuilder` repeats for an agent over
the session (:meth:`~engine.context.builder.ContextBuilder.repeated_texts`): the default system
prompt, the default tools and the session strategy's own, each summary as its placement sends
it. ``tests/engine/recordings/test_import_counts.py`` holds the two to the same list.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from engine.compaction.placement import IN_SYSTEM, leading_messages, system_text
from engine.compaction.strategies import get_strategy
from engine.messages.tokens import count_repeated, text_digest, tool_text
from engine.models import Summary
from engine.settings.config import Settings
from engine.store import Store
from prompts.system_prompt import SYSTEM_PROMPT
from tools.base import Tool
from tools.registry import default_registry


def repeated_texts(strategy: str, settings: Settings, summaries: Iterable[Summary]) -> list[str]:
    """What every request of a session under ``strategy`` with ``summaries`` repeats."""
    policy = get_strategy(strategy, settings)
    texts = list(_prompt_and_tools(tuple(policy.extra_tools)))
    for summary in summaries:
        if summary.placement in IN_SYSTEM:
            texts.append(system_text(summary))
        else:
            texts.extend(text for _, text in leading_messages(summary))
    return [t for t in texts if t]


@functools.lru_cache(maxsize=16)
def _prompt_and_tools(extra_tools: tuple[type[Tool], ...]) -> tuple[str, ...]:
    """The system prompt and the tool definitions' texts, made once per set of tools: a tool's
    JSON schema takes pydantic ~2 ms to build, ten per imported session (issue 44: 1.8 s of a
    60-session history import)."""
    registry = default_registry().extended([tool() for tool in extra_tools])
    return (SYSTEM_PROMPT, *(tool_text(t) for t in registry.schemas()))


repeated_digest = functools.lru_cache(maxsize=256)(text_digest)
""":func:`~engine.messages.tokens.text_digest` of the texts every session repeats, each
worked out once per process: the system prompt and the tool definitions are the same
strings session after session (:func:`_prompt_and_tools`), and digesting them again for
each imported session was about 7 % of storing a small file (issue 44)."""


def remember_repeated(
    store: Store, texts: Iterable[str], digest_of: Callable[[str], str] = text_digest
) -> int:
    """Store the counts of ``texts`` the database lacks; how many were new. ``digest_of``:
    :func:`repeated_digest` for texts that come back session after session."""
    by_digest = {digest_of(text): text for text in texts}
    known = store.token_counts(by_digest)
    new = {}
    for digest, text in by_digest.items():
        if digest not in known:
            new[digest] = count_repeated(text)
    if new:
        store.remember_token_counts(new)
    return len(new)
