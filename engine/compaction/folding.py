"""Folds over message lists that grow at the end, kept so each is continued, not redone.

A strategy that re-compacts (seed 003's ``message-window``) summarises *everything* archived so
far at each compaction: the list it hands the summariser is the previous one with the newly
archived messages after it. What the extractive summary derives from a message list (the
artifact ledger, the segment facts) is a left fold: a state that each message, in order, adds
to. :class:`PrefixFolds` keeps the states of the last few lists it folded; a list that begins
with one of them is folded from where that one ended, so a re-compaction costs what it adds.

"Begins with": message for message, the same object (a held list keeps its messages alive, and
a message is never changed in place: a change is a copy), or one equal in everything a fold
reads (:func:`fold_key`): the segment archived last time comes back read from the store, as
new objects. A list that does not begin with a held one is folded from the start, as before.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Any, Generic, TypeVar

from engine.models import Message

State = TypeVar("State")
_R = TypeVar("_R")

HELD_FOLDS = 4
"""Lists whose states are kept (one per re-compacting strategy at work, a few spare)."""


def fold_key(msg: Message) -> tuple[Any, ...]:
    """Everything of a message the extractive folds read (the ledger's and the facts'): not its
    token count, pin, creation time or origin."""
    meta = msg.meta
    calls = tuple((c.id, c.name, c.input) for c in msg.tool_calls)
    return (
        msg.id,
        msg.role,
        msg.content,
        calls,
        meta.round,
        meta.step,
        meta.tool_name,
        meta.tool_use_id,
        meta.is_error,
        meta.interrupted,
        meta.final,
    )


@dataclass
class _Held(Generic[State]):
    messages: list[Message]
    keys: list[tuple[Any, ...]]
    """:func:`fold_key` of each message."""
    state: State

    def begins(self, messages: Sequence[Message]) -> bool:
        """Whether ``messages`` begin with this list's messages (or their equals)."""
        if len(self.messages) > len(messages):
            return False
        # the same objects are passed over in C; only the others are compared by their key
        pairs = zip(self.keys, messages, strict=False)  # messages may go on past this list
        others = compress(pairs, map(operator.is_not, self.messages, messages))
        return all(key == fold_key(msg) for key, msg in others)


class PrefixFolds(Generic[State]):
    """The fold of a message list, continued from the longest held list it begins with.

    ``start`` makes an empty state; ``add`` adds one message to a state. :meth:`read` gives a
    state to a reader while no other thread changes it.
    """

    def __init__(
        self,
        start: Callable[[], State],
        add: Callable[[State, Message], None],
        size: int = HELD_FOLDS,
    ) -> None:
        self._start = start
        self._add = add
        self._size = size
        self._held: list[_Held[State]] = []
        """Most recently used first."""
        self._lock = threading.Lock()

    def read(self, messages: Sequence[Message], reader: Callable[[State], _R]) -> _R:
        """``reader`` applied to the fold of ``messages`` (it must not keep the state: the
        state goes on to stand for longer lists)."""
        with self._lock:
            held = self._longest_prefix(messages)
            if held is None:
                held = _Held([], [], self._start())
                self._held.insert(0, held)
                del self._held[self._size :]
            else:
                self._held.remove(held)
                self._held.insert(0, held)
            rest = messages[len(held.messages) :]
            for msg in rest:
                self._add(held.state, msg)
            held.keys += [fold_key(m) for m in rest]
            held.messages = list(messages)
            return reader(held.state)

    def _longest_prefix(self, messages: Sequence[Message]) -> _Held[State] | None:
        best: _Held[State] | None = None
        for held in self._held:
            if best is not None and len(held.messages) <= len(best.messages):
                continue
            if held.begins(messages):
                best = held
        return best
