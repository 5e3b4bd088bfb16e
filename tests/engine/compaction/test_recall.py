"""Recall's index: archived segments are searchable after compaction and only then; the index
follows undo and survives a kill -9 mid-compaction in step with the segments; compactions
store their fidelity; an older database gets the index built by its migration."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.compaction.strategies.layered import LayeredStrategy
from engine.compaction.summary import SummaryCompressor
from engine.context.history import CompactionDraft, HistoryManager
from engine.llm.offline import OfflineProvider
from engine.models import Message, MessageMeta, Observation, RoundStatus, ToolCall, Trigger
from engine.settings.config import Settings
from engine.store import Store
from engine.store import search as fts
from engine.store.schema import SCHEMA_VERSION
from tests.engine.builders import write_round

SETTINGS = Settings(keep_rounds=2)


def bash_round(manager: HistoryManager, store: Store, n: int, stderr: str) -> None:
    """A round whose Bash call failed; the full stderr is only in the observation."""
    rnd, _ = manager.open_round(f"run the flaky job number {n}")
    call = ToolCall(id=f"toolu_b{n}", name="Bash", input={"command": f"python job{n}.py"})
    manager.append(
        rnd.index, Message(role="assistant", tool_calls=[call], meta=MessageMeta(step=1))
    )
    form = {
        "status": "error",
        "data": {"command": f"python job{n}.py", "exit_code": 1},
        "error": {"code": "nonzero_exit", "message": "The command exited with code 1."},
    }
    tool = manager.append(
        rnd.index,
        Message(
            role="tool",
            content=json.dumps(form),
            meta=MessageMeta(step=1, tool_name="Bash", tool_use_id=call.id, is_error=True),
        ),
    )
    store.add_observation(
        Observation(
            session_id=manager.session_id,
            round_index=rnd.index,
            step=1,
            tool_use_id=call.id,
            tool_name="Bash",
            result={"status": "error", "data": {"stdout": "", "stderr": stderr}},
            text=stderr,
            message_id=tool.id,
        )
    )
    manager.append(
        rnd.index,
        Message(role="assistant", content=f"job {n} failed", meta=MessageMeta(final=True)),
    )
    manager.finish_round(rnd.index, RoundStatus.FINISHED)


def compact(manager: HistoryManager) -> None:
    result = manager.compactions.compact(
        LayeredStrategy(SETTINGS), SummaryCompressor(OfflineProvider(), 5), Trigger.MANUAL
    )
    assert result.compaction.outcome == "success"


def archived_ids(store: Store, sid: int) -> set[int]:
    return {m.id for seg in store.segments(sid) for m in seg.messages if m.id is not None}


@pytest.fixture
def session(tmp_path: Path) -> tuple[Store, HistoryManager]:
    store = Store.open(tmp_path / "recall.db")
    sid = store.create_session(str(tmp_path)).id
    assert sid is not None
    return store, HistoryManager(store, sid, SETTINGS)


def test_found_after_compaction_and_not_before(session: tuple[Store, HistoryManager]) -> None:
    store, manager = session
    sid = manager.session_id
    noise = "\n".join(f"step {i} ok" for i in range(300))
    bash_round(manager, store, 1, noise + "\nzebracorn.QuotaError: quota exhausted for bucket")
    for n in range(2, 5):
        write_round(manager, n)
    # round 1 is in history: nothing is archived, Recall finds nothing
    assert store.search_archive(sid, "zebracorn quota") == []
    compact(manager)  # keep_rounds=2: rounds 1 and 2 are archived
    [segment] = store.segments(sid)
    hits = store.search_archive(sid, "zebracorn quota")
    assert len(hits) == 1
    hit = hits[0]
    tool_msg = next(m for m in segment.messages if m.role == "tool")
    assert (hit.segment_id, hit.round, hit.message_id) == (segment.id, 1, tool_msg.id)
    assert (hit.role, hit.tool_name) == ("tool", "Bash")
    assert "[zebracorn]" in hit.snippet and "[quota]" in hit.snippet
    # the compressed form did not hold it: the index has the full observation
    assert "zebracorn" not in tool_msg.content
    # a string of a kept round (3) is in history, not in the archive
    assert store.search_archive(sid, "mod3") == []
    assert {h.round for h in store.search_archive(sid, "question 2 edit")} == {2}
    # other sessions do not see it
    other = store.create_session("elsewhere").id
    assert other is not None and store.search_archive(other, "zebracorn") == []


def test_words_are_quoted_and_any_word_is_the_fallback(
    session: tuple[Store, HistoryManager],
) -> None:
    store, manager = session
    for n in range(1, 5):
        write_round(manager, n)
    compact(manager)
    # FTS syntax in the query is only words: no error, no operator
    assert {h.round for h in store.search_archive(manager.session_id, 'mod1 OR "x" NEAR(')} == {1}
    # no message has both words: any word may match
    hits = store.search_archive(manager.session_id, "mod1 nonexistentword")
    assert [h.round for h in hits] == [1, 1, 1]  # the user message, the call, the tool result
    assert fts.match_expression('a-b "c"') == '"a" "b" "c"'
    assert store.search_archive(manager.session_id, "  !!  ") == []


def test_summary_names_its_segment(session: tuple[Store, HistoryManager]) -> None:
    store, manager = session
    for n in range(1, 6):
        write_round(manager, n)
    compact(manager)
    [segment] = store.segments(manager.session_id)
    [summary] = manager.history.summaries
    assert summary.content.endswith(
        f"*(Raw messages archived as segment #{segment.id}; the Recall tool searches them.)*"
    )


def test_compaction_stores_its_fidelity(session: tuple[Store, HistoryManager]) -> None:
    store, manager = session
    for n in range(1, 5):
        write_round(manager, n)
    compact(manager)
    [comp] = store.compactions(manager.session_id)
    # rounds 1-2 archived: 2 requests, 2 edited files; no reads, commands, errors, decisions
    assert comp.fidelity == {
        "file_read": {"kept": 0, "total": 0},
        "file_changed": {"kept": 2, "total": 2},
        "command": {"kept": 0, "total": 0},
        "error": {"kept": 0, "total": 0},
        "request": {"kept": 2, "total": 2},
        "decision": {"kept": 0, "total": 0},
    }


def test_undo_unindexes_the_segment(session: tuple[Store, HistoryManager]) -> None:
    store, manager = session
    sid = manager.session_id
    for n in range(1, 7):
        write_round(manager, n)
    compact(manager)  # rounds 1-4
    first = store.segments(sid)[0]
    for n in range(7, 9):
        write_round(manager, n)
    compact(manager)  # rounds 5-6 (7-8 are the keep zone)
    assert store.indexed_messages(sid) == archived_ids(store, sid)
    manager.undo()  # the second compaction: its messages are back in history
    assert store.indexed_messages(sid) == archived_ids(store, sid) == {m.id for m in first.messages}
    assert store.search_archive(sid, "mod6") == []
    assert {h.round for h in store.search_archive(sid, "mod4")} == {4}
    # unindex_segment is what undo calls; on its own it empties that segment's rows
    assert store.unindex_segment(first.id or 0) == len(first.messages)
    assert store.indexed_messages(sid) == set()


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from engine.settings.config import Settings
    from engine.context.history import HistoryManager
    from engine.llm.offline import OfflineProvider
    from engine.models import Trigger
    from engine.store import Store, search
    from engine.compaction.strategies.layered import LayeredStrategy
    from engine.compaction.summary import SummaryCompressor

    where = sys.argv[3]
    original = search.index_segment if where == "compact" else search.unindex_segment

    def then_die(db, segment_id):
        original(db, segment_id)  # the index rows are written, the transaction is open
        os.kill(os.getpid(), signal.SIGKILL)

    if where == "compact":
        search.index_segment = then_die
    else:
        search.unindex_segment = then_die
    store = Store.open(sys.argv[1])
    settings = Settings(keep_rounds=2)
    manager = HistoryManager(store, int(sys.argv[2]), settings)
    if where == "compact":
        manager.compactions.compact(
            LayeredStrategy(settings), SummaryCompressor(OfflineProvider(), 5), Trigger.MANUAL
        )
    else:
        manager.undo()
    """
)


