"""What ``watch`` counts over a parse's items, kept from one look to the next.

Claude Code's tail parser keeps the items before the last round's input from one look to the
next (the same objects, :mod:`engine.recordings.claude_code_follow`): only the items from there
on are new. The counts ``watch`` prints with every update (messages, tool calls, compactions)
and what the agent's rules read of the parse (its largest call, its largest context before a
compaction, the model its last step names: :func:`~engine.recordings.agents.protocol.
recorded_of_parsed`) are kept here after each item, so that a look counts the items it has not
seen, not the whole session. The items the last look had are found again by identity
(:func:`common_prefix`), in C, not by comparing them; the fields counted (kind, calls, usage,
``pre_tokens``, model) are never changed on an item a parser kept (a summary's ``recorded_call``
is, and is not counted here).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, replace

from engine.recordings.agents.protocol import Recorded
from engine.recordings.base import Item, Parsed


def common_prefix(before: Sequence[object], now: Sequence[object]) -> int:
    """How many of ``now``'s first elements are ``before``'s, the same objects in order."""
    n = min(len(before), len(now))
    same = list(map(operator.is_, before[:n], now[:n]))
    return same.index(False) if False in same else n


@dataclass(frozen=True)
class Counts:
    """Counts over the items up to one of them."""

    messages: int = 0
    tool_calls: int = 0
    compactions: int = 0
    largest_call: int = 0
    """The largest input side + output of an assistant step's usage."""
    largest_pre_compaction: int = 0
    model: str = ""
    """The model the last assistant step naming one names."""

    def after(self, item: Item) -> Counts:
        if item.kind == "summary":
            return replace(
                self,
                compactions=self.compactions + 1,
                tool_calls=self.tool_calls + len(item.calls),
                largest_pre_compaction=max(self.largest_pre_compaction, item.pre_tokens or 0),
            )
        out = replace(
            self, messages=self.messages + 1, tool_calls=self.tool_calls + len(item.calls)
        )
        if item.kind != "assistant":
            return out
        if item.usage is not None:
            size = item.usage.input_side + item.usage.output_tokens
            if size > out.largest_call:
                out = replace(out, largest_call=size)
        return replace(out, model=item.model) if item.model else out

    def recorded(self, parsed: Parsed) -> Recorded:
        """What the agent's rules read of ``parsed`` (whose items these counts are of): what
        :func:`~engine.recordings.agents.protocol.recorded_of_parsed` gives."""
        return Recorded(
            model=parsed.model or self.model,
            largest_call=self.largest_call,
            largest_pre_compaction=self.largest_pre_compaction,
            facts=parsed.recorded,
            agent_version=parsed.agent_version,
            cwd=parsed.cwd,
        )


class ItemTally:
    """The :class:`Counts` after each item of the last parse counted."""

    def __init__(self) -> None:
        self._items: list[Item] = []
        self._after: list[Counts] = []

    def counts(self, items: list[Item]) -> Counts:
        """The counts over ``items``: those of the items the last call had kept, the rest
        counted."""
        kept = common_prefix(self._items, items)
        del self._after[kept:]
        now = self._after[-1] if self._after else Counts()
        for item in items[kept:]:
            now = now.after(item)
            self._after.append(now)
        self._items = list(items)
        return now
