"""A whole history: the files ``ctxscope import`` (without a path) read, so that a later run
skips the unchanged ones, and the figures across every session that ``ctxscope report`` sums.

Every query is a peewee query (no SQLite-only SQL), grouped in the database, so a report over
thousands of sessions reads a few rows per session, not every record.
"""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from peewee import JOIN, SQL, Case, fn

from engine.models import utcnow
from engine.store import dialect, staged
from engine.store.access import reads, writes
from engine.store.models import (
    CompactionRow,
    ImportedFileRow,
    MessageRow,
    ObservationRow,
    RoundRow,
    SessionRow,
    UsageRow,
)
from engine.store.part import StorePart
from engine.store.rows import Select, insert_statement, row_dicts

LONG_REQUEST = 200_000
"""Input tokens above which a request is priced at a long-context tier where the price data
has one (Anthropic's and Gemini 2.5 Pro's): usage is summed on each side of it."""


@dataclass(frozen=True)
class ImportedFile:
    """A file as the last import saw it, and the sessions it became."""

    path: str
    size: int
    mtime_ns: int
    head: str
    """A hash of its first bytes."""
    companions: str = ""
    """The files read with it (Claude Code's subagents), by name, size and time."""
    fmt: str = ""
    sessions: tuple[int, ...] = ()
    refused: str | None = None


@dataclass
class UsageGroup:
    """The usage records of one session on one day, on one side of :data:`LONG_REQUEST`."""

    session_id: int
    day: str
    """``YYYY-MM-DD`` as recorded."""
    long: bool
    requests: int
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    cache_creation_1h_input_tokens: int
    model: str = ""
    """The model that answered these requests ("" when the records do not say: the
    session's)."""


@dataclass
class SessionFacts:
    """What the report needs of a session beyond its usage."""

    id: int
    title: str
    workspace: str
    model: str
    parent_session_id: int | None
    agent_id: str | None
    started_at: datetime | None
    """Its first round's start (a recording's own time, not the import's)."""
    provider: str = ""


@dataclass
class CompactionFacts:
    id: int
    session_id: int
    trigger: str
    tokens_before: int
    tokens_after: int
    created_at: datetime
    stats: dict[str, Any] = field(default_factory=dict)
    fidelity: dict[str, Any] | None = None


@dataclass
class ToolFacts:
    """One session's results of one tool, and the context they take (``report``)."""

    session_id: int
    tool: str
    results: int
    tokens_recorded: int
    """Their messages' tokens as recorded: each result's tool message when it was stored."""
    tokens_kept: int
    """The same messages as history holds them now, after the compactions still in force: an
    archived one counts 0, one in history its tokens as stored. Never over
    ``tokens_recorded``, so the arrow between them is what the compactions freed."""


def _time(value: Any) -> datetime | None:
    """A time an aggregate returned: converted by its field already, or the stored text."""
    if value is None or isinstance(value, datetime):
        return value
    converted: datetime | None = RoundRow.started_at.python_value(value)
    return converted


def _imported_file(r: dict[str, Any]) -> ImportedFile:
    return ImportedFile(
        path=r["path"],
        size=r["size"],
        mtime_ns=r["mtime_ns"],
        head=r["head"],
        companions=r["companions"],
        fmt=r["fmt"],
        sessions=tuple(r["sessions"] or ()),
        refused=r["refused"],
    )


@functools.cache
def _files_by_path(marks: str) -> Select:
    return Select(ImportedFileRow, f"{{path}} IN ({marks})")


