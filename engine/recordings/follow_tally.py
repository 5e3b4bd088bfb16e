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
from dataclasses import dataclass

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


Row = tuple[int, int, int, int, int, str]
"""A :class:`Counts` as a tuple, in its fields' order (one is kept after every item)."""


class ItemTally:
    """The :class:`Counts` after each item of the last parse counted."""

    def __init__(self) -> None:
        self._items: list[Item] = []
        self._after: list[Row] = []

    def counts(self, items: list[Item]) -> Counts:
        """The counts over ``items``: those of the items the last call had kept, the rest
        counted."""
        kept = common_prefix(self._items, items)
        del self._after[kept:]
        after = self._after
        messages, calls, compactions, largest, pre, model = after[-1] if after else _NONE
        for item in items[kept:]:
            calls += len(item.calls)
            if item.kind == "summary":
                compactions += 1
                pre = max(pre, item.pre_tokens or 0)
            else:
                messages += 1
                if item.kind == "assistant":
                    if item.usage is not None:
                        largest = max(largest, item.usage.input_side + item.usage.output_tokens)
                    model = item.model or model
            after.append((messages, calls, compactions, largest, pre, model))
        self._items = list(items)
        return Counts(*after[-1]) if after else Counts()


_NONE: Row = (0, 0, 0, 0, 0, "")
