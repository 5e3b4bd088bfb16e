"""How much of the session's artifact ledger (:mod:`engine.compaction.ledger`) a replayed request
still holds, by kind — measured again and again over mostly the same messages as a replay goes
on (at every compaction, at the last step and every few steps).

Each text is folded once per replay (:class:`Folded`); the sent history's folded texts are kept
grouped by step and by round from one measurement to the next (:class:`Grouped`); and the texts
an item is looked for in are joined, and each item looked for in each of them, once while they
stay the same (:class:`Haystacks`). A measurement costs what changed since the last one, not
every item searched for again in the whole request.
"""

from __future__ import annotations

import bisect
import itertools
import json
from typing import Any

from engine.compaction.ledger import KINDS, LedgerItem, fold
from engine.compaction.placement import as_sent
from engine.messages.sequences import common_prefix
from engine.models import Message

Where = tuple[int | None, int | None]
"""A message's (round, step)."""


class LedgerRecall:
    """The share of a replay's ledger items the request holds, by kind, at a given step."""

    def __init__(self, items: list[LedgerItem]) -> None:
        self.items = items
        self._folded = Folded()
        self._grouped = Grouped()
        self._haystacks = Haystacks()
        self._stored = StoredIds()
        self._looked_for = [
            (self._folded.text(i.key), (i.round, i.step), i.round, i.kind) for i in items
        ]
        """Each item as it is looked for: its folded key, its step and round, its kind."""
        ids = [i.message_id for i in items if i.message_id is not None]
        in_order = len(ids) == len(items) and all(a <= b for a, b in itertools.pairwise(ids))
        self._ids = ids if in_order else None
        """The items' message ids when they are in order (a ledger is extracted in message
        order): the items recorded up to a message are found by halving."""

    def _known(self, upto: int) -> list[tuple[str, Where, int | None, str]]:
        """The items recorded up to message ``upto``, as they are looked for."""
        if self._ids is not None:
            return self._looked_for[: bisect.bisect_right(self._ids, upto)]
        return [
            facts
            for item, facts in zip(self.items, self._looked_for, strict=True)
            if item.message_id is None or item.message_id <= upto
        ]

    def measure(self, upto: int, agent: Any) -> dict[str, float | None]:
        """The share of the items recorded up to message ``upto`` that ``agent``'s next
        request still holds, by kind (None for a kind with no item yet).

        An item whose step is still sent as stored (not projected, masked or archived) is
        looked for in that step's own messages, then in what is left of its round; any other
        in the summaries and the projected messages — so each item is checked against a small
        text, not the whole request.
        """
        folded, grouped = self._folded, self._grouped
        sent = agent.sent_history()
        grouped.update(sent.messages, self._stored.of(agent.history.history.messages), folded)
        own, rounds = grouped.own, grouped.rounds
        others = [folded.text(as_sent(s)) for s in sent.summaries] + grouped.others
        # the round in progress: full observations, after the step's and round's stored texts
        own_now: dict[Where, list[str]] = {}
        rounds_now: dict[int | None, list[str]] = {}
        for step in agent.scratchpad:
            where = (agent.current_round, step.assistant.meta.step)
            texts = [folded.text(r.text) for r in step.results]
            own_now.setdefault(where, []).extend(texts)
            rounds_now.setdefault(agent.current_round, []).extend(texts)
        haystacks = self._haystacks
        haystacks.begin()
        counts = {kind: [0, 0] for kind in KINDS}
        in_step: dict[Where, Haystack] = {}
        in_round: dict[int | None, Haystack] = {}
        rest: Haystack | None = None
        for wanted, where, round_, kind in self._known(upto):
            # its own step first, then what is left of its round, then summaries and projections
            hay = in_step.get(where)
            if hay is None and (where in own or where in own_now):
                hay = in_step[where] = haystacks.of(own.get(where, []) + own_now.get(where, []))
            found = hay is not None and hay.holds(wanted)
            if not found:
                hay = in_round.get(round_)
                if hay is None and (round_ in rounds or round_ in rounds_now):
                    hay = in_round[round_] = haystacks.of(
                        rounds.get(round_, []) + rounds_now.get(round_, [])
                    )
                found = hay is not None and hay.holds(wanted)
            if not found:
                if rest is None:
                    rest = haystacks.of(others)
                found = rest.holds(wanted)
            pair = counts.setdefault(kind, [0, 0])
            pair[1] += 1
            pair[0] += int(found)
        return {kind: (kept / total if total else None) for kind, (kept, total) in counts.items()}


