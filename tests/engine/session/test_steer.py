"""Compaction the user steers: dry run, edit before commit, undo, pins — under every strategy."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from engine.context.builder import validate_request
from engine.context.history import CompactionDraft
from engine.llm.offline import OfflineProvider
from engine.models import Outcome, RoundStatus, Trigger
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store, StoreError

WINDOW = 30_000
ALL = ["layered", "reset-hint", "mock-user", "message-window", "head-middle-tail", "masking"]
# Numbers small enough that a manual compaction after six rounds has something to archive.
SMALL: dict[str, dict[str, Any]] = {
    "mock-user": {"mock-user": {"keep_recent_steps": 1}},
    "message-window": {"message-window": {"keep_last": 6}},
    "head-middle-tail": {"head-middle-tail": {"tail_retention_ratio": 0.1}},
}
ENV = {
    "CTXSCOPE_CONTEXT_WINDOW": str(WINDOW),
    "CTXSCOPE_KEEP_ROUNDS": "2",
    "CTXSCOPE_STRATEGIES__MOCK_USER__KEEP_RECENT_STEPS": "1",
    "CTXSCOPE_STRATEGIES__MESSAGE_WINDOW__KEEP_LAST": "6",
    "CTXSCOPE_STRATEGIES__HEAD_MIDDLE_TAIL__TAIL_RETENTION_RATIO": "0.1",
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(4):
        lines = [f"def f{n}_{i}(x):  # line {i} of module {n}" for i in range(120)]
        (ws / f"m{n}.py").write_text("\n".join(lines) + "\n")
    return ws


@pytest.fixture(autouse=True)
def _small_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)


def session_with_rounds(db: Path, workspace: Path, name: str, rounds: int = 6) -> int:
    """A stored session of ``rounds`` offline rounds under ``name`` (then the store closes)."""
    store = Store.open(db)
    settings = Settings(strategy=name)
    session = store.create_session(str(workspace), "steer", strategy=name)
    agent = Agent(store, session, settings, OfflineProvider(), workspace)
    for i in range(rounds):
        assert agent.run(f"read m{i % 4}.py").status == RoundStatus.FINISHED
    store.close()
    assert session.id is not None
    return session.id


def agent_on(db: Path, workspace: Path, sid: int) -> Agent:
    store = Store.open(db)
    session = store.get_session(sid)
    return Agent(store, session, Settings(), OfflineProvider(), workspace)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", ALL)
def test_dry_run_leaves_the_database_byte_identical(
    name: str, workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "dry.db"
    sid = session_with_rounds(db, workspace, name)
    before = digest(db)
    shown = cli(capsys, "compact", str(sid), "--dry-run", "--db", str(db))
    assert digest(db) == before
    assert not list((tmp_path / "data").glob("*/compact-*.json"))  # no raw middle either
    if name == "masking":
        assert shown == {
            "dry_run": True,
            "compacts": False,
            "reason": "masking never archives: older observations are masked instead",
        }
        return
    assert shown["compacts"] is True and shown["archive"]["messages"]
    assert shown["tokens_after"] < shown["tokens_before"]
    # the real compaction archives exactly what the dry run announced, with the same summary
    done = cli(capsys, "compact", str(sid), "--db", str(db))
    store = Store.open(db)
    [segment] = store.segments(sid)
    assert [m.id for m in segment.messages] == shown["archive"]["messages"]
    # (the A5 recall note names the segment once it is stored)
    named = shown["summary"]["content"].replace("segment #next;", f"segment #{segment.id};")
    assert done["summary"]["content"] == named
    assert done["compaction"]["tokens_after"] == shown["tokens_after"]


@pytest.mark.parametrize("name", ALL)
def test_undo_gives_back_the_same_history_and_request(
    name: str, workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "undo.db"
    sid = session_with_rounds(db, workspace, name)
    store = Store.open(db)
    history_before = store.history(sid)
    store.close()
    request_before = cli(capsys, "context", str(sid), "--db", str(db))["request"]

    agent = agent_on(db, workspace, sid)
    # masking archives only on the emergency path
    trigger = Trigger.EMERGENCY if name == "masking" else Trigger.MANUAL
    result = agent.compact(trigger=trigger)
    assert result.compaction.outcome == Outcome.SUCCESS
    assert agent.history.history != history_before
    undone = agent.uncompact()
    assert undone.id == result.compaction.id and undone.undone_at is not None
    assert agent.store.history(sid) == history_before  # message for message
    agent.store.close()

    assert cli(capsys, "context", str(sid), "--db", str(db))["request"] == request_before
    shown = cli(capsys, "show", str(sid), "--db", str(db))
    assert shown["archived_segments"] == []
    [comp] = [c for c in shown["compactions"] if c["id"] == undone.id]
    assert comp["undone_at"] is not None
    if result.summary is not None:  # kept in the archive as superseded
        assert [s["id"] for s in shown["superseded_summaries"]] == [result.summary.id]


def test_undo_restores_summaries_a_replacing_strategy_retired(
    workspace: Path, tmp_path: Path
) -> None:
    db = tmp_path / "replace.db"
    sid = session_with_rounds(db, workspace, "reset-hint", rounds=3)
    agent = agent_on(db, workspace, sid)
    first = agent.compact()
    for i in range(3):
        agent.run(f"read m{i}.py")
    before = agent.store.history(sid)
    second = agent.compact()
    assert second.compaction.stats["superseded_summaries"] == [first.summary.id]
    agent.uncompact()
    assert agent.store.history(sid) == before
    assert [s.id for s in agent.history.history.summaries] == [first.summary.id]


def test_only_the_latest_compaction_can_be_undone(workspace: Path, tmp_path: Path) -> None:
    db = tmp_path / "order.db"
    sid = session_with_rounds(db, workspace, "layered", rounds=6)
    agent = agent_on(db, workspace, sid)
    first = agent.compact()
    for i in range(4):
        agent.run(f"read m{i}.py")
    second = agent.compact()
    with pytest.raises(StoreError, match=f"compaction {first.compaction.id} is not the latest: "
                       f"undo compaction {second.compaction.id} first"):  # fmt: skip
        agent.uncompact(first.compaction.id)
    agent.uncompact(second.compaction.id)
    agent.uncompact(first.compaction.id)
    with pytest.raises(StoreError, match="has no compaction to undo"):
        agent.uncompact()
    assert agent.history.history.summaries == []


def test_an_edited_summary_is_what_the_next_request_carries(
    workspace: Path, tmp_path: Path
) -> None:
    db = tmp_path / "edit.db"
    sid = session_with_rounds(db, workspace, "head-middle-tail")
    agent = agent_on(db, workspace, sid)
    draft = agent.prepare_compaction()
    assert isinstance(draft, CompactionDraft) and draft.summary is not None
    edited = "GOAL AND KEY DECISIONS:\n- the user wants the m*.py modules read; keep m3.py"
    result = agent.commit_compaction(draft, edited)
    assert result.summary is not None and result.summary.content == edited
    stats = result.compaction.stats
    assert stats["edited"] is True and stats["draft_summary"] == draft.summary.content
    request = agent.preview("next").request
    assert request.messages[0]["content"][0]["text"] == edited  # seed 004: a user message
    assert not validate_request(request)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("trigger", [Trigger.MANUAL, Trigger.EMERGENCY])
def test_no_strategy_archives_a_pinned_message(
    name: str, trigger: Trigger, workspace: Path, tmp_path: Path
) -> None:
    db = tmp_path / "pins.db"
    sid = session_with_rounds(db, workspace, name)
    agent = agent_on(db, workspace, sid)
    first_round = [m for m in agent.history.history.messages if m.meta.round == 1]
    tool_msg = next(m for m in first_round if m.role == "tool")
    step_call = next(m for m in first_round if m.tool_calls)
    assert agent.pin([tool_msg.id or 0]) == 1
    agent.compact(trigger=trigger)
    kept = {m.id for m in agent.history.history.messages}
    assert tool_msg.id in kept
    assert step_call.id in kept  # its step stays whole: the call with its result
    assert not validate_request(agent.preview().request)


def test_pin_from_the_shell_by_round(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "cli-pin.db"
    sid = session_with_rounds(db, workspace, "layered", rounds=4)
    data = cli(capsys, "pin", str(sid), "r1", "--db", str(db))
    assert data["pinned"] is True and data["changed"] == len(data["messages"]) == 4
    cli(capsys, "compact", str(sid), "--db", str(db))
    shown = cli(capsys, "show", str(sid), "--db", str(db))
    rounds_left = {m["meta"]["round"] for m in shown["history"]}
    assert 1 in rounds_left and all(
        m["pinned"] for m in shown["history"] if m["meta"]["round"] == 1
    )
    assert main(["pin", str(sid), "bogus", "--db", str(db)]) == 1
    assert "neither a message id nor rN" in capsys.readouterr().err
