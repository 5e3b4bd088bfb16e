"""Opening a database file safely: recognise ours, refuse foreign or corrupt files, migrate.

A ctxscope database carries ``PRAGMA application_id`` = :data:`APPLICATION_ID` and its schema
version in ``PRAGMA user_version``. A file is inspected read-only before it is opened for
writing, so a file we refuse is never modified (not even switched to WAL).

Its integrity (``PRAGMA quick_check``, which reads every page: 0.65 s for 490 MB) is checked
where damage can have come from, not at every open (issue 44): after a crash (:func:`crashed`:
a write-ahead log left behind by a process that did not close the file), before a migration,
and on request (``ctxscope check``: :func:`check`).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from peewee import Database, SqliteDatabase

from engine.store import dialect, locks, postgres
from engine.store.errors import StoreError

if TYPE_CHECKING:
    # Imported by the steps that use it: playhouse.migrate imports playhouse.cockroachdb, which
    # imports psycopg (0.1 s) to offer PostgreSQL's field types; opening a database pays it only
    # when it migrates.
    from playhouse.migrate import SchemaMigrator

APPLICATION_ID = 0x63747873  # "ctxs"
SCHEMA_VERSION = 25


# Migrations from version N to N+1, applied in order inside one transaction each.
# Add an entry here (and bump SCHEMA_VERSION) when a table changes, e.g. with playhouse.migrate.
def _compaction_policies(db: SqliteDatabase) -> None:
    """1 -> 2: summaries carry their placement, strategy and whether they are still active;
    compactions their placement and the strategy's own figures; strategy switches are kept."""
    from playhouse.migrate import SqliteMigrator, migrate

    from engine.store.models import CompactionRow, StrategySwitchRow, SummaryRow

    migrator = SqliteMigrator(db)
    summaries, compactions = SummaryRow._meta.table_name, CompactionRow._meta.table_name
    migrate(
        migrator.add_column(summaries, "placement", SummaryRow.placement),
        migrator.add_column(summaries, "strategy", SummaryRow.strategy),
        migrator.add_column(summaries, "active", SummaryRow.active),
        migrator.add_column(compactions, "placement", CompactionRow.placement),
        migrator.add_column(compactions, "stats", CompactionRow.stats),
    )
    db.create_tables([StrategySwitchRow])


def _pins_and_undo(db: SqliteDatabase) -> None:
    """2 -> 3: messages can be pinned; a compaction records when it was undone."""
    from playhouse.migrate import SqliteMigrator, migrate

    from engine.store.models import CompactionRow, MessageRow

    migrator = SqliteMigrator(db)
    migrate(
        migrator.add_column(MessageRow._meta.table_name, "pinned", MessageRow.pinned),
        migrator.add_column(CompactionRow._meta.table_name, "undone_at", CompactionRow.undone_at),
    )


def _compaction_fidelity(db: SqliteDatabase) -> None:
    """3 -> 4: a compaction records how much of its segment's ledger the summary kept."""
    from playhouse.migrate import SqliteMigrator, migrate

    from engine.store.models import CompactionRow

    migrator = SqliteMigrator(db)
    migrate(migrator.add_column(CompactionRow._meta.table_name, "fidelity", CompactionRow.fidelity))


def _archive_search(db: SqliteDatabase) -> None:
    """4 -> 5: the full-text index of archived segments (Recall), built for existing ones."""
    from engine.store import search

    search.create(db)
    live = sql(
        db,
        "SELECT s.id FROM segment_row s JOIN compaction_row c ON c.id = s.compaction_id "
        "WHERE c.undone_at IS NULL",
    ).fetchall()
    for (segment_id,) in live:
        search.index_segment(db, segment_id)


def _proxied_requests(db: Database) -> None:
    """11 -> 12: the requests ``ctxscope proxy`` recorded and the pieces they share."""
    from engine.store.models import ExchangeBlobRow, ExchangeRow

    db.create_tables([ExchangeBlobRow, ExchangeRow])


def sql(db: Database, query: str, params: tuple[object, ...] = ()) -> Any:
    """Run raw SQL (migrations, pragmas) on ``db``'s connection for this thread; ``?``
    placeholders on either database (:func:`engine.store.dialect.sql`)."""
    return dialect.sql(db, query, params)


