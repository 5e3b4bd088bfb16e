"""Sessions: create, find, list, update, delete; the writer lease (one writer per session);
strategy switches; the todo list; remembered token counts."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Any

from peewee import (
    Case,
    fn,
)

from engine.models import (
    Session,
    SessionInfo,
    StrategyParams,
    StrategySwitch,
    TodoItem,
    utcnow,
)
from engine.store import dialect, postgres
from engine.store.access import (
    LEASE_HEARTBEAT,
    LEASE_POLL,
    LEASE_STALE_AFTER,
    reads,
    writes,
)
from engine.store.errors import SessionNotFound, StoreError
from engine.store.lease import Heartbeat, Holder, SessionBusy, is_alive, new_owner
from engine.store.models import (
    CompactionRow,
    LeaseRow,
    MessageRow,
    ObservationRow,
    RoundRow,
    SegmentRow,
    SessionRow,
    StrategySwitchRow,
    SummaryRow,
    TokenCountRow,
    UsageRow,
)
from engine.store.part import StorePart
from engine.store.rows import (
    Select,
    params_model,
    row_dicts,
    session_model,
)


class SessionStore(StorePart):
    """Sessions and what belongs to a session as a whole."""

    # ------------------------------------------------------------------ the writer lease
    @reads
    def lease_holder(self, session_id: int) -> Holder | None:
        """Who holds the session's lease (alive or not), or None."""
        row = LeaseRow.get_or_none(LeaseRow.session == session_id)
        return None if row is None else _holder(row)

    def live_writers(self) -> list[str]:
        """Every live lease holder, as ``session 4 by pid 123, round since 10:02:03 UTC``;
        best effort (it words an error message), so a failed read gives none."""
        try:
            self.bind()
            holders = [(row.session_id, _holder(row)) for row in LeaseRow.select()]
            return [
                f"session {sid} by {h.describe()}"
                for sid, h in holders
                if self._alive(sid, h, LEASE_STALE_AFTER)
            ]
        except Exception:  # noqa: BLE001 - naming the holder must not hide the lock itself
            return []

    def _alive(self, session_id: int, holder: Holder, stale_after: float) -> bool:
        """Is the lease's holder alive? On PostgreSQL: does a client hold the session's lease
        lock (a dead client's connection, and its lock, are gone); on SQLite: is its process
        there, or its heartbeat recent."""
        held = dialect.dialect_of(self.db).session_lock_held(self.db, session_id)
        return is_alive(holder, stale_after) if held is None else held

    @reads
    def writer_alive(self, session_id: int, stale_after: float = LEASE_STALE_AFTER) -> bool:
        """True when a live process holds the session's lease."""
        holder = self.lease_holder(session_id)
        return holder is not None and self._alive(session_id, holder, stale_after)

    def acquire_lease(
        self,
        session_id: int,
        purpose: str,
        wait: float = 0.0,
        stale_after: float = LEASE_STALE_AFTER,
        heartbeat: float = LEASE_HEARTBEAT,
    ) -> Lease:
        """Become the session's only writer, or raise :class:`SessionBusy`.

        A lease whose holder is provably dead is taken over (``Lease.took_over`` says from
        whom). With ``wait`` > 0, a live holder is waited for up to that many seconds
        (``math.inf``: until it finishes).
        """
        if self.read_only:
            raise StoreError(f"{self.where} is open read-only")
        self.get_session(session_id)
        owner, host, pid, started = new_owner()
        deadline = time.monotonic() + wait
        while True:
            held = None
            if self.url is not None:  # PostgreSQL: the lease lock says who is alive
                held = postgres.hold_session_lock(self.url, session_id)
            if self.url is not None and held is None:
                taken, other = False, self.lease_holder(session_id)
            else:
                try:
                    taken, other = self._try_lease(
                        session_id,
                        purpose,
                        owner,
                        host,
                        pid,
                        started,
                        stale_after,
                        held is not None,
                    )
                except BaseException:
                    if held is not None:
                        postgres.release_session_lock(held)
                    raise
            if taken:
                lease = Lease(self, session_id, owner, other, heartbeat, held)
                lease.start()
                return lease
            if time.monotonic() >= deadline:
                who = other.describe() if other is not None else "starting"
                raise SessionBusy(
                    f"session {session_id} is being written by another ctxscope "
                    f"({who}); one writer at a time — try again when it is "
                    "done, or pass --wait to queue behind it"
                )
            time.sleep(LEASE_POLL)

    @writes
    def _try_lease(
        self,
        session_id: int,
        purpose: str,
        owner: str,
        host: str,
        pid: int,
        started: str,
        stale_after: float,
        holder_dead: bool = False,
    ) -> tuple[bool, Holder | None]:
        """Take the lease if it is free or its holder is dead (``holder_dead``: known to be,
        this process holding the session's lease lock); else say who holds it."""
        table = LeaseRow
        row = table.get_or_none(table.session == session_id)
        previous = None if row is None else _holder(row)
        if previous is not None:
            if not holder_dead and self._alive(session_id, previous, stale_after):
                return False, previous
            table.delete().where(table.session == session_id).execute()
        now = utcnow()
        table.create(
            session=session_id,
            owner=owner,
            host=host,
            pid=pid,
            started=started,
            purpose=purpose,
            acquired_at=now,
            heartbeat_at=now,
        )
        return True, previous

    @writes
    def _beat(self, owner: str) -> None:
        table = LeaseRow
        table.update(heartbeat_at=utcnow()).where(table.owner == owner).execute()

    @writes
    def _release(self, owner: str) -> None:
        table = LeaseRow
        table.delete().where(table.owner == owner).execute()

    # ------------------------------------------------------------------ sessions
    @writes
    def create_session(
        self,
        workspace: str,
        title: str = "",
        provider: str = "",
        model: str = "",
        strategy: str = "layered",
        parent_session_id: int | None = None,
        agent_id: str | None = None,
        source: str | None = None,
        params: StrategyParams | None = None,
        origin: tuple[str, str] | None = None,
        workspace_given: bool | None = None,
        agent: str = "",
        agent_version: str = "",
        recorded_id: str = "",
    ) -> Session:
        """``parent_session_id`` and ``agent_id`` link an imported subagent to its parent;
        ``source`` names the recording a watched session follows; ``params`` are the numbers
        its strategy plans with (``engine.settings.params.strategy_params``; None stores none, and
        the session plans with the settings of whichever process opens it); ``origin`` the user
        and machine it comes from (``engine.settings.config.session_origin``; None: not stored).

        ``workspace_given``: the user gave ``workspace`` (``Session.workspace_given``); by
        default, unless the session is recorded by another agent (``provider="import"``).
        ``agent`` and ``agent_version``: the agent a recorded session comes from
        (``Session.agent``); ``recorded_id`` that agent's own id of the session."""
        if workspace_given is None:
            workspace_given = provider != "import"
        now = utcnow()
        # One prepared INSERT (:meth:`_insert_row`), then the row read back as every read
        # of a session reads it: peewee's Model.create took longer (issue 44: an import
        # makes a session per recording).
        new_id = self._insert_row(
            SessionRow,
            dict(
                title=title,
                workspace=workspace,
                provider=provider,
                model=model,
                strategy=strategy,
                created_at=now,
                updated_at=now,
                parent_session_id=parent_session_id,
                agent_id=agent_id,
                source=source,
                params=_dumped(params),
                origin_user=origin[0] if origin else None,
                origin_machine=origin[1] if origin else None,
                workspace_given=workspace_given,
                recorded_agent=agent or None,
                recorded_agent_version=agent_version or None,
                recorded_id=recorded_id or None,
            ),
        )
        return session_model(self.session_row(new_id))

    @reads
    def get_session(self, session_id: int) -> Session:
        return session_model(self.session_row(session_id))

    def session_row(self, session_id: int) -> Any:
        """The session's row (plain SQL: every round and every write asks for it)."""
        row = _SESSION.first(self.db, (session_id,))
        if row is None:
            raise SessionNotFound(f"no session {session_id} in {self.where}")
        return row

    @reads
    def recorded_as(self, recorded_id: str) -> list[int]:
        """The sessions imported from a recording whose agent named it ``recorded_id``
        (its own session id), oldest first; the forks of them are not."""
        q = SessionRow.select(SessionRow.id).where(SessionRow.recorded_id == recorded_id)
        return [r.id for r in q.order_by(SessionRow.id)]

    @reads
    def session_for_source(self, source: str) -> Session | None:
        """The session that follows the recording ``source`` (``ctxscope watch``), if any."""
        row = _BY_SOURCE.first(self.db, (source,))  # plain SQL: an import asks per file
        return None if row is None else session_model(row)

    @reads
    def sources(self) -> dict[int, str]:
        """Every session's ``source`` (a recording's file digest or path and session id, a
        fork's origin), by id, oldest first; sessions without one are left out."""
        q = SessionRow.select(SessionRow.id, SessionRow.source).where(
            SessionRow.source.is_null(False)
        )
        return {r.id: str(r.source) for r in q.order_by(SessionRow.id)}

    @reads
    def latest_session(self) -> Session | None:
        row = SessionRow.select().order_by(SessionRow.updated_at.desc()).first()
        return None if row is None else session_model(row)

    @writes
    def update_session(self, session_id: int, **fields: Any) -> Session:
        """Change title, provider, model, strategy, workspace, source or the recorded agent's
        version; bumps ``updated_at``.

        A ``workspace`` given here is the user's (``workspace_given`` becomes true)."""
        allowed = {"title", "provider", "model", "strategy", "workspace", "source", "agent_version"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update session fields {sorted(unknown)}")
        self.get_session(session_id)
        if "workspace" in fields:
            fields["workspace_given"] = True
        if "agent_version" in fields:
            fields["recorded_agent_version"] = fields.pop("agent_version") or None
        SessionRow.update(updated_at=utcnow(), **fields).where(
            SessionRow.id == session_id
        ).execute()
        self.access._figures_changed(session_id)
        return self.get_session(session_id)

    @reads
    def history_tokens(self, session_id: int) -> int:
        """Tokens of a session's history as stored: its live messages and active summaries
        (the ``current_tokens`` :meth:`list_sessions` gives), summed in the database."""
        live = (
            MessageRow.select(fn.SUM(fn.COALESCE(MessageRow.tokens, 0)))
            .where((MessageRow.session == session_id) & MessageRow.segment.is_null())
            .scalar()
        )
        summaries = (
            SummaryRow.select(fn.SUM(fn.COALESCE(SummaryRow.tokens, 0)))
            .where((SummaryRow.session == session_id) & (SummaryRow.active == True))  # noqa: E712
            .scalar()
        )
        return int(live or 0) + int(summaries or 0)

    @reads
    def list_sessions(self) -> list[SessionInfo]:
        """Every session, most recently updated first, with its figures."""
        rounds = (
            RoundRow.select(
                RoundRow.session,
                fn.COUNT(RoundRow.id).alias("n"),
                fn.MIN(RoundRow.started_at).alias("first"),
                fn.MAX(fn.COALESCE(RoundRow.finished_at, RoundRow.started_at)).alias("last"),
            )
            .group_by(RoundRow.session)
            .dicts()
        )
        n_rounds, times = {}, {}
        for r in row_dicts(rounds):
            n_rounds[r["session"]] = r["n"]
            times[r["session"]] = (_round_time(r["first"]), _round_time(r["last"]))
        msgs = (
            MessageRow.select(
                MessageRow.session,
                fn.COUNT(MessageRow.id).alias("n"),
                fn.SUM(
                    Case(
                        None,
                        ((MessageRow.segment.is_null(), fn.COALESCE(MessageRow.tokens, 0)),),
                        0,
                    )
                ).alias("live"),
            )
            .group_by(MessageRow.session)
            .dicts()
        )
        n_msgs = {r["session"]: (r["n"], r["live"] or 0) for r in row_dicts(msgs)}
        summ = (
            SummaryRow.select(
                SummaryRow.session, fn.SUM(fn.COALESCE(SummaryRow.tokens, 0)).alias("t")
            )
            .where(SummaryRow.active == True)  # noqa: E712 - peewee expression
            .group_by(SummaryRow.session)
            .dicts()
        )
        summary_tokens = {r["session"]: r["t"] or 0 for r in row_dicts(summ)}
        comps = (
            CompactionRow.select(CompactionRow.session, fn.COUNT(CompactionRow.id).alias("n"))
            .where(
                CompactionRow.outcome.in_(["success", "fallback"])
                & CompactionRow.undone_at.is_null()
            )
            .group_by(CompactionRow.session)
            .dicts()
        )
        n_comps = {r["session"]: r["n"] for r in row_dicts(comps)}
        out = []
        for row in SessionRow.select().order_by(SessionRow.updated_at.desc(), SessionRow.id.desc()):
            count, live = n_msgs.get(row.id, (0, 0))
            out.append(
                SessionInfo(
                    session=session_model(row),
                    rounds=n_rounds.get(row.id, 0),
                    messages=count,
                    current_tokens=live + summary_tokens.get(row.id, 0),
                    compactions=n_comps.get(row.id, 0),
                    started_at=times.get(row.id, (None, None))[0],
                    last_at=times.get(row.id, (None, None))[1],
                )
            )
        return out

    @writes
    def delete_session(self, session_id: int) -> None:
        """Delete a session and everything stored for it: rounds, messages (archived ones
        too), summaries, archived segments, compactions, observations, usage records and
        strategy switches, in one transaction. Raises ``SessionNotFound`` for an unknown id,
        and ``SessionBusy`` while a live process holds its lease (checked inside the write
        transaction, so no writer can take the lease between the check and the delete)."""
        self.get_session(session_id)
        holder = self.lease_holder(session_id)
        if holder is not None and self._alive(session_id, holder, LEASE_STALE_AFTER):
            raise SessionBusy(
                f"session {session_id} is being written by {holder.describe()}; it was not deleted"
            )
        with self.together():
            self._delete_content(session_id)
            SessionRow.delete().where(SessionRow.id == session_id).execute()

    @writes
    def clear_session(self, session_id: int) -> None:
        """Delete everything stored for a session but the session itself (a watched
        recording whose earlier part changed is stored again into the same session)."""
        self.get_session(session_id)
        with self.together():
            self._delete_content(session_id)

    @writes
    def drop_rounds(self, session_id: int, first_round: int) -> None:
        """Delete rounds ``first_round`` (1-based) and later, none of them archived, with
        their messages, observations and usage records (a watched recording's open round is
        stored again as it grows)."""
        with self.together():
            rounds = RoundRow.select(RoundRow.id).where(
                (RoundRow.session == session_id) & (RoundRow.number >= first_round)
            )
            for table in (ObservationRow, UsageRow):
                table.delete().where(
                    (table.session == session_id) & (table.round_index >= first_round)
                ).execute()
            MessageRow.delete().where(MessageRow.round.in_(rounds)).execute()
            RoundRow.delete().where(
                (RoundRow.session == session_id) & (RoundRow.number >= first_round)
            ).execute()
            self.access._figures_changed(session_id)

    def _delete_content(self, session_id: int) -> None:
        # Children before parents: some links are RESTRICT (a segment's summary, an
        # archived message's segment), so a plain cascade from the session would refuse.
        for table in (ObservationRow, UsageRow, StrategySwitchRow, MessageRow):
            table.delete().where(table.session == session_id).execute()
        compactions = CompactionRow.select(CompactionRow.id).where(
            CompactionRow.session == session_id
        )
        SegmentRow.delete().where(SegmentRow.compaction.in_(compactions)).execute()
        for parent in (CompactionRow, SummaryRow, RoundRow):
            parent.delete().where(parent.session == session_id).execute()
        self.access._figures_changed(session_id)

    @writes
    def switch_strategy(
        self, session_id: int, strategy: str, params: StrategyParams | None = None
    ) -> Session:
        """Make ``strategy``, planning with ``params``, the session's, and record the switch
        with the numbers before and after; a no-op when neither changes. ``params`` None
        stores none (the session then plans with the settings of the process that opens it)."""
        session = self.get_session(session_id)
        if session.strategy == strategy and session.params == params:
            return session
        with self.together():
            self.access._figures_changed(session_id)
            StrategySwitchRow.create(
                session=session_id,
                previous=session.strategy,
                strategy=strategy,
                created_at=utcnow(),
                previous_params=_dumped(session.params),
                params=_dumped(params),
            )
            SessionRow.update(strategy=strategy, params=_dumped(params), updated_at=utcnow()).where(
                SessionRow.id == session_id
            ).execute()
        return self.get_session(session_id)

    @reads
    def strategy_switches(self, session_id: int) -> list[StrategySwitch]:
        """The session's recorded switches, oldest first, with the numbers before and after."""
        q = (
            StrategySwitchRow.select()
            .where(StrategySwitchRow.session == session_id)
            .order_by(StrategySwitchRow.id)
        )
        return [
            StrategySwitch(
                previous=r.previous,
                strategy=r.strategy,
                created_at=r.created_at,
                previous_params=params_model(r.previous_params, StrategySwitchRow.previous_params),
                params=params_model(r.params, StrategySwitchRow.params),
            )
            for r in q
        ]

    # ------------------------------------------------------------------ token counts
    @reads
    def token_counts(self, digests: Collection[str] | None = None) -> dict[str, int]:
        """Remembered counts of the texts every request repeats, by digest
        (:func:`engine.messages.tokens.remember`); only those of ``digests`` when given (an
        import asks about its own texts at each session, not the whole table)."""
        # Plain SQL: an import asks twice a session, and peewee took ten times SQLite's time
        # to write the query (issue 44).
        table = TokenCountRow._meta.table_name
        if digests is None:
            rows = dialect.sql(self.db, f'SELECT "digest", "tokens" FROM "{table}"')
            return {str(digest): int(tokens) for digest, tokens in rows.fetchall()}
        found: dict[str, int] = {}
        wanted = list(digests)
        # slices, not peewee's chunked (which pads each batch to 500 and searches it again)
        for batch in (wanted[i : i + 500] for i in range(0, len(wanted), 500)):
            marks = ", ".join("?" for _ in batch)
            rows = dialect.sql(
                self.db,
                f'SELECT "digest", "tokens" FROM "{table}" WHERE "digest" IN ({marks})',
                batch,
            )
            found.update({str(digest): int(tokens) for digest, tokens in rows.fetchall()})
        return found

    @writes
    def remember_token_counts(self, counts: dict[str, int]) -> None:
        """Keep new counts for later runs; a digest already known is left as it is."""
        table = TokenCountRow._meta.table_name
        dialect.execute_many(
            self.db,
            f'INSERT INTO "{table}" ("digest", "tokens") VALUES (?, ?) '
            'ON CONFLICT ("digest") DO NOTHING',
            list(counts.items()),
        )

    # ------------------------------------------------------------------ todos
    @reads
    def get_todos(self, session_id: int) -> list[TodoItem]:
        return [TodoItem.model_validate(t) for t in self.session_row(session_id).todos or []]

    @writes
    def set_todos(self, session_id: int, todos: Iterable[TodoItem]) -> None:
        SessionRow.update(todos=[t.model_dump() for t in todos], updated_at=utcnow()).where(
            SessionRow.id == session_id
        ).execute()


_SESSION = Select(SessionRow, "{id} = ?")
_BY_SOURCE = Select(SessionRow, "{source} = ?", order="{id}", limit=1)


def _dumped(params: StrategyParams | None) -> dict[str, Any] | None:
    return None if params is None else params.model_dump(mode="json")


def _holder(r: Any) -> Holder:
    return Holder(
        owner=r.owner,
        host=r.host,
        pid=r.pid,
        started=r.started,
        purpose=r.purpose,
        acquired_at=r.acquired_at,
        heartbeat_at=r.heartbeat_at,
    )


class Lease:
    """A held writer lease; :meth:`release` it (or use it as a context manager)."""

    def __init__(
        self,
        store: SessionStore,
        session_id: int,
        owner: str,
        took_over: Holder | None,
        beat: float,
        lock: Any = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.owner = owner
        self.took_over = took_over
        """The dead holder this lease replaced, if any (its round may need recovery)."""
        self._heartbeat = Heartbeat(lambda: store._beat(owner), self._disconnect, beat)
        self._lock = lock
        """On PostgreSQL, the connection holding the session's lease lock."""

    def _disconnect(self) -> None:
        """The heartbeat thread's own connection (peewee keeps one per thread) is closed."""
        self.store.db.close()

    def start(self) -> None:
        self._heartbeat.start()

    def release(self) -> None:
        """Stop the heartbeat and free the session for the next writer."""
        self._heartbeat.stop()
        try:
            self.store._release(self.owner)
        finally:
            if self._lock is not None:
                postgres.release_session_lock(self._lock)
                self._lock = None

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _round_time(value: Any) -> datetime | None:
    """A round time an aggregate returned: converted by its field already, or the stored text."""
    if value is None or isinstance(value, datetime):
        return value
    converted: datetime | None = RoundRow.started_at.python_value(value)
    return converted