class Folded:
    """Texts folded (:func:`engine.compaction.ledger.fold`: tags unwrapped, whitespace normalised,
    case-folded) as :func:`engine.compaction.ledger.present` compares them, each computed once:
    recall is measured again and again over the same messages.

    Folding each text and joining the non-empty ones with a space gives what folding their
    join gives (a tag never spans two texts, whitespace separates them either way, and case
    folding maps each character on its own)."""

    def __init__(self) -> None:
        self._messages: dict[int, tuple[Message, str]] = {}
        self._texts: dict[str, str] = {}

    def message(self, msg: Message) -> str:
        found = self._messages.get(id(msg))
        if found is None or found[0] is not msg:
            found = self._messages[id(msg)] = (msg, fold(message_text(msg)))
        return found[1]

    def text(self, text: str) -> str:
        found = self._texts.get(text)
        if found is None:
            found = self._texts[text] = fold(text)
        return found


def _joined(folded: list[str]) -> str:
    return " ".join(f for f in folded if f)


class Haystack:
    """One joined text items are looked for in, and what each look found."""

    __slots__ = ("_found", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._found: dict[str, bool] = {}

    def holds(self, wanted: str) -> bool:
        found = self._found.get(wanted)
        if found is None:
            found = self._found[wanted] = wanted in self.text
        return found


class Haystacks:
    """The joined texts of the last two measurements, by the folded texts they join.

    The same parts (the same strings, compared as objects first) always join to the same
    text, so a step, a round or the summaries that did not change since the last measurement
    are neither joined nor searched again; what the last measurement did not use is let go.
    """

    def __init__(self) -> None:
        self._last: dict[tuple[str, ...], Haystack] = {}
        self._now: dict[tuple[str, ...], Haystack] = {}

    def begin(self) -> None:
        """A new measurement starts."""
        self._last, self._now = self._now, {}

    def of(self, parts: list[str]) -> Haystack:
        key = tuple(parts)
        found = self._now.get(key)
        if found is None:
            found = self._last.get(key)
            if found is None:
                found = Haystack(_joined(parts))
            self._now[key] = found
        return found


class StoredIds:
    """The ids of the stored history's messages (to tell which sent messages are sent as
    stored), kept while the history's list only grows: the history manager appends to its
    list, and replaces it when it reloads (a compaction, an undo, a pin)."""

    def __init__(self) -> None:
        self._messages: list[Message] | None = None
        self._counted = 0
        self._ids: set[int] = set()

    def of(self, messages: list[Message]) -> set[int]:
        if messages is not self._messages or len(messages) < self._counted:
            self._messages, self._counted, self._ids = messages, 0, set()
        if len(messages) > self._counted:
            self._ids.update(map(id, itertools.islice(messages, self._counted, None)))
            self._counted = len(messages)
        return self._ids


class Grouped:
    """The sent history's folded texts as :class:`LedgerRecall` looks them up — by step and by
    round for the messages sent as stored, in order for the others (projected, masked) — kept
    from one measurement to the next: the leading messages a request shares with the last
    measured one (the same objects, each sent as stored or not as before) are not grouped
    again, the ones after them are taken out and the new ones put in."""

    def __init__(self) -> None:
        self.own: dict[Where, list[str]] = {}
        self.rounds: dict[int | None, list[str]] = {}
        self.others: list[str] = []
        self._messages: list[Message] = []
        self._ids: list[int] = []
        self._stored: list[bool] = []

    def update(self, messages: list[Message], stored: set[int], folded: Folded) -> None:
        ids = list(map(id, messages))
        flags = list(map(stored.__contains__, ids))
        same = min(common_prefix(self._ids, ids), common_prefix(self._stored, flags))
        for pos in range(len(self._ids) - 1, same - 1, -1):  # last in, first out
            if self._stored[pos]:
                msg = self._messages[pos]
                self._drop(self.own, (msg.meta.round, msg.meta.step))
                self._drop(self.rounds, msg.meta.round)
            else:
                self.others.pop()
        for msg, here in zip(messages[same:], flags[same:], strict=True):
            text = folded.message(msg)
            if here:
                self.own.setdefault((msg.meta.round, msg.meta.step), []).append(text)
                self.rounds.setdefault(msg.meta.round, []).append(text)
            else:
                self.others.append(text)
        self._messages, self._ids, self._stored = list(messages), ids, flags

    @staticmethod
    def _drop(groups: dict[Any, list[str]], key: Any) -> None:
        texts = groups[key]
        texts.pop()
        if not texts:
            del groups[key]


def message_text(msg: Message) -> str:
    """A history message's words: its content and its calls, each call's string arguments as
    written (a command holding quotes is compared unescaped, as its ledger key is)."""
    calls = " ".join(
        " ".join(
            [c.name, *(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                       for v in c.input.values())]
        )
        for c in msg.tool_calls
    )  # fmt: skip
    return f"{msg.content}\n{calls}" if calls else msg.content