def migrator(db: Database) -> SchemaMigrator:
    """The ``playhouse.migrate`` migrator for ``db``'s dialect: a migration written with it
    runs on SQLite and on PostgreSQL alike (schema 11 and older ran on SQLite only; a
    PostgreSQL database starts at the version of the ctxscope that created it)."""
    from playhouse.migrate import SchemaMigrator

    return SchemaMigrator.from_database(db)


TIMESTAMP_COLUMNS = {
    "session_row": ("created_at", "updated_at"),
    "round_row": ("started_at", "finished_at"),
    "summary_row": ("start_time", "cutoff_time", "created_at"),
    "compaction_row": ("created_at", "undone_at"),
    "message_row": ("created_at",),
    "usage_row": ("created_at",),
    "strategy_switch_row": ("created_at",),
}
"""Every timestamp column of schema 5 (stored as ISO 8601 text)."""


def _aware_timestamps(db: SqliteDatabase) -> None:
    """5 -> 6: rewrite naive timestamps (an import could store them) as UTC.

    A naive and an aware time cannot be compared, so one naive row made every later
    ``ask``, ``context`` and ``compact`` of its session fail with a ``TypeError``.
    """
    for table, columns in TIMESTAMP_COLUMNS.items():
        for column in columns:
            rows = sql(
                db, f'SELECT id, "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL'
            ).fetchall()
            for row_id, text in rows:
                try:
                    value = datetime.fromisoformat(text)
                except ValueError:
                    continue  # not a time at all: leave it for the reader to report
                if value.tzinfo is None:
                    sql(
                        db,
                        f'UPDATE "{table}" SET "{column}" = ? WHERE id = ?',
                        (value.replace(tzinfo=UTC).isoformat(), row_id),
                    )


def _writer_lease(db: SqliteDatabase) -> None:
    """6 -> 7: the lease table (one writer per session)."""
    from engine.store.models import LeaseRow

    db.create_tables([LeaseRow])


def _token_counts(db: SqliteDatabase) -> None:
    """7 -> 8: remembered token counts of the texts every request repeats."""
    from engine.store.models import TokenCountRow

    db.create_tables([TokenCountRow])


def _subagents_and_cache_lifetimes(db: SqliteDatabase) -> None:
    """8 -> 9: an imported subagent's session names its parent and agent id; a usage record
    keeps the part of its cache writes made with the 1-hour lifetime."""
    from playhouse.migrate import SqliteMigrator, migrate

    from engine.store.models import SessionRow, UsageRow

    migrator = SqliteMigrator(db)
    wanted = [
        (SessionRow, "parent_session_id", SessionRow.parent_session_id),
        (SessionRow, "agent_id", SessionRow.agent_id),
        (UsageRow, "cache_creation_1h_input_tokens", UsageRow.cache_creation_1h_input_tokens),
    ]
    steps = []
    for row, name, column in wanted:
        table = row._meta.table_name
        present = {c.name for c in db.get_columns(table)}
        if name not in present:  # a file made by this version and marked older has them
            steps.append(migrator.add_column(table, name, column))
    migrate(*steps)


def _watched_sources(db: SqliteDatabase) -> None:
    """9 -> 10: a session made by ``ctxscope watch`` names the recording it follows."""
    from playhouse.migrate import SqliteMigrator, migrate

    from engine.store.models import SessionRow

    table = SessionRow._meta.table_name
    if "source" not in {c.name for c in db.get_columns(table)}:
        migrate(SqliteMigrator(db).add_column(table, "source", SessionRow.source))


