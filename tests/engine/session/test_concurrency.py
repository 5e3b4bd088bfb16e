"""One writer per session, several processes on one database, and the stores that share a process.

The full target (8 processes x 20 asks) is ``bench/bench_concurrency.py``; here a small version
of the same check runs in a few seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.bench_concurrency import contend
from cli.main import main
from engine.models import Message, MessageMeta, RoundStatus, ToolCall
from engine.store import SessionBusy, Store

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("CTXSCOPE_MODEL", "offline")
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def shared(tmp_path: Path) -> tuple[Path, int]:
    """A database with one session whose workspace holds a README."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("hello\n")
    db = tmp_path / "shared.db"
    store = Store.open(db)
    sid = store.create_session(str(ws), "shared").id
    store.close()
    assert sid is not None
    return db, sid


def test_two_writers_per_session_lose_nothing(tmp_path: Path) -> None:
    """4 processes x 3 asks on 2 sessions, --wait: every input stored once, every round done."""
    report = contend(tmp_path, workers=4, asks=3, sessions=2)
    assert report.tracebacks == 0, report.stderr_samples
    assert report.failed_asks == 0, report.stderr_samples
    assert report.lost_inputs == [] and report.duplicated_inputs == []
    assert report.unfinished_rounds == 0
    assert report.invalid_sessions == []
    store = Store.open(tmp_path / "shared.db", read_only=True)
    assert [info.rounds for info in store.list_sessions()] == [6, 6]
    store.close()


def open_live_round(store: Store, sid: int) -> None:
    """A round in progress: the user input and an assistant step whose tool has not returned."""
    store.open_round(sid, Message(role="user", content="read README.md"))
    store.append_message(
        sid,
        1,
        Message(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id="toolu_live", name="Read", input={"file_path": "README.md"})],
            meta=MessageMeta(step=1),
        ),
    )


