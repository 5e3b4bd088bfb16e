"""Issue 44: the history import on every core writes new files in its workers, into scratch
databases the one writer copies in (engine/store/staged.py). The database must hold the same
content as the import that writes every file itself (``jobs=1``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bench.make_history import make_history
from engine.recordings.history import default_folders, import_history
from engine.settings.config import Settings
from engine.store import Store
from engine.store.models import (
    TABLES,
    BaseRow,
    CompactionRow,
    ImportedFileRow,
    SessionRow,
    TokenCountRow,
)

IMPORT_TIMES = {("session_row", "created_at"), ("session_row", "updated_at")}
"""Columns that hold when the import ran, not what it read."""


def dump(db: Path) -> dict[str, Any]:
    """Every row a history import writes, without the ids it assigned: each session named
    by the file it came from and its place there, every other id by its rank among its
    session's rows of that table; the archive's search index likewise."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    session_key: dict[int, tuple[str, int]] = {}
    for path, ids in con.execute("SELECT path, sessions FROM imported_file_row"):
        for n, sid in enumerate(json.loads(ids)):
            session_key[sid] = (path, n)
    children = con.execute("SELECT id, parent_session_id, agent_id FROM session_row")
    for sid, parent, agent in list(children):
        if parent is not None:  # a subagent: named by its parent and agent id
            session_key[sid] = (f"{session_key[parent]}/{agent}", 0)
    rank: dict[str, dict[int, int]] = {}
    compaction_session: dict[int, int] = {}
    out: dict[str, Any] = {}
    for model in TABLES:
        table = model._meta.table_name
        if model in (ImportedFileRow, TokenCountRow):
            continue
        rows = con.execute(f'SELECT * FROM "{table}" ORDER BY id').fetchall()
        if not rows:
            continue
        rank[table], seen = {}, dict[Any, int]()

        def owner(row: sqlite3.Row, model: type[BaseRow] = model) -> int:
            if model is SessionRow:
                return int(row["id"])
            if "session_id" in row.keys():
                return int(row["session_id"])
            return compaction_session[row["compaction_id"]]  # a segment: its compaction's

        for row in rows:
            if model is CompactionRow:
                compaction_session[row["id"]] = row["session_id"]
            seen[owner(row)] = seen.get(owner(row), 0) + 1
            rank[table][row["id"]] = seen[owner(row)]
        refs = {f.column_name: f.rel_model._meta.table_name for f in model._meta.refs}
        dumped = []
        for row in rows:
            values = {}
            for column in row.keys():
                value = row[column]
                if (table, column) in IMPORT_TIMES:
                    continue
                if column == "id":
                    value = rank[table][value]
                elif column in ("session_id", "parent_session_id") and value is not None:
                    value = session_key[value]
                elif column in refs and value is not None:
                    value = rank[refs[column]][value]
                values[column] = value
            dumped.append((session_key[owner(row)], sorted(values.items(), key=str)))
        out[table] = sorted(dumped, key=str)
    index = con.execute(
        "SELECT body, session_id, segment_id, message_id, round, role, tool_name FROM archive_fts"
    ).fetchall()
    out["archive_fts"] = sorted(
        (
            (
                body,
                session_key[sid],
                rank["segment_row"][seg],
                rank["message_row"][mid],
                rnd,
                role,
                tool,
            )
            for body, sid, seg, mid, rnd, role, tool in index
        ),
        key=str,
    )
    counts = con.execute("SELECT digest, tokens FROM token_count_row")
    out["token_count_row"] = sorted(tuple(r) for r in counts)
    files = "SELECT path, size, head, fmt, refused FROM imported_file_row ORDER BY path"
    out["imported_file_row"] = [tuple(r) for r in con.execute(files)]
    con.close()
    return out


@pytest.mark.parametrize("sessions", [8])
def test_staged_import_stores_what_the_writer_alone_stores(
    tmp_path: Path, sessions: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generated history (make_history: the corpus' three Claude Code sessions, one with a
    subagent and marot with its recorded compaction, and its Codex rollout, in turn with fresh
    ids) imported on one process (every file written by the one writer) and on two (new
    files written in the workers and copied in): the same rows, table for table."""
    home = tmp_path / "home"
    make_history(home, sessions)
    folders = default_folders({"HOME": str(home)})
    copies: list[int] = []
    copy_staged = Store.copy_staged

    def counted(store: Store) -> dict[str, int]:
        copies.append(1)
        return copy_staged(store)

    monkeypatch.setattr(Store, "copy_staged", counted)
    dumps = []
    for jobs in (1, 2):
        db = tmp_path / f"jobs{jobs}.sqlite"
        store = Store.open(db)
        done = import_history(store, folders, str(tmp_path), Settings(), jobs=jobs)
        store.close()
        assert done.refused == []
        # 8 files and 10 sessions: the two moredip copies each bring their subagent
        assert done.states["new"] == sessions
        assert len(done.reports) == sessions
        assert sum(len(r.children) for r in done.reports) == 2
        # the reports name the sessions as stored: each file's, and each subagent's parent
        stored = Store.open(db)
        for report in done.reports:
            assert stored.imported_files()[report.path].sessions == (report.session.id,)
            for child in report.children:
                assert child.session.parent_session_id == report.session.id
                assert stored.get_session(child.session.id).agent_id == child.session.agent_id
        stored.close()
        dumps.append(dump(db))
        # one process writes every file itself; two copy each new file in from its worker
        assert len(copies) == (0 if jobs == 1 else sessions)
    one, two = dumps
    assert one.keys() == two.keys()
    assert len(one["session_row"]) == 10
    assert len(one["archive_fts"]) > 0  # marot's compaction archived and indexed
    for table in one:
        assert one[table] == two[table], table