def _session_params(db: SqliteDatabase) -> None:
    """10 -> 11: a session stores the numbers its strategy plans with, a switch the numbers
    before and after. Before, every command planned with its own process' settings; an
    existing session is given the built-in defaults of its strategy (what a command without
    ``--config`` or ``CTXSCOPE_*`` used). Earlier switches keep NULL: their numbers were not
    recorded."""
    import json

    from playhouse.migrate import SqliteMigrator, migrate

    from engine.settings.config import Settings
    from engine.settings.params import ParamsError, strategy_params
    from engine.store.models import SessionRow, StrategySwitchRow

    migrator = SqliteMigrator(db)
    wanted = [
        (SessionRow, "params", SessionRow.params),
        (StrategySwitchRow, "previous_params", StrategySwitchRow.previous_params),
        (StrategySwitchRow, "params", StrategySwitchRow.params),
    ]
    steps = []
    for row, name, column in wanted:
        table = row._meta.table_name
        if name not in {c.name for c in db.get_columns(table)}:
            steps.append(migrator.add_column(table, name, column))
    migrate(*steps)
    defaults = Settings.model_construct()  # the built-in numbers: no file, no environment
    table = SessionRow._meta.table_name
    for session_id, strategy in sql(
        db, f'SELECT id, strategy FROM "{table}" WHERE params IS NULL'
    ).fetchall():
        try:
            params = strategy_params(defaults, strategy)
        except ParamsError:
            continue  # a strategy this ctxscope does not know: it plans with the settings
        sql(
            db,
            f'UPDATE "{table}" SET params = ? WHERE id = ?',
            (json.dumps(params.model_dump(mode="json")), session_id),
        )


def _given_workspaces(db: Database) -> None:
    """12 -> 13: a session recorded by another agent has no workspace until the user gives
    one (issue 29). The imported and watched sessions stored so far (provider ``import``) keep
    the folder their recording names, now as a folder shown, not used."""
    from playhouse.migrate import migrate

    from engine.store.models import SessionRow

    table = SessionRow._meta.table_name
    if "workspace_given" not in {c.name for c in db.get_columns(table)}:
        column = SessionRow.workspace_given
        migrate(migrator(db).add_column(table, "workspace_given", column))
    sql(db, f"UPDATE \"{table}\" SET workspace_given = (provider != 'import')")


def _imported_files(db: Database) -> None:
    """13 -> 14: the files ``ctxscope import`` without a path read, so a later run skips the
    unchanged ones."""
    from engine.store.models import ImportedFileRow

    db.create_tables([ImportedFileRow])


def _session_origin(db: Database) -> None:
    """14 -> 15: a session may record who made it and on which machine (``record_origin``);
    existing sessions did not. (A database made before main's steps were merged numbered this
    step 12, so it went on to 13 and 14 without 11 -> 12's tables: made here if missing.)"""
    from playhouse.migrate import migrate

    from engine.store.models import ExchangeBlobRow, ExchangeRow, SessionRow

    db.create_tables([ExchangeBlobRow, ExchangeRow])  # IF NOT EXISTS
    table = SessionRow._meta.table_name
    present = {c.name for c in db.get_columns(table)}
    migrate(
        *[
            migrator(db).add_column(table, name, getattr(SessionRow, name))
            for name in ("origin_user", "origin_machine")
            if name not in present
        ]
    )


def _recorded_agents(db: Database) -> None:
    """15 -> 16: a recorded session stores the agent it comes from and its version, so nothing
    guesses them again. The recorded sessions stored so far get them once, by the guess
    ctxscope made until now (``own_agent.recorded_format``, frozen here): the file a watched
    session follows (``rollout-`` or ``/.codex/``: Codex; ``/.claude/``: Claude Code), else its
    model (``claude*``: Claude Code; ``gpt-*``, ``o<digit>*``, ``codex*``: Codex); the version
    from what the first user message kept of the recording (``meta.origin.recorded``), where
    the reader named one."""
    from playhouse.migrate import migrate

    from engine.store.models import MessageRow, SessionRow

    table = SessionRow._meta.table_name
    present = {c.name for c in db.get_columns(table)}
    migrate(
        *[
            migrator(db).add_column(table, name, getattr(SessionRow, name))
            for name in ("recorded_agent", "recorded_agent_version")
            if name not in present
        ]
    )
    rows = sql(
        db, f'SELECT id, source, model FROM "{table}" WHERE provider = ?', ("import",)
    ).fetchall()
    messages = MessageRow._meta.table_name
    for sid, source, model in rows:
        agent = _old_guess(source or "", (model or "").lower())
        version = _recorded_version(db, messages, sid)
        sql(
            db,
            f'UPDATE "{table}" SET recorded_agent = ?, recorded_agent_version = ? WHERE id = ?',
            (agent or None, version or None, sid),
        )