@pytest.mark.parametrize("where", ["compact", "undo"])
def test_kill_9_mid_transaction_leaves_index_and_segments_in_step(
    tmp_path: Path, where: str
) -> None:
    db = tmp_path / "crash.db"
    store = Store.open(db)
    sid = store.create_session(str(tmp_path)).id
    assert sid is not None
    manager = HistoryManager(store, sid, SETTINGS)
    for n in range(1, 6):
        write_round(manager, n)
    compact(manager)  # rounds 1-3 archived and indexed
    for n in range(6, 9):
        write_round(manager, n)
    indexed = store.indexed_messages(sid)
    assert indexed == archived_ids(store, sid) and len(indexed) == 3 * 4
    store.close()

    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(db), str(sid), where],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -9, proc.stderr

    after = Store.open(db)
    assert after.db.execute_sql("PRAGMA integrity_check").fetchone()[0] == "ok"
    # FTS5's own check raises if the index and its table disagree
    after.db.execute_sql("INSERT INTO archive_fts(archive_fts) VALUES ('integrity-check')")
    assert len(after.segments(sid)) == 1
    assert after.indexed_messages(sid) == archived_ids(after, sid) == indexed
    assert {h.round for h in after.search_archive(sid, "mod2")} == {2}
    assert after.search_archive(sid, "mod5") == []
    after.close()


