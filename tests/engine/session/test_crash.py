"""A compaction killed mid-way leaves the database consistent and the history unchanged."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from engine.context.history import HistoryManager
from engine.store import Store
from tests.engine.builders import write_round

CHILD = textwrap.dedent(
    """
    import os, sys
    from engine.settings.config import Settings
    from engine.context.history import HistoryManager
    from engine.models import Trigger
    from engine.store import Store
    from engine.store.archive import ArchiveStore
    from engine.compaction.strategies.layered import LayeredStrategy
    from engine.compaction.extractive import extractive_summary
    from engine.compaction.summary import SummaryCompressor

    class Extractive:

        is_model = True
        def summarize(self, messages, prompt, focus, timeout):
            return extractive_summary(messages, focus)

    def die(self, rounds, segment):
        # The summary, compaction and segment rows are written; the history change is next.
        os._exit(9)

    ArchiveStore._archive_messages = die  # the store's archive part writes the archive
    store = Store.open(sys.argv[1])
    settings = Settings(keep_rounds=3)
    manager = HistoryManager(store, int(sys.argv[2]), settings)
    compressor = SummaryCompressor(Extractive(), 5)
    manager.compactions.compact(LayeredStrategy(settings), compressor, Trigger.MANUAL)
    """
)


def test_process_killed_between_archive_and_history_update(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    store = Store.open(db)
    sid = store.create_session(str(tmp_path)).id
    assert sid is not None
    from engine.settings.config import Settings

    manager = HistoryManager(store, sid, Settings(keep_rounds=3))
    for n in range(1, 7):
        write_round(manager, n)
    before = store.history(sid)
    store.close()

    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(db), str(sid)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 9, proc.stderr

    after = Store.open(db)
    assert after.db.execute_sql("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert after.db.execute_sql("PRAGMA foreign_key_check").fetchall() == []
    assert after.history(sid) == before
    assert after.compactions(sid) == []
    assert after.segments(sid) == []
    assert all(not r.archived for r in after.rounds(sid))
    after.close()