def _old_guess(source: str, model: str) -> str:
    """The agent of a recorded session as ctxscope guessed it up to schema 15."""
    if "rollout-" in source or "/.codex/" in source:
        return "codex"
    if "/.claude/" in source:
        return "claude-code"
    if model.startswith("claude"):
        return "claude-code"
    if model.startswith(("gpt-", "codex")) or (model[:1] == "o" and model[1:2].isdigit()):
        return "codex"
    return ""


def _recorded_version(db: Database, messages: str, sid: int) -> str:
    """The agent's version a recorded session's first user message kept (``version``, or
    Codex's ``cli_version``)."""
    row = sql(
        db,
        f'SELECT meta FROM "{messages}" WHERE session_id = ? AND role = ? ORDER BY id LIMIT 1',
        (sid, "user"),
    ).fetchone()
    try:
        meta = json.loads(row[0]) if row and isinstance(row[0], str) else (row[0] if row else None)
    except ValueError:
        return ""
    origin = meta.get("origin") if isinstance(meta, dict) else None
    recorded = origin.get("recorded") if isinstance(origin, dict) else None
    if not isinstance(recorded, dict):
        return ""
    version = recorded.get("version") or recorded.get("cli_version")
    return version if isinstance(version, str) else ""


def _usage_model(db: Database) -> None:
    """16 -> 17: a usage record names the model that answered it (a session can use several:
    Haiku for side calls, Flash beside Pro); existing records name none and are priced at their
    session's model, as before."""
    from playhouse.migrate import migrate

    from engine.store.models import UsageRow

    table = UsageRow._meta.table_name
    if "model" not in {c.name for c in db.get_columns(table)}:
        migrate(migrator(db).add_column(table, "model", UsageRow.model))


def _source_gone(db: Database) -> None:
    """17 -> 18: a session imported from a file records when the file was found gone (Claude
    Code deletes transcripts after ``cleanupPeriodDays``); the session stays stored."""
    from playhouse.migrate import migrate

    from engine.store.models import SessionRow

    table = SessionRow._meta.table_name
    if "source_gone_at" not in {c.name for c in db.get_columns(table)}:
        migrate(migrator(db).add_column(table, "source_gone_at", SessionRow.source_gone_at))


def _steered_requests(db: Database) -> None:
    """18 -> 19: a proxied request may have been steered (``--steer``): its rewrites, stored
    beside the body the agent sent."""
    from playhouse.migrate import migrate

    from engine.store.models import ExchangeRow

    table = ExchangeRow._meta.table_name
    if "steering" not in {c.name for c in db.get_columns(table)}:
        migrate(migrator(db).add_column(table, "steering", ExchangeRow.steering))


def _fork_copies(db: Database) -> None:
    """19 -> 20: a fork's copies of its original's usage records, compactions and observations
    are marked, so the report counts them once, with the original (issue 39: two `uncompact`
    on a recording had billed it three times). The forks stored so far are marked by time:
    a copied row keeps its original's time, before the fork was made; the fork's own rows come
    after it."""
    from playhouse.migrate import migrate

    from engine.store.models import CompactionRow, ObservationRow, SessionRow, UsageRow

    sessions = SessionRow._meta.table_name
    for row in (UsageRow, CompactionRow, ObservationRow):
        table = row._meta.table_name
        if "copied" not in {c.name for c in db.get_columns(table)}:
            migrate(migrator(db).add_column(table, "copied", row.copied))
    forks = f"SELECT id FROM \"{sessions}\" WHERE source LIKE 'fork of #%'"
    made = f'(SELECT created_at FROM "{sessions}" s WHERE s.id = t.session_id)'
    for row in (UsageRow, CompactionRow):
        table = row._meta.table_name
        sql(
            db,
            f'UPDATE "{table}" AS t SET copied = TRUE '
            f"WHERE session_id IN ({forks}) AND created_at < {made}",
        )
    # an observation has no time of its own: the rounds up to the one the fork was made at
    # (its source, ``fork of #2 at round 6``) are the copied ones
    observations = ObservationRow._meta.table_name
    for fork_id, source in sql(db, forks.replace("SELECT id", "SELECT id, source")).fetchall():
        at = str(source).rpartition(" at round ")[2]
        if at.isdigit():
            sql(
                db,
                f'UPDATE "{observations}" SET copied = TRUE '
                "WHERE session_id = ? AND round_index <= ?",
                (fork_id, int(at)),
            )


