"""The hidden prefix of an imported session: what the original agent sent that the file omits.

A recording holds the conversation, not the original agent's system prompt, tool definitions
or injected context. Its first API call's prompt size (the input side of the first usage
record) minus ctxscope's local count of what the transcript shows before that call is that
hidden prefix. Adding it to today's history gives the request "as the original agent saw it".
Computed from what is stored (no extra column); local counts are estimates
(``engine.messages.tokens``),
so the figure is too.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.models import History, Observation
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
) -> HiddenPrefix | None:
    """The hidden prefix of an imported session (None: not imported, or no usage recorded).
    ``history``, ``observations``: the session's as the store gives them, when the caller has
    read them already (``ctxscope context`` reads them once for this and its breakdown)."""
    if store.get_session(session_id).provider != "import":
        return None
    usages = store.usages(session_id)
    if not usages:
        return None
    first = usages[0]
    archived = [m for seg in store.segments(session_id) for m in seg.messages]
    if history is None:
        history = store.history(session_id)
    if observations is None:
        observations = store.observations(session_id)
    messages = archived + history.messages
    full = {o.tool_use_id: o.tokens_full for o in observations}
    shown = 0
    for m in messages:
        rnd, step = m.meta.round or 0, m.meta.step or 0
        if (rnd, step) >= (first.round_index or 0, first.step or 0):
            break
        tool = m.meta.tool_use_id
        shown += full[tool] if m.role == "tool" and tool in full else (m.tokens or 0)
    return HiddenPrefix(first.usage.input_side, shown)
