"""The loop driven by the offline provider on a real temporary workspace."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from engine.context.builder import validate_conversation
from engine.events import CompactionFinished, Event, ToolStarted
from engine.llm.offline import OfflineProvider
from engine.models import RoundStatus, Trigger, Usage, UsageRecord
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store


def offline_agent(store: Store, ws: Path, **settings: object) -> tuple[Agent, list[Event]]:
    events: list[Event] = []
    conf = Settings(model="offline", **settings)  # type: ignore[arg-type]
    session = store.create_session(str(ws), "offline")
    agent = Agent(store, session, conf, OfflineProvider(conf), ws, events=events.append)
    return agent, events


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "a.md").write_text("alpha\n")
    (ws / "src" / "b.py").write_text("".join(f"x{i} = {i}\n" for i in range(900)))
    (ws / "c.txt").write_text("gamma\n")
    return ws


def test_mentions_are_read_in_order_and_history_keeps_compressed_steps(
    store: Store, tmp_path: Path
) -> None:
    ws = workspace(tmp_path)
    agent, events = offline_agent(store, ws)
    outcome = agent.run("compare @src/b.py with @a.md and @c.txt please")

    assert outcome.status is RoundStatus.FINISHED
    reads = [e.call.input["file_path"] for e in events if isinstance(e, ToolStarted)]
    assert reads == ["src/b.py", "a.md", "c.txt"]
    tools = [m for m in agent.history.history.messages if m.role == "tool"]
    assert [m.meta.tool_name for m in tools] == ["Read", "Read", "Read"]
    kept = json.loads(tools[0].content)
    assert set(kept) == {"status", "data"}  # text, stats and context dropped
    assert kept["data"]["lines"] == "1-500" and kept["data"]["total_lines"] == 900
    full = store.observations(agent.session_id)
    assert [o.tool_use_id for o in full] == [m.meta.tool_use_id for m in tools]
    assert full[0].result["text"] == full[0].text and "x499 = 499" in full[0].text
    assert full[0].result["stats"]  # the observation keeps what history dropped
    assert agent.scratchpad == [] and len(agent.last_scratchpad) == 3
    assert "src/b.py" in outcome.answer


def test_a_small_window_is_never_exceeded(store: Store, tmp_path: Path) -> None:
    """Seed 000 checks only before a round, with the last call's usage (the round's short
    final request), so a round that reads a 500-line file goes over 12 000 tokens mid-round
    (measured: 12 057 in round 2). The engine's last resort archives the earlier rounds
    instead of sending it."""
    ws = workspace(tmp_path)
    agent, events = offline_agent(store, ws, context_window=12_000, keep_rounds=2)
    for _ in range(5):
        assert agent.run("read src/b.py").status is RoundStatus.FINISHED
    done = [e.compaction.trigger for e in events if isinstance(e, CompactionFinished)]
    assert done and set(done) == {Trigger.EMERGENCY}
    usage = [u.usage.input_side for u in store.usages(agent.session_id)]
    assert len(usage) == 10 and max(usage) <= 12_000
    summary = agent.history.history.summaries[0].content
    assert summary.startswith("## 📌 Archived Session Summary")


def test_cancel_while_bash_runs(store: Store, tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    agent, events = offline_agent(store, ws, bash_policy="allow")
    out: dict[str, object] = {}
    runner = threading.Thread(target=lambda: out.update(r=agent.run("run `sleep 30`")))
    began = time.monotonic()
    runner.start()
    while not any(isinstance(e, ToolStarted) for e in events):
        assert time.monotonic() - began < 10
        time.sleep(0.02)
    agent.cancel()
    runner.join(15)
    assert not runner.is_alive() and time.monotonic() - began < 15
    assert out["r"].status is RoundStatus.INTERRUPTED  # type: ignore[attr-defined]
    wire = agent.preview("").request.messages
    assert validate_conversation(wire) == []
    bash = [m for m in agent.history.history.messages if m.role == "tool"][0]
    assert json.loads(bash.content)["status"] == "error"


def test_crash_restart_marks_the_open_round_interrupted(store: Store, tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    agent, _ = offline_agent(store, ws)
    agent.run("read a.md")
    # a crash: the next round is opened and its first step stored, then the process dies
    rnd, _ = agent.history.open_round("read c.txt")
    session = store.get_session(agent.session_id)
    restarted = Agent(store, session, agent.settings, OfflineProvider(), ws)
    rounds = store.rounds(agent.session_id)
    assert [r.status for r in rounds] == [RoundStatus.FINISHED, RoundStatus.INTERRUPTED]
    assert restarted.history.history.messages[-1].meta.interrupted
    assert validate_conversation(restarted.preview("").request.messages) == []
    assert restarted.run("read c.txt").status is RoundStatus.FINISHED


def test_the_last_usage_goes_stale_at_a_compaction_and_comes_back_with_the_next_call(
    store: Store, tmp_path: Path
) -> None:
    """Seed C7: after a compaction the last call's usage describes a history that is gone, so
    it is not used (the local count stands in) until the next call measures again."""
    ws = workspace(tmp_path)
    agent, _ = offline_agent(store, ws, keep_rounds=1)
    for text in ("read a.py", "ls .", "read a.py"):
        agent.run(text)
    measured = store.last_usage(agent.session_id)
    assert measured is not None and agent.last_usage() == measured.usage.input_side
    assert agent.compact().summary is not None
    assert agent.last_usage() is None
    agent.compact()  # nothing left to compact: no summary written, still stale
    assert agent.last_usage() is None
    agent.run("ls .")
    again = store.last_usage(agent.session_id)
    assert again is not None and again.id != measured.id
    assert agent.last_usage() == again.usage.input_side


def test_within_one_lease_the_last_usage_follows_the_agents_own_writes(
    store: Store, tmp_path: Path
) -> None:
    """While the agent holds the writer lease no one else writes the session: the last usage
    and the last summary-writing compaction are asked for once, then follow what the agent
    writes — each call's usage, a compaction that makes it stale. A record another writer
    stores between two leases is seen by the next."""
    ws = workspace(tmp_path)
    agent, _ = offline_agent(store, ws, keep_rounds=1)
    seen = []
    with agent.writing("test"):
        assert agent.last_usage() is None
        for text in ("read a.py", "ls .", "read a.py"):
            agent.run(text)
            measured = store.last_usage(agent.session_id)
            assert measured is not None and agent.last_usage() == measured.usage.input_side
            seen.append(measured.usage.input_side)
        assert len(set(seen)) == 3  # each call measured something else
        assert agent.compact().summary is not None
        assert agent.last_usage() is None
        agent.run("ls .")
        again = store.last_usage(agent.session_id)
        assert again is not None and agent.last_usage() == again.usage.input_side
    store.add_usage(
        UsageRecord(
            session_id=agent.session_id,
            round_index=None,
            step=None,
            usage=Usage(input_tokens=12_345),
        )
    )
    with agent.writing("test"):
        assert agent.last_usage() == 12_345


def test_an_automatic_compaction_records_the_measure_that_fired_it(
    store: Store, tmp_path: Path
) -> None:
    """Issue 39: the round-start check fires on "last usage + input estimate", but the
    compaction's record measured again without the input, and said ``"7,000 >= 8,000",
    fired: false`` of a trigger that did fire. Here the input alone tips the measure over the
    threshold: the record says the measure that fired, value at or over its threshold."""
    ws = workspace(tmp_path)
    agent, _ = offline_agent(store, ws, context_window=20_000, keep_rounds=1, min_messages=1)
    for text in ("read @a.md", "read @c.txt", "read @a.md"):
        assert agent.run(text).status is RoundStatus.FINISHED
    idle = agent.plan("").measure
    assert not idle.fires  # without the input: under the threshold
    words = 50
    while not agent.plan(" ".join(["word"] * words)).measure.fires:
        words += 50
    assert agent.run(" ".join(["word"] * words)).status is RoundStatus.FINISHED
    [auto] = [c for c in store.compactions(agent.session_id) if c.trigger == Trigger.AUTO]
    assert auto.stats["fired"] is True
    measured = auto.stats["measured"]
    assert measured.startswith("local count + input estimate ") and " >= " in measured
    assert measured.endswith(": fires")
    value, threshold = (
        int(x.replace(",", "")) for x in measured.removesuffix(": fires").rsplit(" ", 3)[1::2]
    )
    assert value >= threshold == int(0.8 * 20_000)