def _stored_figures(db: Database) -> None:
    """20 -> 21: a session's figures (requests, tokens, cost, context, window) are stored, so
    a listing reads them instead of pricing every usage row again (issue 44). The table starts
    empty: each session's figures are made, and kept, the first time they are asked for."""
    from engine.store.models import FiguresRow

    db.create_tables([FiguresRow], safe=True)


def _proxied_agents(db: Database) -> None:
    """21 -> 22: a proxied session records the agent that sent it (issue 44: a proxied Claude
    Code session was measured by no agent's rule, so no trigger). The proxied sessions stored
    so far, with no agent, are Claude Code's when one of their requests named its beta
    (``claude-code-20250219`` in the stored ``anthropic-beta`` header, which every Claude Code
    sends); its version was never stored."""
    from engine.store.models import ExchangeRow, SessionRow

    sessions = SessionRow._meta.table_name
    exchanges = ExchangeRow._meta.table_name
    sql(
        db,
        f'UPDATE "{sessions}" SET recorded_agent = ? '
        "WHERE provider = ? AND recorded_agent IS NULL AND id IN ("
        f'SELECT session_id FROM "{exchanges}" WHERE headers LIKE ?)',
        ("claude-code", "proxy", "%claude-code-20250219%"),
    )
    # Their figures were made without the agent's rules (schema 21 stores them): made again.
    from engine.store.models import FiguresRow

    figures = FiguresRow._meta.table_name
    sql(
        db,
        f'DELETE FROM "{figures}" WHERE session_id IN '
        f'(SELECT id FROM "{sessions}" WHERE provider = ? AND recorded_agent = ?)',
        ("proxy", "claude-code"),
    )


def _recorded_ids(db: Database) -> None:
    """22 -> 23: an imported session stores its recording agent's own session id, so that
    ``ctxscope show ID`` and ``show FILE`` find a session imported with ``ctxscope import FILE``
    (issue 39). The sessions imported so far have none (the id was not kept): they are found
    as before, by their file's bytes or, from a history import, by their file's name."""
    from playhouse.migrate import migrate

    from engine.store.models import SessionRow

    table = SessionRow._meta.table_name
    if "recorded_id" not in {c.name for c in db.get_columns(table)}:
        migrate(migrator(db).add_column(table, "recorded_id", SessionRow.recorded_id))
    # an earlier step that rebuilt the table from the model made the index already
    if not any(i.columns == ["recorded_id"] for i in db.get_indexes(table)):
        migrate(migrator(db).add_index(table, ("recorded_id",)))


def _stored_losses(db: Database) -> None:
    """23 -> 24: what each session's compactions lost is stored once worked out (issue 44:
    ``report`` read every compaction's archive again at every run). The table starts empty."""
    from engine.store.models import LossesRow

    db.create_tables([LossesRow], safe=True)


def _rows_by_round(db: Database) -> None:
    """24 -> 25: a session's observations and usage records are indexed by session and round
    together, in place of by session alone (issue 44: ``watch`` deletes the open round of a
    session as it grows, and each delete read every row the session had; a query by session
    alone still uses the new index's first column)."""
    from engine.store.models import ObservationRow, UsageRow

    for table in (ObservationRow._meta.table_name, UsageRow._meta.table_name):
        sql(
            db,
            f'CREATE INDEX IF NOT EXISTS "{table}_session_id_round_index" '
            f'ON "{table}" (session_id, round_index)',
        )
        sql(db, f'DROP INDEX IF EXISTS "{table}_session_id"')


