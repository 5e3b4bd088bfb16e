"""Counterfactual replay: checked against a live session, against hand-worked compaction points,
and for leaving the original untouched."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from cli.main import main
from engine.llm.offline import OfflineProvider
from engine.models import RoundStatus
from engine.replay.runner import replay
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store

ASKS = [
    "read m0.py",
    "read m1.py",
    "ls .",
    "read m2.py",
    "read m3.py",
    "grep def in m1.py",
    "read m0.py",
    "read m2.py",
    "ls .",
    "read m1.py",
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(4):
        lines = [f"def f{n}_{i}(x):  # line {i} of module {n}" for i in range(250)]
        (ws / f"m{n}.py").write_text("\n".join(lines) + "\n")
    return ws


def live_session(db: Path, workspace: Path, settings: Settings) -> int:
    store = Store.open(db)
    session = store.create_session(str(workspace), "live", strategy=settings.strategy)
    agent = Agent(store, session, settings, OfflineProvider(), workspace)
    for text in ASKS:
        assert agent.run(text).status == RoundStatus.FINISHED
    store.close()
    assert session.id is not None
    return session.id


def test_replay_under_layered_reproduces_the_live_requests(workspace: Path, tmp_path: Path) -> None:
    settings = Settings(context_window=20_000, keep_rounds=2)
    db = tmp_path / "live.db"
    sid = live_session(db, workspace, settings)
    store = Store.open(db)
    usages = store.usages(sid)
    live_compactions = [c for c in store.compactions(sid) if c.outcome == "success"]
    assert len(live_compactions) >= 2  # the live run did compact

    replayed = replay(store, sid, "layered", settings, workspace)
    # every recorded call, with the token count the live agent counted for it
    assert [s.tokens for s in replayed.steps] == [u.local_estimate for u in usages]
    assert all(s.original is None for s in replayed.steps)  # not imported: no hidden prefix
    # and the same compaction points: the step each compaction came before
    live_points = [
        sum(1 for u in usages if u.created_at <= c.created_at) + 1 for c in live_compactions
    ]
    assert [c.step for c in replayed.compactions if c.outcome == "success"] == live_points
    store.close()


def test_each_strategy_fires_where_its_rule_says(workspace: Path, tmp_path: Path) -> None:
    # Every ask is one Read or LS/Grep and one answer: 2 model calls per round (20 steps).
    settings = Settings(context_window=20_000, keep_rounds=2)
    db = tmp_path / "live.db"
    sid = live_session(db, workspace, settings)
    store = Store.open(db)

    # message-window with max 8 / keep 4: after round 2 history holds 8 messages (4 per
    # round: input, call, result, answer): not more than 8; after round 3 it holds 12 > 8,
    # so the compaction comes before round 4's first request, step 7 (2 calls per round)
    window = Settings(
        context_window=20_000, strategies={"message-window": {"max_messages": 8, "keep_last": 4}}
    )
    mw = replay(store, sid, "message-window", window, workspace)
    assert [c.step for c in mw.compactions][:1] == [7]
    # masking never archives; the first step whose request masks anything is the one where
    # the observations passed K = 2: round 3's second call sees 3 results (rounds 1-3)
    masking = Settings(context_window=20_000, strategies={"masking": {"keep_last_observations": 2}})
    masked = replay(store, sid, "masking", masking, workspace)
    assert masked.compactions == []
    assert masked.steps[5].tokens < replayed_unmasked(store, sid, workspace).steps[5].tokens
    store.close()


def replayed_unmasked(store: Store, sid: int, workspace: Path):  # type: ignore[no-untyped-def]
    many = Settings(context_window=20_000, strategies={"masking": {"keep_last_observations": 99}})
    return replay(store, sid, "masking", many, workspace)


def test_the_replayed_session_stays_byte_identical(workspace: Path, tmp_path: Path) -> None:
    settings = Settings(context_window=20_000, keep_rounds=2)
    db = tmp_path / "live.db"
    sid = live_session(db, workspace, settings)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    store = Store.open(db)
    for name in ("layered", "reset-hint", "mock-user", "message-window", "head-middle-tail",
                 "masking"):  # fmt: skip
        result = replay(store, sid, name, settings, workspace)
        assert len(result.steps) == 20
    store.close()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_replay_command_compares_strategies(
    workspace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings(context_window=20_000, keep_rounds=2)
    db = tmp_path / "live.db"
    sid = live_session(db, workspace, settings)
    monkeypatch.setenv("CTXSCOPE_CONTEXT_WINDOW", "20000")
    monkeypatch.setenv("CTXSCOPE_KEEP_ROUNDS", "2")
    csv = tmp_path / "cmp.csv"
    argv = ["replay", str(sid), "--db", str(db), "--strategy", "layered,masking", "--json"]
    assert main([*argv, "--csv", str(csv)]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["strategy"]: r for r in data["strategies"]}
    assert set(rows) == {"layered", "masking"}
    assert rows["layered"]["steps"] == rows["masking"]["steps"] == 20
    assert rows["layered"]["compactions"] >= 2
    # masking never compacts by its own rule; the engine's last resort keeps every request
    # inside the 20 000 window (the live run, without it, went over)
    assert rows["layered"]["peak"] <= 20_000 and rows["masking"]["peak"] <= 20_000
    assert len(data["series"]["layered"]) == 20
    assert csv.read_text().splitlines()[0].startswith("strategy,steps,compactions,peak")
    assert main(["replay", str(sid), "--db", str(db), "--strategy", "nope"]) == 1
    assert "unknown strategy 'nope'" in capsys.readouterr().err


def test_recall_sees_what_a_replacing_summary_forgets(workspace: Path, tmp_path: Path) -> None:
    settings = Settings(
        context_window=20_000,
        keep_rounds=2,
        strategies={"reset-hint": {"context_limit": 9_000}},  # fires after most rounds
    )
    db = tmp_path / "live.db"
    sid = live_session(db, workspace, Settings(context_window=20_000, keep_rounds=2))
    store = Store.open(db)
    layered = replay(store, sid, "layered", settings, workspace)
    reset = replay(store, sid, "reset-hint", settings, workspace)
    store.close()
    # layered appends summaries: every request of the session is still named at the end
    assert layered.recall_last()["request"] == 1.0
    # reset-hint replaces its hint: requests summarised by an earlier hint are gone
    assert len(reset.compactions) >= 2
    assert reset.recall_min()["request"] is not None and reset.recall_min()["request"] < 1.0
    assert [s.step for s in reset.steps if s.recall is not None][-1] == 20  # measured at the end


def test_a_replay_stops_at_a_step_with_the_request_it_sends(
    workspace: Path, tmp_path: Path
) -> None:
    settings = Settings(context_window=20_000, keep_rounds=2)
    db = tmp_path / "live.db"
    sid = live_session(db, workspace, settings)
    store = Store.open(db)
    seen: dict[int, int] = {}

    def at_step(step: int, agent: Agent) -> bool:
        seen[step] = agent.preview().total
        return step == 5

    partial = replay(store, sid, "layered", settings, workspace, at_step=at_step)
    whole = replay(store, sid, "layered", settings, workspace)
    assert len(partial.steps) == 5 and sorted(seen) == [1, 2, 3, 4, 5]
    # the agent's preview at a step is the very request the replay counted there
    assert [seen[n] for n in range(1, 6)] == [s.tokens for s in whole.steps[:5]]
    # layered's threshold is 0.8 × the 20 000-token window
    assert whole.threshold == 16_000
    store.close()


def test_reset_hint_fires_after_each_round_whose_last_call_passed_its_threshold(
    workspace: Path, tmp_path: Path
) -> None:
    # Seed 001: after a round, the last call's prompt tokens > 0.8 × context_limit. With
    # context_limit 6 000 the threshold is 4 800: the compaction must come before the first
    # request of the round after every round whose last request counted more than 4 800, and
    # nowhere else. (The series itself is checked against the live agent's counts above.)
    settings = Settings(context_window=20_000, keep_rounds=2)
    db = tmp_path / "live.db"
    sid = live_session(db, workspace, settings)
    store = Store.open(db)
    hint = Settings(context_window=20_000, strategies={"reset-hint": {"context_limit": 6_000}})
    result = replay(store, sid, "reset-hint", hint, workspace)
    store.close()
    assert result.threshold == 4_800
    last_of_round = {s.round: s for s in result.steps}
    first_of_round = {}
    for s in result.steps:
        first_of_round.setdefault(s.round, s)
    expected = [
        first_of_round[r + 1].step
        for r, s in sorted(last_of_round.items())
        if r + 1 in first_of_round and s.tokens > 4_800
    ]
    assert expected  # the fixture does cross the threshold
    assert [c.step for c in result.compactions if c.outcome == "success"] == expected


def test_an_imported_session_is_also_counted_in_the_original_agents_terms(
    workspace: Path, tmp_path: Path
) -> None:
    from engine.recordings.hidden import hidden_prefix
    from engine.recordings.importing import import_session

    store = Store.open(tmp_path / "imp.db")
    data = Path(__file__).resolve().parents[2] / "data" / "recorded_session.jsonl"
    sid = import_session(store, data, str(workspace), 4000).session.id
    assert sid is not None
    hidden = hidden_prefix(store, sid)
    assert hidden is not None and hidden.tokens > 0
    result = replay(store, sid, "layered", Settings(), workspace)
    # every step: the original agent's hidden prefix instead of ctxscope's L1 + L2, the same
    # conversation; so original − local is one constant, hidden − (L1 + L2)
    differences = {s.original - s.tokens for s in result.steps if s.original is not None}
    assert len(differences) == 1 and len(result.steps) == 8
    assert result.total_original == sum(s.tokens for s in result.steps) + 8 * differences.pop()
    live = replay(
        store, sid, "layered", Settings(), workspace
    )  # the same session, a second time: unchanged figures
    assert [s.original for s in live.steps] == [s.original for s in result.steps]
    store.close()


@pytest.mark.parametrize(
    "sample", ["mini_swe_agent.traj.json", "swe_agent.traj", "ide_session.jsonl"]
)
def test_recall_is_whole_when_nothing_was_compacted(sample: str, tmp_path: Path) -> None:
    """Nothing of these short samples is compacted, so every request holds everything recorded
    before it: their wrapped task, their demonstrations, every command sent so far (one holds
    quotes: `sed -i 's/version = "1.4.0"/…/'`). The last call's own command is its output,
    not part of its request."""
    from engine.recordings.importing import import_session

    store = Store.open(tmp_path / "r.db")
    data = Path(__file__).resolve().parents[2] / "data" / sample
    report = import_session(store, data, str(tmp_path), settings=Settings())
    assert report.session.id is not None
    result = replay(store, report.session.id, "layered", Settings(), tmp_path)
    assert result.compactions == []
    measured = [s.recall for s in result.steps if s.recall is not None]
    assert measured and all(v in (None, 1.0) for r in measured for v in r.values())
    assert result.recall_last()["command"] == 1.0 and result.recall_last()["request"] == 1.0


def test_a_replay_keeps_its_session_files_out_of_the_users_data_folder(
    workspace: Path, tmp_path: Path
) -> None:
    """A replay writes nothing outside its scratch folder, whatever data folder the user set."""
    live_data = tmp_path / "live-data"
    settings = Settings(context_window=20_000, keep_rounds=2, data_dir=live_data)
    store = Store.open(tmp_path / "live.db")
    session = store.create_session(str(workspace), "live", strategy="layered")
    agent = Agent(store, session, settings, OfflineProvider(), workspace)
    for n in [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]:
        assert agent.run(f"read m{n}.py").status == RoundStatus.FINISHED
    assert session.id is not None
    before = sorted(p.relative_to(live_data) for p in live_data.rglob("*"))

    users = tmp_path / "users-data"
    theirs = settings.model_copy(update={"data_dir": users})
    # head-middle-tail writes a raw middle at each compaction (seed 004), message-window an
    # execution log entry after each round (seed 003): in the scratch folder only
    hmt = replay(store, session.id, "head-middle-tail", theirs, workspace)
    assert any(c.outcome == "success" for c in hmt.compactions)
    replay(store, session.id, "message-window", theirs, workspace)
    store.close()
    assert not users.exists()
    assert sorted(p.relative_to(live_data) for p in live_data.rglob("*")) == before
