"""What each compaction lost, by name (engine/compaction/losses.py): on ctxscope's own
compaction (a summary written here, so what it names is known), and on the corpus' one recorded
compaction (marot), checked by hand against the file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cli.main import main
from engine.compaction.losses import session_losses
from engine.compaction.strategies.layered import LayeredStrategy
from engine.compaction.summary import SummaryCompressor
from engine.context.history import HistoryManager
from engine.models import Message, MessageMeta, RoundStatus, ToolCall, Trigger
from engine.settings.config import Settings
from engine.store import Store
from tests.cli_run import run_main as run
from tests.engine.builders import write_round
from tests.engine.recordings.corpus import MAROT

SUMMARY = "## Archived\nThe user asked: question 2: please edit src/mod2.py. It was done."


class FixedSummariser:
    is_model = True

    def summarize(self, messages, prompt, focus, timeout):  # type: ignore[no-untyped-def]
        return SUMMARY


def _edit_round(manager: HistoryManager, text: str, path: str) -> None:
    rnd, _ = manager.open_round(text)
    call = ToolCall(id=f"toolu_again_{rnd.index}", name="Edit", input={"file_path": path})
    manager.append(rnd.index, Message(role="assistant", content="editing", tool_calls=[call],
                                      meta=MessageMeta(step=1)))  # fmt: skip
    manager.append(rnd.index, Message(role="tool", content='{"status":"success","data":{}}',
                                      meta=MessageMeta(step=1, tool_name="Edit",
                                                       tool_use_id=call.id)))  # fmt: skip
    manager.append(rnd.index, Message(role="assistant", content="done",
                                      meta=MessageMeta(step=2, final=True)))  # fmt: skip
    manager.finish_round(rnd.index, RoundStatus.FINISHED)


def test_own_compaction_names_what_neither_the_summary_nor_the_kept_rounds_hold(
    manager: HistoryManager, store: Store, session_id: int, settings: Settings
) -> None:
    """Rounds 1-5 each ask "question n: please edit src/modn.py" and edit that file
    (builders.write_round); round 6 edits src/mod1.py again; rounds 7-8 are plain. keep_rounds
    3 archives rounds 1-5. The summary names request 2 and src/mod2.py (kept); src/mod1.py is
    in kept round 6 (carried); the rest is lost: requests 1, 3, 4, 5 and files 3, 4, 5, each
    at its round, the request at the round's first message."""
    for n in range(1, 6):
        write_round(manager, n)
    _edit_round(manager, "touch mod1 again", "src/mod1.py")
    write_round(manager, 7, tools=0)
    write_round(manager, 8, tools=0)
    manager.compactions.compact(
        LayeredStrategy(settings),
        SummaryCompressor(FixedSummariser(), settings.summary_timeout),
        Trigger.MANUAL,
    )
    (loss,) = session_losses(store, session_id)
    assert (loss.first_round, loss.last_round) == (1, 5)
    assert loss.covered["request"] == 5 and loss.covered["file_changed"] == 5
    assert loss.kept["request"] == 1 and loss.kept["file_changed"] == 1
    assert loss.carried["file_changed"] == 1 and loss.carried["request"] == 0
    assert [(i.kind, i.key, i.round) for i in loss.lost] == [
        ("request", "question 1: please edit src/mod1.py", 1),
        ("request", "question 3: please edit src/mod3.py", 3),
        ("file_changed", "src/mod3.py", 3),
        ("request", "question 4: please edit src/mod4.py", 4),
        ("file_changed", "src/mod4.py", 4),
        ("request", "question 5: please edit src/mod5.py", 5),
        ("file_changed", "src/mod5.py", 5),
    ]
    first_of_round_3 = store.round_messages(session_id, 3)[0]
    assert loss.lost[1].message_id == first_of_round_3.id


# ---------------------------------------------------------------------- the corpus
@pytest.fixture(scope="module")
def marot_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("marot") / "m.db"
    assert main(["import", str(MAROT), "--db", str(db), "--json"]) == 0
    return db