def test_migration_builds_the_index_for_existing_segments(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    store = Store.open(db)
    sid = store.create_session(str(tmp_path)).id
    assert sid is not None
    manager = HistoryManager(store, sid, SETTINGS)
    for n in range(1, 5):
        write_round(manager, n)
    compact(manager)
    # make it a schema-3 database: no fidelity column, no index
    store.db.execute_sql("DROP TABLE archive_fts")
    store.db.execute_sql("ALTER TABLE compaction_row DROP COLUMN fidelity")
    store.db.pragma("user_version", 3)
    store.close()

    reopened = Store.open(db)
    assert reopened.db.pragma("user_version") == SCHEMA_VERSION  # up to the current schema
    assert {h.round for h in reopened.search_archive(sid, "mod1")} == {1}
    assert reopened.indexed_messages(sid) == archived_ids(reopened, sid)
    assert reopened.compactions(sid)[0].fidelity is None  # not measured back then
    reopened.close()


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    from cli.main import main

    assert main(list(argv)) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        return json.loads(lines[-1])  # ask: one event per line, the result last


def test_recall_from_the_shell_and_from_the_offline_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("CTXSCOPE_KEEP_ROUNDS", "1")
    (tmp_path / "notes.md").write_text("The platypus config lives in zoo.toml.\n")
    db = ["--db", str(tmp_path / "cli.db"), "--json"]
    first = cli_json(capsys, "ask", "read notes.md", "--workspace", str(tmp_path), *db)
    assert isinstance(first, dict)
    sid = str(first["session_id"])
    cli_json(capsys, "ask", "ls", "--session", sid, *db)
    assert cli_json(capsys, "recall", sid, "platypus", *db) == {
        "session_id": int(sid),
        "query": "platypus",
        "hits": [],
    }
    compacted = cli_json(capsys, "compact", sid, *db)
    assert isinstance(compacted, dict)
    segment_id = compacted["segment"]["id"]
    assert compacted["compaction"]["fidelity"]["file_read"] == {"kept": 1, "total": 1}
    found = cli_json(capsys, "recall", sid, "platypus", "--limit", "3", *db)
    assert isinstance(found, dict)
    assert [(h["segment_id"], h["round"], h["role"]) for h in found["hits"]] == [
        (segment_id, 1, "tool")
    ]
    assert "[platypus]" in found["hits"][0]["snippet"]
    shown = cli_json(capsys, "show", sid, *db)
    assert isinstance(shown, dict)
    assert shown["compactions"][0]["fidelity"]["request"] == {"kept": 1, "total": 1}

    answer = cli_json(capsys, "ask", "recall platypus", "--session", sid, *db)
    assert isinstance(answer, dict) and answer["status"] == "finished"
    assert 'Recall platypus: 1 archived passage for "platypus", best first:' in answer["answer"]


class Forgetful:
    """A 'model' whose summary names round 1's file and request but not round 2's."""

    is_model = True

    def summarize(self, messages, prompt, focus, timeout, render=None, **_options):  # type: ignore[no-untyped-def]
        return (
            "## 📌 Archived Session Summary\n*(Contains context from a to b)*\n\n"
            "* **Original Goal**: question 1: please edit src/mod1.py\n"
            "* `src/mod1.py`: edited"
        )


def test_fidelity_measures_a_model_summary_and_an_edited_one(
    session: tuple[Store, HistoryManager],
) -> None:
    store, manager = session
    for n in range(1, 5):
        write_round(manager, n)
    draft = manager.compactions.prepare(
        LayeredStrategy(SETTINGS), SummaryCompressor(Forgetful(), 5), Trigger.MANUAL
    )
    assert isinstance(draft, CompactionDraft)
    # rounds 1-2 archived; the model named round 1's request and file only
    assert draft.record.fidelity is not None
    assert draft.record.fidelity["request"] == {"kept": 1, "total": 2}
    assert draft.record.fidelity["file_changed"] == {"kept": 1, "total": 2}
    # the user's edit adds round 2: the stored figure is the edit's, not the draft's
    assert draft.summary is not None
    edited = draft.summary.content + "\n* question 2: please edit src/mod2.py (done)"
    result = manager.compactions.commit(draft, edited)
    assert result.compaction.fidelity is not None
    assert result.compaction.fidelity["request"] == {"kept": 2, "total": 2}
    assert result.compaction.fidelity["file_changed"] == {"kept": 2, "total": 2}
    assert store.compactions(manager.session_id)[0].fidelity == result.compaction.fidelity


def test_recall_command_text_and_bad_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.main import main

    monkeypatch.setenv("CTXSCOPE_KEEP_ROUNDS", "1")
    db = tmp_path / "text.db"
    store = Store.open(db)
    sid = store.create_session(str(tmp_path)).id
    assert sid is not None
    manager = HistoryManager(store, sid, Settings(keep_rounds=1))
    for n in range(1, 4):
        write_round(manager, n)
    store.close()
    assert main(["compact", str(sid), "--db", str(db), "--json"]) == 0
    capsys.readouterr()
    assert main(["recall", str(sid), "mod2", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # round 2's user message, assistant step and tool result all name src/mod2.py
    assert len(lines) == 3
    assert all(line.startswith("segment #1 · round 2 · message ") for line in lines)
    assert "(tool Edit): " in "\n".join(lines) and "[mod2]" in lines[0]
    assert main(["recall", str(sid), "zzzz", "--db", str(db)]) == 0
    assert capsys.readouterr().out == f'no archived message of session {sid} matches "zzzz"\n'
    assert main(["recall", str(sid), "mod2", "--limit", "21", "--db", str(db)]) == 2
    assert "--limit must be between 1 and 20, got 21" in capsys.readouterr().err
