"""Issue 44: the history import on every core writes new files in its workers, into scratch
databases the one writer copies in (engine/store/staged.py). The database must hold the same
content as the import that writes every file itself (``jobs=1``)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
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
    batches: list[int] = []
    copy_staged, staged_files = Store.copy_staged, Store.staged_files

    def counted(store: Store, schema: str = "staged") -> dict[str, int]:
        copies.append(1)
        return copy_staged(store, schema)

    def attached(store: Store, scratches: list[Path]) -> Any:
        batches.append(len(scratches))
        return staged_files(store, scratches)

    monkeypatch.setattr(Store, "copy_staged", counted)
    monkeypatch.setattr(Store, "staged_files", attached)
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
        # one process writes every file itself; two copy each new file in from its worker,
        # the eight in one transaction (MOST_ATTACHED = 8 scratch files at once)
        assert len(copies) == (0 if jobs == 1 else sessions)
        assert batches == ([] if jobs == 1 else [8])
    one, two = dumps
    assert one.keys() == two.keys()
    assert len(one["session_row"]) == 10
    assert len(one["archive_fts"]) > 0  # marot's compaction archived and indexed
    for table in one:
        assert one[table] == two[table], table


CRASH = """
import json, os, sys
from pathlib import Path
from engine.recordings import history
from engine.recordings.history import default_folders, import_history
from engine.settings.config import Settings
from engine.store import Store

def main():
    history.BATCH = 3
    copy_staged, copies = Store.copy_staged, []

    def crash_at_the_fifth(store, schema="staged"):
        copies.append(schema)
        if len(copies) == 5:  # the second batch's second file, its first copied
            os._exit(3)  # no rollback, no clean-up: the process is gone
        return copy_staged(store, schema)

    Store.copy_staged = crash_at_the_fifth
    store = Store.open(Path(sys.argv[1]))
    import_history(store, default_folders({"HOME": sys.argv[2]}), sys.argv[3], Settings(), jobs=2)

if __name__ == "__main__":
    main()
"""


def test_a_crash_in_a_batch_loses_only_its_files_and_a_rerun_stores_the_same(
    tmp_path: Path,
) -> None:
    """Several new files are copied in one transaction with their records (issue 44). A
    process killed in the middle of the second batch of three (after its first file's copy,
    at the second's) leaves the first batch's three files stored whole, with their records,
    and nothing of the second batch; the next run imports the other five, and the database
    then holds what one uninterrupted import stores, table for table."""
    import subprocess
    import sys

    home = tmp_path / "home"
    make_history(home, 8)
    folders = default_folders({"HOME": str(home)})
    clean = tmp_path / "clean.sqlite"
    store = Store.open(clean)
    import_history(store, folders, str(tmp_path), Settings(), jobs=2)
    store.close()

    crashed = tmp_path / "crashed.sqlite"
    root = Path(__file__).resolve().parents[3]
    run = [sys.executable, "-c", CRASH, str(crashed), str(home), str(tmp_path)]
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as err:
        # a group of its own: its pool's forkserver and workers, orphaned by the crash, are
        # ended with it (they would wait for work for ever)
        killed = subprocess.Popen(run, cwd=root, stderr=err, start_new_session=True)
        try:
            returncode = killed.wait(timeout=300)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(killed.pid, signal.SIGKILL)
    assert returncode == 3, errors.read_text()
    con = sqlite3.connect(crashed)
    files = con.execute("SELECT sessions FROM imported_file_row").fetchall()
    kept = {sid for (ids,) in files for sid in json.loads(ids)}
    parents = con.execute("SELECT id, parent_session_id FROM session_row").fetchall()
    con.close()
    assert len(files) == 3
    # every session stored is a recorded file's, or its subagent: no half-copied file
    assert {sid if parent is None else parent for sid, parent in parents} == kept

    store = Store.open(crashed)
    again = import_history(store, folders, str(tmp_path), Settings(), jobs=2)
    store.close()
    assert again.states == {"new": 5, "unchanged": 3}
    one, two = dump(clean), dump(crashed)
    assert one.keys() == two.keys()
    for table in one:
        assert one[table] == two[table], table