MIGRATIONS: dict[int, Callable[[SqliteDatabase], None]] = {
    1: _compaction_policies,
    2: _pins_and_undo,
    3: _compaction_fidelity,
    4: _archive_search,
    5: _aware_timestamps,
    6: _writer_lease,
    7: _token_counts,
    8: _subagents_and_cache_lifetimes,
    9: _watched_sources,
    10: _session_params,
    11: _proxied_requests,  # 11 and after: written for both databases
    12: _given_workspaces,
    13: _imported_files,
    14: _session_origin,
    15: _recorded_agents,
    16: _usage_model,
    17: _source_gone,
    18: _steered_requests,
    19: _fork_copies,
    20: _stored_figures,
    21: _proxied_agents,
    22: _recorded_ids,
    23: _stored_losses,
    24: _rows_by_round,
}


def read_only_reason(path: Path) -> str | None:
    """Why this process cannot write the database at ``path`` (a read-only mount, a file or a
    folder without write permission), or None when it can. WAL needs the folder writable too:
    the ``-wal`` and ``-shm`` files are created beside the database."""
    if not path.exists():
        return None
    if os.statvfs(path).f_flag & os.ST_RDONLY:
        return "it is on a read-only file system"
    if not os.access(path, os.W_OK):
        return "the file is not writable"
    if not os.access(path.parent, os.W_OK):
        return f"its folder {path.parent} is not writable"
    return None


def read_only_uri(path: Path) -> str:
    """An SQLite URI that opens ``path`` for reading without creating anything beside it.

    ``mode=ro`` alone still needs the ``-shm`` file of a WAL database, which a read-only folder
    cannot hold; without a ``-wal`` file there is nothing the ``-shm`` would index, so the file is
    opened ``immutable`` (SQLite then takes no locks and reads the file as it is).
    """
    uri = f"{path.resolve().as_uri()}?mode=ro"
    wal = path.with_name(path.name + "-wal")
    if read_only_reason(path) and not (wal.exists() and wal.stat().st_size):
        uri += "&immutable=1"
    return uri


def crashed(path: Path) -> bool:
    """Was the database at ``path`` left by a process that did not close it (killed, the
    machine stopped)? SQLite deletes the write-ahead log (``-wal``) when the last connection
    closes; one that holds frames while no process has the file open (no lock on it or its
    ``-shm``: :func:`engine.store.locks.held_by_anyone`) was left by a crash. Where the
    locks cannot be read (not Linux), a log holding frames counts as a crash."""
    wal = path.with_name(path.name + "-wal")
    try:
        if wal.stat().st_size == 0:
            return False
    except OSError:
        return False
    return locks.held_by_anyone(path) is not True


def check(path: Path) -> list[str]:
    """The problems ``PRAGMA quick_check`` finds in the database at ``path`` (every page read,
    the file left unmodified), one line each, or an empty list when it is whole. Raises
    StoreError for a file that cannot be opened."""
    try:
        con = sqlite3.connect(read_only_uri(path), uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}") from None
    try:
        return problems(con)
    finally:
        con.close()


