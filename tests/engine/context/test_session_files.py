"""Issue 32: seed 003's log and seed 004's raw middles are kept apart per database.

Seed 003 keeps its log per chat: "``.ship/memory/agent-context/<chatKey>.jsonl``" (each chat
its own file); seed 004 F-006 writes "文件内容为 middleMessages 的 JSON 序列化" for *this*
compaction. ctxscope's session ids restart at 1 in every database, so two databases in one
folder must not share ``data/<session id>/``.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.compaction.strategies import get_strategy
from engine.compaction.summary import SummaryCompressor
from engine.context.history import HistoryManager
from engine.context.session_files import database_key, session_file, session_folder
from engine.llm.offline import OfflineProvider
from engine.models import Trigger
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.builders import write_round


def _run_once(db: Path, workspace: Path, question: str) -> Agent:
    store = Store.open(db)
    settings = Settings(strategy="message-window")
    session = store.create_session(str(workspace), "t", strategy="message-window")
    agent = Agent(store, session, settings, OfflineProvider(), workspace)
    agent.run(question)
    return agent


def test_two_databases_in_one_folder_keep_their_logs_apart(tmp_path: Path) -> None:
    """Seed 003: "写入 ``.ship/memory/agent-context/<chatKey>.jsonl``" — one log per chat. Session 1
    of ``a.db`` and session 1 of ``b.db`` are two chats: two files, each with its own run."""
    ws = tmp_path / "ws"
    ws.mkdir()
    first = _run_once(tmp_path / "a.db", ws, "first database question")
    second = _run_once(tmp_path / "b.db", ws, "second database question")
    assert first.session_id == second.session_id == 1

    a_log = tmp_path / "data" / "a" / "1" / "agent-context.jsonl"
    b_log = tmp_path / "data" / "b" / "1" / "agent-context.jsonl"
    assert first.execution_log_path == a_log and second.execution_log_path == b_log
    a_entries = [json.loads(line) for line in a_log.read_text().splitlines()]
    b_entries = [json.loads(line) for line in b_log.read_text().splitlines()]
    assert [e["userPreview"] for e in a_entries] == ["first database question"]
    assert [e["userPreview"] for e in b_entries] == ["second database question"]
    assert not (tmp_path / "data" / "1").exists()


def test_a_log_at_the_old_place_is_still_read_and_continued(tmp_path: Path) -> None:
    """A log written before the folders were keyed by database (``data/<session id>/``) is read
    and continued at the new place; the old file is left as it was (it may be another
    database's too)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    old = tmp_path / "data" / "1" / "agent-context.jsonl"
    old.parent.mkdir(parents=True)
    entry = {"requestId": "old-1", "userPreview": "before", "outputPreview": "x",
             "toolCalls": [], "hadToolFailure": False}  # fmt: skip
    old.write_text(json.dumps(entry) + "\n")
    agent = _run_once(tmp_path / "a.db", ws, "after")
    new = tmp_path / "data" / "a" / "1" / "agent-context.jsonl"
    previews = [json.loads(line)["userPreview"] for line in new.read_text().splitlines()]
    assert previews == ["before", "after"]
    assert old.read_text() == json.dumps(entry) + "\n"
    assert agent.execution_log_path == new


def test_a_read_only_store_reads_the_old_place(tmp_path: Path) -> None:
    old = tmp_path / "data" / "3" / "agent-context.jsonl"
    old.parent.mkdir(parents=True)
    old.write_text("{}\n")
    db = tmp_path / "x.db"
    path = session_file(tmp_path / "data", db, 3, "agent-context.jsonl", writable=False)
    assert path == old
    assert not (tmp_path / "data" / "x").exists()


def test_a_shared_data_dir_keys_same_named_databases_apart(tmp_path: Path) -> None:
    """A ``data_dir`` set elsewhere may serve ``ctxscope.db`` of several folders: the key
    carries a hash of the database's path there, the stem alone beside the database."""
    shared = tmp_path / "shared"
    one, two = tmp_path / "p1" / "ctxscope.db", tmp_path / "p2" / "ctxscope.db"
    assert database_key(tmp_path / "p1" / "data", one) == "ctxscope"
    k1, k2 = database_key(shared, one), database_key(shared, two)
    assert k1 != k2 and k1.startswith("ctxscope-") and len(k1) == len("ctxscope-") + 8
    assert session_folder(shared, one, 4) == shared / k1 / "4"


def test_raw_middles_of_two_databases_do_not_mix(tmp_path: Path) -> None:
    """004 F-006: each compaction's file holds its own middle; ``compact-…-1.json`` of
    session 1 in ``a.db`` and in ``b.db`` are two files."""
    settings = Settings(strategies={"head-middle-tail": {"context_limit": 400}})
    written = []
    for name in ("a", "b"):
        store = Store.open(tmp_path / f"{name}.db")
        sid = store.create_session(str(tmp_path), "t").id
        assert sid == 1
        manager = HistoryManager(store, sid, settings, data_dir=tmp_path / "data")
        for n in range(1, 6):  # a middle its extractive summary shrinks (else nothing stored)
            write_round(manager, n, tools=3)
        strategy = get_strategy("head-middle-tail", settings)
        result = manager.compactions.compact(
            strategy, SummaryCompressor(OfflineProvider(), 5), Trigger.AUTO
        )
        written.append(Path(result.compaction.stats["raw_middle_file"]))
        store.close()
    data = tmp_path / "data"
    assert [p.parent for p in written] == [data / "a" / "1", data / "b" / "1"]