class HistoryStore(StorePart):
    """The imported files' bookkeeping and the report's grouped reads."""

    # ------------------------------------------------------------------ imported files
    @reads
    def imported_files(self) -> dict[str, ImportedFile]:
        """Every file an import read, by path."""
        return {r["path"]: _imported_file(r) for r in row_dicts(ImportedFileRow.select().dicts())}

    @reads
    def imported_file(self, *paths: str) -> ImportedFile | None:
        """What an import remembered of the first of ``paths`` (names of one file) it knows."""
        # plain SQL: the history import asks for every file it stores (issue 44)
        marks = ", ".join("?" for _ in paths)
        found = _files_by_path(marks).all(self.db, paths)
        rows = {r.path: r._asdict() for r in found}
        return next((_imported_file(rows[p]) for p in paths if p in rows), None)

    @writes
    def remember_file(self, file: ImportedFile) -> None:
        """Record what ``file`` is now (replacing what was recorded of its path)."""
        values = {
            "size": file.size,
            "mtime_ns": file.mtime_ns,
            "head": file.head,
            "companions": file.companions,
            "fmt": file.fmt,
            "sessions": list(file.sessions),
            "refused": file.refused,
            "imported_at": utcnow(),
        }
        # plain SQL: the history import remembers every file it stores (issue 44)
        fields = ImportedFileRow._meta.fields
        table = ImportedFileRow._meta.table_name
        sets = ", ".join(f'"{fields[name].column_name}" = ?' for name in values)
        params = [fields[name].db_value(value) for name, value in values.items()]
        with self.together():
            done = dialect.sql(
                self.db, f'UPDATE "{table}" SET {sets} WHERE "path" = ?', [*params, file.path]
            ).rowcount
            if not done:
                row = {"path": file.path, **values}
                statement, to_params = insert_statement(ImportedFileRow, row)
                dialect.sql(self.db, statement, to_params(row))

    def staged_file(self, scratch: Path) -> AbstractContextManager[list[str]]:
        """A scratch database a history import's worker wrote a file's sessions into,
        attached to this one until the block ends (:mod:`engine.store.staged`; SQLite only;
        outside a transaction)."""
        return self.staged_files([scratch])

    def staged_files(self, scratches: list[Path]) -> AbstractContextManager[list[str]]:
        """Several scratch databases (at most :data:`~engine.store.staged.MOST_ATTACHED`)
        attached at once until the block ends, so that one transaction copies them all;
        the block gets the name of each, for :meth:`copy_staged`."""
        self.bind()
        return staged.attached(self.db, scratches)

    @writes
    def plain_index(self) -> None:
        """Make this scratch database's search index a plain table, without the indexes
        only reads use (a history import's worker writes into it;
        :func:`engine.store.staged.plain_index`)."""
        staged.plain_index(self.db)

    @writes
    def copy_staged(self, schema: str = staged.SCHEMA) -> dict[str, int]:
        """Every row of the scratch database attached as ``schema`` copied here, ids
        shifted past this database's; the shift of each table's ids, by table name."""
        return staged.copy_staged(self.db, schema)

    @reads
    def sessions_source_gone(self) -> set[int]:
        """The sessions marked as imported from a file that is gone."""
        q = SessionRow.select(SessionRow.id).where(SessionRow.source_gone_at.is_null(False))
        return {r.id for r in q}

    @writes
    def mark_source_gone(self, session_ids: list[int], gone: bool = True) -> list[int]:
        """Mark the sessions whose imported file is gone (with ``gone`` False: found again);
        the sessions themselves stay as they are. The ids whose mark changed."""
        if not session_ids:
            return []
        changing = SessionRow.source_gone_at.is_null(gone)
        q = SessionRow.select(SessionRow.id).where(SessionRow.id.in_(session_ids) & changing)
        ids = [r.id for r in q]
        if ids:
            when = utcnow() if gone else None
            SessionRow.update(source_gone_at=when).where(SessionRow.id.in_(ids)).execute()
        return ids

    @reads
    def child_sessions(self, session_id: int) -> list[int]:
        """The sessions linked to ``session_id`` as its subagents."""
        q = SessionRow.select(SessionRow.id).where(SessionRow.parent_session_id == session_id)
        return [r.id for r in q.order_by(SessionRow.id)]

    # ------------------------------------------------------------------ the report's reads
    @reads
    def sessions_with_usage(self, since: datetime) -> list[int]:
        """The sessions with a usage record from ``since`` on, billed or not (ctxscope's own
        offline sessions count their calls locally)."""
        q = UsageRow.select(UsageRow.session).where(UsageRow.created_at >= since).distinct()
        return sorted(r.session_id for r in q)

    @reads
    def usage_groups(
        self, since: datetime | None = None, session: int | None = None
    ) -> list[UsageGroup]:
        """Billed usage summed per session, recorded day, side of :data:`LONG_REQUEST` and the
        model that answered, in that order: the calls an API billed (never the offline
        provider's ``local`` counts, nor a record of all zeros, which measured nothing); one
        session's with ``session``."""
        # text, not a time: SQLite stores the text; PostgreSQL's timestamp as text starts alike
        day = fn.SUBSTR(UsageRow.created_at.cast("TEXT"), 1, 10).coerce(False)
        sent = (
            UsageRow.input_tokens
            + UsageRow.cache_read_input_tokens
            + UsageRow.cache_creation_input_tokens
        )
        long = sent > LONG_REQUEST
        q = UsageRow.select(
            UsageRow.session.alias("session_id"),
            day.alias("day"),
            long.alias("long"),
            UsageRow.model.alias("model"),
            fn.COUNT(UsageRow.id).alias("requests"),
            fn.SUM(UsageRow.input_tokens).alias("input_tokens"),
            fn.SUM(UsageRow.output_tokens).alias("output_tokens"),
            fn.SUM(UsageRow.cache_read_input_tokens).alias("cache_read_input_tokens"),
            fn.SUM(UsageRow.cache_creation_input_tokens).alias("cache_creation_input_tokens"),
            fn.SUM(UsageRow.cache_creation_1h_input_tokens).alias("cache_creation_1h_input_tokens"),
        ).where(
            (UsageRow.source != "local")
            & (sent + UsageRow.output_tokens > 0)
            & ~UsageRow.copied  # a fork's copies are counted with their original
        )
        if since is not None:
            q = q.where(UsageRow.created_at >= since)
        if session is not None:
            q = q.where(UsageRow.session == session)
        # by position: PostgreSQL does not take two expressions with their own parameters
        # (``SUBSTR(…, ?, ?)``, ``… > ?``) for one, so it would refuse grouping by them
        q = q.group_by(SQL("1"), SQL("2"), SQL("3"), SQL("4")).order_by(
            SQL("1"), SQL("2"), SQL("3"), SQL("4")
        )
        return [
            UsageGroup(
                session_id=r["session_id"],
                day=r["day"],
                long=bool(r["long"]),
                requests=int(r["requests"]),
                input_tokens=int(r["input_tokens"] or 0),
                output_tokens=int(r["output_tokens"] or 0),
                cache_read_input_tokens=int(r["cache_read_input_tokens"] or 0),
                cache_creation_input_tokens=int(r["cache_creation_input_tokens"] or 0),
                cache_creation_1h_input_tokens=int(r["cache_creation_1h_input_tokens"] or 0),
                model=str(r["model"] or ""),
            )
            for r in row_dicts(q.dicts())
        ]

    @reads
    def session_facts(self) -> dict[int, SessionFacts]:
        """Every session's title, project, model, parent and recorded start."""
        starts = {
            r["session"]: r["start"]
            for r in row_dicts(
                RoundRow.select(RoundRow.session, fn.MIN(RoundRow.started_at).alias("start"))
                .group_by(RoundRow.session)
                .dicts()
            )
        }
        out = {}
        for r in row_dicts(
            SessionRow.select(
                SessionRow.id,
                SessionRow.title,
                SessionRow.workspace,
                SessionRow.model,
                SessionRow.parent_session_id,
                SessionRow.agent_id,
                SessionRow.provider,
            ).dicts()
        ):
            start = starts.get(r["id"])
            out[r["id"]] = SessionFacts(
                id=r["id"],
                title=r["title"],
                workspace=r["workspace"],
                model=r["model"],
                parent_session_id=r["parent_session_id"],
                agent_id=r["agent_id"],
                started_at=_time(start),
                provider=r["provider"],
            )
        return out

    @reads
    def all_compactions(self, since: datetime | None = None) -> list[CompactionFacts]:
        """Every compaction that took effect (not undone), oldest first."""
        q = CompactionRow.select(
            CompactionRow.id,
            CompactionRow.session,
            CompactionRow.trigger,
            CompactionRow.tokens_before,
            CompactionRow.tokens_after,
            CompactionRow.created_at,
            CompactionRow.stats,
            CompactionRow.fidelity,
        ).where(
            CompactionRow.outcome.in_(["success", "fallback"])
            & CompactionRow.undone_at.is_null()
            & ~CompactionRow.copied  # a fork's copy is its original's compaction
        )
        if since is not None:
            q = q.where(CompactionRow.created_at >= since)
        return [
            CompactionFacts(
                id=r.id,
                session_id=r.session_id,
                trigger=r.trigger,
                tokens_before=r.tokens_before,
                tokens_after=r.tokens_after,
                created_at=r.created_at,
                stats=r.stats or {},
                fidelity=r.fidelity,
            )
            for r in q.order_by(CompactionRow.created_at, CompactionRow.id)
        ]

    @reads
    def tool_result_sizes(self) -> list[ToolFacts]:
        """Per session and tool: how many results, the tokens their messages took as recorded
        and as history keeps them now (:class:`ToolFacts`). The two figures count the same
        messages in the same form (issue 39: the tool's raw text against the history's JSON
        envelope made "in full → kept" grow for Read, 65,871 → 73,192)."""
        live = MessageRow.id.is_null(False) & MessageRow.segment.is_null()
        q = (
            ObservationRow.select(
                ObservationRow.session.alias("session_id"),
                ObservationRow.tool_name,
                fn.COUNT(ObservationRow.id).alias("n"),
                fn.SUM(ObservationRow.tokens_compressed).alias("recorded"),
                fn.SUM(Case(None, [(live, fn.COALESCE(MessageRow.tokens, 0))], 0)).alias("kept"),
            )
            .join(MessageRow, JOIN.LEFT_OUTER, on=ObservationRow.message == MessageRow.id)
            .where(~ObservationRow.copied)
            .group_by(ObservationRow.session, ObservationRow.tool_name)
        )
        return [
            ToolFacts(
                session_id=r["session_id"],
                tool=r["tool_name"],
                results=int(r["n"]),
                tokens_recorded=int(r["recorded"] or 0),
                tokens_kept=int(r["kept"] or 0),
            )
            for r in row_dicts(q.dicts())
        ]