def _marot_records() -> tuple[list[dict], str]:
    """The file's records before the compact_boundary, and the summary's text."""
    records = [json.loads(line) for line in MAROT.read_text(encoding="utf-8").splitlines()]
    boundary = next(i for i, r in enumerate(records) if r.get("subtype") == "compact_boundary")
    summary = next(r for r in records if r.get("isCompactSummary"))["message"]["content"]
    text = summary if isinstance(summary, str) else " ".join(b.get("text", "") for b in summary)
    return records[:boundary], text


LOST_READS = [
    "priv/repo/migrations/20260211104759_replace_pane_id_with_session_id.exs",
    "/tmp/claude-1000/-home-USER-projects-spotter-worktrees-spotter-gqc/tasks/bd0afab.output",
    "lib/spotter/transcripts/project.ex",
    "test/spotter_web/controllers/hooks_controller_test.exs",
    "test/test_helper.exs",
    "config/config.exs",
    "lib/spotter_web/components/layouts.ex",
    "lib/spotter_web/components/layouts/root.html.heex",
]
"""The files read before the boundary that the summary does not name. By hand:
``jq -r 'select(.type=="assistant").message.content[]?|select(.name=="Read").input.file_path'``
over lines 1-1255 gives 23 distinct paths, and Bash's ``tail -30 /tmp/…/bd0afab.output`` a 24th;
16 of them (relative to the recorded cwd) occur in the summary's text (line 1257), these 8 do
not."""


def test_marot_lost_items_match_the_hand_check(marot_db: Path) -> None:
    """The recorded compaction archives everything before it (rounds 1-5) and keeps nothing,
    so what the summary does not name is lost: 8 of 24 files read, 0 of 17 changed, all 42
    commands, all 6 errors, 0 of 3 requests (the fidelity figures ``show`` prints). Checked
    here against the file itself, not the ledger: each lost path is a Read call before the
    boundary, and absent from the summary; the lost error "fatal: The current branch
    spotter-gqc has no upstream branch." is in the tool result of line 615
    (``git push`` → exit 128) and not in the summary."""
    store = Store.open(marot_db, read_only=True)
    try:
        (loss,) = session_losses(store, 1)
    finally:
        store.close()
    assert loss.recorded is True and (loss.first_round, loss.last_round) == (1, 5)
    lost = {k: [i.key for i in loss.lost_of(k)] for k in loss.covered}
    assert {k: len(v) for k, v in lost.items()} == {
        "file_read": 8, "file_changed": 0, "command": 42, "error": 6, "request": 0,
        "decision": 0,
    }  # fmt: skip
    assert lost["file_read"] == LOST_READS
    assert loss.covered["file_read"] == 24 and loss.covered["command"] == 42
    records, summary = _marot_records()
    cwd = "/home/USER/projects/spotter-worktrees/spotter-gqc/"
    calls = [
        block["input"]
        for r in records
        if r.get("type") == "assistant"
        for block in r["message"]["content"]
        if isinstance(block, dict) and block.get("name") in ("Read", "Bash")
    ]
    read_calls = {c["file_path"] for c in calls if "file_path" in c}
    assert len(read_calls) == 23
    for path in LOST_READS[:1] + LOST_READS[2:]:
        assert cwd + path in read_calls
    assert f"tail -30 {LOST_READS[1]}" in [c.get("command") for c in calls]
    for path in LOST_READS:
        assert path not in summary
    error = "fatal: The current branch spotter-gqc has no upstream branch."
    assert error in lost["error"]
    assert error in json.dumps(records[614]) and error not in summary
    (where,) = [i for i in loss.lost if i.key == error]
    assert where.round == 5 and where.message_id is not None