def problems(con: sqlite3.Connection) -> list[str]:
    """``PRAGMA quick_check`` on ``con``, one line a problem (SQLite's lines, without its
    ``*** in database main ***`` heading); empty when the file is whole."""
    try:
        rows = [str(r[0]) for r in con.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        return [f"SQLite says: {exc}"]
    if rows == ["ok"]:
        return []
    lines = (line.strip() for row in rows for line in row.splitlines())
    return [line for line in lines if line and not line.startswith("*** in database")]


def inspect(path: Path, *, check_integrity: bool | None = None) -> int | None:
    """Return the schema version of an existing ctxscope database, or None for a new file.

    Raises StoreError for a file that is not SQLite, belongs to another program, or comes from
    a newer ctxscope, and for a damaged file when its integrity is checked: with
    ``check_integrity`` None, after a crash (:func:`crashed`) or before a migration.
    """
    if not path.exists() or path.stat().st_size == 0:
        return None
    if path.is_dir():
        raise StoreError(f"{path} is a directory, not a database file")
    left_by_a_crash = check_integrity is None and crashed(path)  # before this process opens it
    try:
        con = sqlite3.connect(read_only_uri(path), uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}") from None
    try:
        app_id = con.execute("PRAGMA application_id").fetchone()[0]
        version = con.execute("PRAGMA user_version").fetchone()[0]
        tables = con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if check_integrity is None:
            check_integrity = left_by_a_crash or (
                app_id == APPLICATION_ID and version < SCHEMA_VERSION
            )
        damage = problems(con) if check_integrity else []
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"{path} is not a ctxscope database (SQLite says: {exc}); "
            "choose another file with --db or CTXSCOPE_DB"
        ) from None
    finally:
        con.close()
    if damage:
        more = f" and {len(damage) - 1} more" if len(damage) > 1 else ""
        raise StoreError(
            f"{path} is damaged (integrity check: {damage[0]}{more}); it was not modified "
            "(`ctxscope check` lists what is wrong)"
        )
    if app_id != APPLICATION_ID:
        # Even an SQLite file with no tables was made by someone: only an empty (0-byte)
        # file is ours to initialise.
        raise StoreError(
            f"{path} is an SQLite database of another program (application_id={app_id}, "
            f"{tables} schema objects); it was not modified. Choose another file with --db"
        )
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer ctxscope (schema {version}, this one knows "
            f"{SCHEMA_VERSION}); upgrade ctxscope to open it"
        )
    missing = [v for v in range(version, SCHEMA_VERSION) if v not in MIGRATIONS]
    if missing:
        raise StoreError(
            f"{path} is a ctxscope database at schema {version}, which this ctxscope cannot "
            f"upgrade (no migration from schema {missing[0]}); it was not modified"
        )
    return int(version)


def migrate(db: Database, version: int) -> None:
    """Bring a database at ``version`` up to :data:`SCHEMA_VERSION`, one step at a time.

    Each step re-reads the version inside its write transaction, so two processes opening an
    old file at once migrate it once.
    """
    while version < SCHEMA_VERSION:
        with dialect.write_transaction(db, DDL_LOCK_TIMEOUT):
            version = stored_version(db)
            if version >= SCHEMA_VERSION:
                break
            step = MIGRATIONS.get(version)
            if step is None:
                raise StoreError(f"no migration from schema {version} to {version + 1}")
            step(db)  # type: ignore[arg-type]  # steps to 11 ran on SQLite only
            version += 1
            set_version(db, version)


def prepare_postgres(db: Database, read_only: bool) -> None:
    """A PostgreSQL database made ready (its tables bound to ``db``): created at
    :data:`SCHEMA_VERSION` when it has no tables, migrated when older; refused when newer,
    when it holds another program's tables, or when it is empty and only to be read. Creating
    holds the database's write lock, so two clients starting at once create it once."""
    from engine.store import search
    from engine.store.models import TABLES

    version = postgres.version(db, APPLICATION_ID)  # type: ignore[arg-type]
    if version is None and read_only:
        raise StoreError("it is empty: nothing to read")
    if version is None:
        with dialect.write_transaction(db, DDL_LOCK_TIMEOUT):
            if postgres.version(db, APPLICATION_ID) is None:  # type: ignore[arg-type]
                db.create_tables(TABLES)
                search.create(db)
                postgres.create_version(db, APPLICATION_ID, SCHEMA_VERSION)  # type: ignore[arg-type]
    elif version > SCHEMA_VERSION:
        raise StoreError(
            f"it was written by a newer ctxscope (schema {version}, this one knows "
            f"{SCHEMA_VERSION}); upgrade ctxscope to open it"
        )
    elif version < SCHEMA_VERSION:
        migrate(db, version)


DDL_LOCK_TIMEOUT = 60.0
"""Seconds creating or migrating a PostgreSQL database waits for another client's writes."""


def stored_version(db: Database) -> int:
    """The schema version ``db`` holds (:meth:`engine.store.dialect.Dialect.stored_version`);
    one that records none yet is taken as current."""
    found = dialect.dialect_of(db).stored_version(db, APPLICATION_ID)
    return SCHEMA_VERSION if found is None else found


def set_version(db: Database, version: int) -> None:
    dialect.dialect_of(db).set_version(db, version)
