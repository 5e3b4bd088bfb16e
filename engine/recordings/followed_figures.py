"""A followed session's figures, brought up to date by what each store of it wrote (``watch``).

``watch --jsonl`` prints, with every update, the session's figures as every surface prints them
(:func:`engine.recordings.figures.session_figures`: tokens, cost, context at the last call,
window, countdown). Made from the store they cost a read of every usage row of the session,
and the pricing of every day's sums, at every update: at 8× marot (1,216 calls) that was most
of the watcher's work (docs/benchmarks.md, "Following a long session").

The follower stores the session's last round again as it grows (:meth:`Follower.save
<engine.recordings.follow.Follower.save>`): the rounds before it stay as written, with their
usage rows. So :class:`FollowedFigures` keeps the sums of the rows of the rounds that stay
(:class:`~engine.figures.CallTally`, the day sums the price is taken of, the largest call the
agent's rules read) and, after each store, reads back only the rows of the rounds written again
(:meth:`Store.usages` ``from_round``), adds them, and keeps the figures as the session's stored
figures in the store's own transaction (:func:`~engine.recordings.figures.keep_made`):
``session_figures`` then reads that copy. A session written again whole (a rewind, a file
replaced) or whose model changed is summed again from all its rows.

One computation: the figures are :func:`~engine.figures.figures_from_calls`'s through the same
:class:`~engine.figures.CallTally`, the calls made by the same :func:`~engine.recordings.figures.
call_of`, the cost priced by the same :func:`~engine.recordings.figures.session_spend` from the
day sums :meth:`Store.usage_groups` would give (``tests/engine/recordings/
test_followed_figures.py`` compares them field for field with figures made from the store,
after every look, on the corpus).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.figures import CallTally, SessionFigures, WindowRules
from engine.models import Compaction, Session, UsageRecord
from engine.recordings.figures import (
    agent_label,
    call_of,
    calls_model,
    history_sums,
    keep_made,
    rules_for,
    session_spend,
)
from engine.settings.config import Settings
from engine.store import Store
from engine.store.history import LONG_REQUEST, UsageGroup

GroupKey = tuple[str, bool, str]
"""A day sum's key as :meth:`Store.usage_groups` groups them: recorded day, over
:data:`LONG_REQUEST`, the model the record names."""


@dataclass
class _Sums:
    """Sums over some usage rows, in the order written."""

    calls: CallTally = field(default_factory=CallTally)
    groups: dict[GroupKey, list[int]] = field(default_factory=dict)
    """Billed, measured, not copied rows, as :meth:`Store.usage_groups` sums them: requests,
    input, output, cache read, cache write, of it one hour."""
    largest: UsageRecord | None = None
    """The row with the largest call (input side + output): all the agent's rules read of the
    rows (:func:`engine.recordings.agents.recorded_of_session`)."""

    def add(self, row: UsageRecord, model: str) -> None:
        self.calls.add(call_of(row, model))
        usage = row.usage
        size = usage.input_side + usage.output_tokens
        if self.largest is None or size > self.largest.usage.input_side + (
            self.largest.usage.output_tokens
        ):
            self.largest = row
        # what Store.usage_groups sums: billed (not ctxscope's local count), measured, not a
        # fork's copy; by day as recorded (the stored text's first ten characters)
        if row.source == "local" or size <= 0 or row.copied:
            return
        key = (row.created_at.isoformat()[:10], usage.input_side > LONG_REQUEST, row.model)
        sums = self.groups.setdefault(key, [0, 0, 0, 0, 0, 0])
        for n, value in enumerate(
            (
                1,
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_input_tokens,
                usage.cache_creation_input_tokens,
                usage.cache_creation_1h_input_tokens,
            )
        ):
            sums[n] += value

    def copy(self) -> _Sums:
        return _Sums(self.calls.copy(), {k: list(v) for k, v in self.groups.items()}, self.largest)

    def usage_groups(self, session_id: int) -> list[UsageGroup]:
        """The day sums as :meth:`Store.usage_groups` gives them, in its order."""
        return [
            UsageGroup(
                session_id=session_id,
                day=day,
                long=long,
                requests=requests,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cache_read_input_tokens=read,
                cache_creation_input_tokens=write,
                cache_creation_1h_input_tokens=hour,
                model=model,
            )
            for (day, long, model), (requests, input_tokens, output_tokens, read, write, hour) in (
                sorted(self.groups.items())
            )
        ]


class FollowedFigures:
    """One followed session's figures, summed as its follower stores it."""

    def __init__(self) -> None:
        self._kept = _Sums()
        """The rows of rounds up to :attr:`_kept_upto`, which a store of the last round does
        not write again."""
        self._kept_upto = 0
        self._rows: list[UsageRecord] = []
        """The rows of the later rounds, as read back."""
        self._model: str | None = None
        """The model a record naming none was counted at (:func:`calls_model`)."""
        self.reads = 0
        """Usage rows read back from the store (the benchmark and tests watch it)."""
        self._summary_tokens: int | None = None
        """The history tokens of the session's active summaries, and its counted compactions
        (:func:`~engine.recordings.figures.history_sums`): they change only with a
        compaction (None: read them at the next store)."""
        self._compactions = 0
        self._compaction_rows: list[Compaction] = []
        """The session's compactions as last read (what the agent's rules read of them)."""

    def stored(
        self,
        store: Store,
        session: Session,
        settings: Settings,
        written_from: int | None,
        env: Mapping[str, str] | None = None,
        live_tokens: int | None = None,
    ) -> int | None:
        """After a store of the session, in its transaction: read back the usage rows of the
        rounds ``written_from`` on (None: the session was written whole), and keep the
        session's figures; the generation they were kept at (None: not kept).
        ``live_tokens``: the tokens of the session's messages no compaction archived, as the
        writer summed them (:attr:`ImportReport.tokens_stored` of a store that wrote no
        compaction; None after one). The summaries' tokens and the compactions are read from
        the store after a store that wrote a compaction or the whole session, else kept."""
        assert session.id is not None
        self._read(store, session, settings, written_from)
        if live_tokens is None or written_from is None or self._summary_tokens is None:
            self._compaction_rows = store.compactions(session.id)
            history, self._compactions = history_sums(store, session.id, self._compaction_rows)
            self._summary_tokens = None if live_tokens is None else history - live_tokens
        else:
            history = live_tokens + self._summary_tokens
        figures, rules = self._made(store, session, settings, env, (history, self._compactions))
        return keep_made(store, session, settings, figures, rules, env, with_sums=True)

    def forget(self) -> None:
        """Sum every row again at the next store (the session was written by another
        process)."""
        self._model, self._summary_tokens = None, None

    def _read(
        self, store: Store, session: Session, settings: Settings, written_from: int | None
    ) -> None:
        """The rows of the rounds written again read back; all of them when the session was
        written whole, when a round already summed for good was written again, or when the
        model a record naming none is counted at changed."""
        assert session.id is not None
        sid = session.id
        model = calls_model(session, settings)
        if written_from is not None and model == self._model and written_from > self._kept_upto:
            # the rows before the rounds written again stay as they are: summed for good
            for row in self._rows:
                if (row.round_index or 0) < written_from:
                    self._kept.add(row, model)
            self._kept_upto = written_from - 1
            self._rows = store.usages(sid, from_round=written_from)
        else:
            self._kept, self._kept_upto, self._model = _Sums(), 0, model
            self._rows = store.usages(sid)
        self.reads += len(self._rows)

    def _made(
        self,
        store: Store,
        session: Session,
        settings: Settings,
        env: Mapping[str, str] | None,
        sums: tuple[int, int],
    ) -> tuple[SessionFigures, WindowRules]:
        assert session.id is not None
        sid = session.id
        model = calls_model(session, settings)
        now = self._kept.copy()
        for row in self._rows:
            now.add(row, model)
        largest = [] if now.largest is None else [now.largest]
        rules = rules_for(store, session, settings, env, largest, self._compaction_rows)
        spend, note = session_spend(store, sid, session.model, settings, now.usage_groups(sid))
        figures = now.calls.figures(
            rules,
            spend,
            note,
            agent=agent_label(session),
            model=model,
            history_tokens=sums[0],
            compactions=sums[1],
        )
        return figures, rules