def test_a_second_ask_is_refused_while_a_round_runs(
    shared: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    db, sid = shared
    store = Store.open(db)
    lease = store.acquire_lease(sid, "round")  # this (live) process runs a round
    open_live_round(store, sid)

    code = main(["ask", "and now?", "--session", str(sid), "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"session {sid} is being written by another ctxscope (pid {os.getpid()}" in err
    assert "--wait" in err
    # the live round was left alone: no "interrupted" results, still open, nothing added
    assert [r.status for r in store.rounds(sid)] == [RoundStatus.OPEN]
    assert [m.role for m in store.history(sid).messages] == ["user", "assistant"]
    lease.release()
    store.close()


def test_read_only_commands_never_write_into_a_live_round(
    shared: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    db, sid = shared
    store = Store.open(db)
    lease = store.acquire_lease(sid, "round")
    open_live_round(store, sid)
    before = store.history_marker(sid)

    for argv in (["context", str(sid)], ["show", str(sid)], ["sessions"]):
        assert main([*argv, "--db", str(db), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"toolu_live"' in out  # context paired the open call in the request, not on disk

    assert store.history_marker(sid) == before
    assert [r.status for r in store.rounds(sid)] == [RoundStatus.OPEN]
    lease.release()
    store.close()


def test_compact_is_refused_while_a_round_runs(
    shared: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    db, sid = shared
    store = Store.open(db)
    lease = store.acquire_lease(sid, "round")
    assert main(["compact", str(sid), "--db", str(db)]) == 1
    assert "is being written by another ctxscope" in capsys.readouterr().err
    assert store.compactions(sid) == []
    lease.release()
    store.close()


CRASHING_WRITER = """
import os, sys
from engine.models import Message, MessageMeta, ToolCall
from engine.store import Store
store = Store.open(sys.argv[1])
sid = int(sys.argv[2])
store.acquire_lease(sid, "round")
store.open_round(sid, Message(role="user", content="read README.md"))
store.append_message(sid, 1, Message(role="assistant", content="", meta=MessageMeta(step=1),
    tool_calls=[ToolCall(id="toolu_dead", name="Read", input={"file_path": "README.md"})]))
os._exit(0)  # dies holding the lease, the round open
"""


def test_a_round_whose_writer_died_is_recovered_by_the_next_writer(
    shared: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    db, sid = shared
    subprocess.run(
        [sys.executable, "-c", CRASHING_WRITER, str(db), str(sid)],
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    store = Store.open(db)
    holder = store.lease_holder(sid)
    assert holder is not None and holder.pid != os.getpid()
    assert not store.writer_alive(sid)

    assert main(["ask", "read README.md", "--session", str(sid), "--db", str(db)]) == 0
    rounds = store.rounds(sid)
    assert [(r.index, r.status, r.error) for r in rounds] == [
        (1, RoundStatus.INTERRUPTED, "crashed"),
        (2, RoundStatus.FINISHED, None),
    ]
    round1 = store.round_messages(sid, 1)
    assert [m.role for m in round1] == ["user", "assistant", "tool", "assistant"]
    assert round1[2].meta.tool_use_id == "toolu_dead" and round1[2].meta.interrupted
    assert store.lease_holder(sid) is None  # released when the round ended
    store.close()


def test_wait_queues_behind_a_live_writer(shared: tuple[Path, int]) -> None:
    """With --wait the second ask starts once the first writer lets go, and both rounds land."""
    db, sid = shared
    store = Store.open(db)
    lease = store.acquire_lease(sid, "round")
    waiter = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "ask", "read README.md", "--session", str(sid)]
        + ["--db", str(db), "--wait", "--json"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # It cannot have written: the lease is ours until we release it.
    store.open_round(sid, Message(role="user", content="first"))
    store.append_message(sid, 1, Message(role="assistant", content="done"))
    store.finish_round(sid, 1, RoundStatus.FINISHED)
    lease.release()
    out, err = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, err.decode()
    result = json.loads(out.decode().splitlines()[-1])
    assert result["round_index"] == 2 and result["status"] == "finished"
    assert [r.status for r in store.rounds(sid)] == [RoundStatus.FINISHED] * 2
    store.close()


def test_a_lease_is_refused_to_a_second_holder_in_the_same_process(
    shared: tuple[Path, int],
) -> None:
    db, sid = shared
    a, b = Store.open(db), Store.open(db)
    lease = a.acquire_lease(sid, "round")
    with pytest.raises(SessionBusy, match="being written by another ctxscope"):
        b.acquire_lease(sid, "compaction")
    lease.release()
    b.acquire_lease(sid, "compaction").release()
    a.close()
    b.close()


def test_a_strategy_switch_waits_for_no_writer(
    shared: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    db, sid = shared
    holder = Store.open(db)
    lease = holder.acquire_lease(sid, "round")
    assert main(["strategy", str(sid), "masking", "--db", str(db)]) == 1
    assert "being written by another ctxscope" in capsys.readouterr().err
    lease.release()
    assert main(["strategy", str(sid), "masking", "--db", str(db)]) == 0
    assert holder.get_session(sid).strategy == "masking"
    holder.close()


@pytest.mark.parametrize(
    ("command", "unchanged"),
    [
        (["uncompact"], lambda store, sid: [c.undone_at for c in store.compactions(sid)] == [None]),
        (["pin", "r3"], lambda store, sid: not any(m.pinned for m in store.all_messages(sid))),
    ],
    ids=["uncompact", "pin"],
)
def test_uncompact_and_pin_are_refused_while_a_round_runs(
    shared: tuple[Path, int],
    capsys: pytest.CaptureFixture[str],
    command: list[str],
    unchanged: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CTXSCOPE_KEEP_ROUNDS", "1")
    db, sid = shared
    for text in ("read README.md", "ls .", "read README.md"):
        assert main(["ask", text, "--session", str(sid), "--db", str(db)]) == 0
    assert main(["compact", str(sid), "--db", str(db)]) == 0
    capsys.readouterr()
    holder = Store.open(db)
    assert len(holder.compactions(sid)) == 1 and unchanged(holder, sid)
    lease = holder.acquire_lease(sid, "round")

    assert main([command[0], str(sid), *command[1:], "--db", str(db)]) == 1
    assert "being written by another ctxscope" in capsys.readouterr().err
    assert unchanged(holder, sid)

    lease.release()
    assert main([command[0], str(sid), *command[1:], "--db", str(db)]) == 0
    assert not unchanged(holder, sid)
    holder.close()