def test_marot_show_and_report_name_what_was_lost(
    marot_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``show`` prints the lost files by name under the compaction line and ``--json`` lists
    all 56 (8 + 42 + 6); ``report --json`` has them per compaction and the history's ledger:
    errors 6 lost of 6 covered (100 %), files read 8 of 24 (33.3 %), no session lost a
    request."""
    code, text, _ = run(capsys, "show", "1", "--db", str(marot_db))
    assert code == 0
    assert "  lost files read 8/24: priv/repo/migrations/" in text
    assert "config/config.exs" not in text  # the sixth: show names five per kind
    code, out, _ = run(capsys, "show", "1", "--db", str(marot_db), "--json")
    (losses,) = json.loads(out)["losses"]
    assert len(losses["lost"]) == 56
    assert [i["key"] for i in losses["lost"] if i["kind"] == "file_read"] == LOST_READS
    code, out, _ = run(capsys, "report", "--db", str(marot_db), "--json")
    data = json.loads(out)["compactions"]
    (only,) = data["list"]
    assert only["lost"] == 56 and len(only["lost_items"]) == 56
    by_kind = data["losses"]["by_kind"]
    assert by_kind["error"] == {"covered": 6, "lost": 6, "percent_lost": 100.0, "sessions": [1]}
    assert by_kind["file_read"]["percent_lost"] == 33.3
    assert by_kind["request"]["sessions"] == []
    code, text, _ = run(capsys, "report", "--db", str(marot_db))
    assert "your compactions lost 33 % of the files read (8/24)" in text


class _CountingStore:
    """The store, counting the archives read (what working the ledger out costs)."""

    def __init__(self, store: Store) -> None:
        self.store, self.segment_reads = store, 0

    def segments(self, session_id: int):  # type: ignore[no-untyped-def]
        self.segment_reads += 1
        return self.store.segments(session_id)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.store, name)


def test_marot_ledger_is_worked_out_once_then_read_back(marot_db: Path, tmp_path: Path) -> None:
    """Issue 44: ``report`` read every compaction's archive again at every run. The ledger is
    stored the first time (even by a command that opened the database to look) and read back
    while the session's compactions are the ones it was made for: the same 8 lost reads and
    42 lost commands as the hand check above, without reading the archive; a different set of
    compactions works it out again."""
    db = tmp_path / "m.db"
    with sqlite3.connect(marot_db) as source, sqlite3.connect(db) as copy:
        source.backup(copy)  # the write-ahead log's pages too
        copy.execute("DELETE FROM losses_row")  # a ledger another test's look stored
    first = Store.open(db, read_only=True)
    try:
        counted = _CountingStore(first)
        (worked,) = session_losses(counted, 1)  # type: ignore[arg-type]
        assert counted.segment_reads == 1
    finally:
        first.close()
    again = Store.open(db, read_only=True)
    try:
        counted = _CountingStore(again)
        (read,) = session_losses(counted, 1)  # type: ignore[arg-type]
        assert counted.segment_reads == 0
        assert read.as_json() == worked.as_json()
        assert [i.key for i in read.lost_of("file_read")] == LOST_READS
        assert len(read.lost_of("command")) == 42
    finally:
        again.close()
    stale = Store.open(db)
    try:
        stale.keep_losses(1, [999], [])  # made for other compactions: not used
        counted = _CountingStore(stale)
        (redone,) = session_losses(counted, 1)  # type: ignore[arg-type]
        assert counted.segment_reads == 1 and redone.as_json() == worked.as_json()
    finally:
        stale.close()


def test_the_report_reads_stored_ledgers_without_a_compaction_query_per_session(
    marot_db: Path, tmp_path: Path
) -> None:
    """``report`` over two sessions with compactions (marot's, and oh-my-posh's that begins
    at an auto compaction) whose ledgers are stored: every compaction is read in two queries
    in all (the compactions in force, then every compaction of those sessions, for their
    ledgers and flags), none per session — SQLite's own trace of the statements, not the
    code's account of them. The ledger read back is marot's 56 lost items (above)."""
    from engine.report.card import build_report
    from engine.store.models import CompactionRow
    from tests.engine.recordings.corpus import OMP_BOUNDARY

    db = tmp_path / "two.db"
    with sqlite3.connect(marot_db) as source, sqlite3.connect(db) as copy:
        source.backup(copy)
    assert main(["import", str(OMP_BOUNDARY), "--db", str(db), "--json"]) == 0
    store = Store.open(db)
    try:
        build_report(store, Settings())  # works the ledgers out and stores them
        statements: list[str] = []
        store.db.connection().set_trace_callback(statements.append)
        report = build_report(store, Settings())
        store.db.connection().set_trace_callback(None)
    finally:
        store.close()
    table = f'FROM "{CompactionRow._meta.table_name}"'
    reads = [s for s in statements if table in s]
    assert [s for s in reads if '"session_id" = ' in s] == []
    assert len(reads) == 2
    assert len({c.facts.session_id for c in report.compactions}) == 2
    assert sorted(c.lost for c in report.compactions) == [0, 56]
