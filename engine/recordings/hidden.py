"""The hidden prefix of an imported session: what the original agent sent that the file omits.

A recording holds the conversation, not the original agent's system prompt, tool definitions
or injected context. Its first API call's prompt size (the input side of the first usage
record) minus ctxscope's local count of what the transcript shows before that call is that
hidden prefix. Adding it to today's history gives the request "as the original agent saw it".
Computed from what is stored (no extra column); local counts are estimates
(``engine.messages.tokens``),
so the figure is too.

Only the rounds up to the first call's are read (its messages, archived or not, and their tool
results' observations): opening a recording in the workbench works this out, and reading the
whole session a second time for it (its archive, history and observations) was ~0.02–0.04 s
of the corpus' Claude Code session's first frame (issue 44).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.models import History, Message, Observation
from engine.store import Store


@dataclass(frozen=True)
class HiddenPrefix:
    first_prompt_tokens: int
    """The input side of the recording's first API call."""
    transcript_tokens: int
    """Local count of what the transcript shows before that call (tool results in full)."""

    @property
    def tokens(self) -> int:
        return max(self.first_prompt_tokens - self.transcript_tokens, 0)


def hidden_prefix(
    store: Store,
    session_id: int,
    history: History | None = None,
    observations: list[Observation] | None = None,
    messages: Sequence[Message] | None = None,
) -> HiddenPrefix | None:
    """The hidden prefix of an imported session (None: not imported, or no usage recorded).
    ``observations``: the session's (or at least its first rounds') as the store gives them,
    when the caller has read them already (``ctxscope context`` reads them once for this and
    its breakdown). ``messages``: every message of the session in the order written, archived or
    not, when the caller has read them (the workbench's open worker shows them all); without
    them the rounds up to the first call's are read. ``history`` is accepted for callers that
    have it, and not needed."""
    del history  # the first rounds' messages are read whole, in or out of the history
    if store.get_session(session_id).provider != "import":
        return None
    usages = store.usages(session_id)
    if not usages:
        return None
    first = usages[0]
    until = (first.round_index or 0, first.step or 0)
    if messages is not None:
        before = [m for m in messages if (m.meta.round or 0) <= until[0]]
    else:
        before = [
            m
            for r in store.rounds(session_id)
            if r.index <= until[0]
            for m in store.round_messages(session_id, r.index)
        ]
    shown = 0
    tools: dict[str, Message] = {}
    for m in before:
        if (m.meta.round or 0, m.meta.step or 0) >= until:
            break
        if m.role == "tool" and m.meta.tool_use_id:
            tools[m.meta.tool_use_id] = m
        else:
            shown += m.tokens or 0
    if tools:  # a tool result counts in full (the call saw it whole), else as stored
        if observations is None:
            rounds = sorted({m.meta.round for m in tools.values() if m.meta.round is not None})
            observations = [o for r in rounds for o in store.observations(session_id, r)]
        full = {o.tool_use_id: o.tokens_full for o in observations}
        shown += sum(full.get(tool, m.tokens or 0) for tool, m in tools.items())
    return HiddenPrefix(first.usage.input_side, shown)
