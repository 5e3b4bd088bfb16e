"""Every strategy in the live agent: long offline runs, one very long round, switching,
resuming, the emergency path and a crash mid-compaction.

Every request any of these runs sends goes through :func:`validate_request` (the provider
below refuses what the Messages API refuses) and must stay inside the context window.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from engine.compaction.placement import MOCK_USER_PROMPT
from engine.context.builder import validate_request
from engine.llm.base import ProviderError, ProviderRequest, ProviderResponse, StreamText
from engine.llm.offline import OfflineProvider
from engine.messages.tokens import count_request
from engine.models import Outcome, RoundStatus
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store

WINDOW = 30_000
SMALL: dict[str, dict[str, Any]] = {
    "layered": {},
    "reset-hint": {"reset-hint": {"context_limit": WINDOW}},
    "mock-user": {"mock-user": {"trigger_tokens": 4_600, "keep_recent_steps": 1}},
    "message-window": {"message-window": {"max_messages": 12, "keep_last": 6}},
    "head-middle-tail": {},
    "masking": {"masking": {"keep_last_observations": 3}},
}
"""Small numbers for a 30 000-token window (every other number is the seed's). mock-user's
trigger sits just above L1 (~3 400 tokens) and a few projected rounds: its long results go cut
to 2 000 characters (seed 002 step 5), and a compaction that would not shrink is skipped."""


class Validating(OfflineProvider):
    """The offline provider, refusing any request the Messages API would refuse."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ProviderRequest] = []

    def complete(self, request, on_event, cancel=None):  # type: ignore[no-untyped-def]
        problems = validate_request(request)
        assert not problems, problems
        self.requests.append(request)
        return super().complete(request, on_event, cancel)


class Reader(Validating):
    """One Read per step, ``steps`` of them in one round, then a final answer."""

    def __init__(self, files: list[str], steps: int) -> None:
        super().__init__()
        self.files, self.steps, self.issued = files, steps, 0

    def complete(self, request, on_event, cancel=None):  # type: ignore[no-untyped-def]
        problems = validate_request(request)
        assert not problems, problems
        self.requests.append(request)
        if self.issued == self.steps:
            on_event(StreamText(text="read them all"))
            return _response([{"type": "text", "text": "read them all"}], "end_turn")
        self.issued += 1
        path = self.files[self.issued % len(self.files)]
        use = {"type": "tool_use", "id": f"toolu_r{self.issued}", "name": "Read"}
        use["input"] = {"file_path": path}
        return _response([{"type": "text", "text": f"Reading {path}."}, use], "tool_use")


def _response(content: list[dict[str, Any]], stop: str) -> ProviderResponse:
    return ProviderResponse(content=content, stop_reason=stop)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight source files of about 2 700 tokens each (300 numbered lines)."""
    ws = tmp_path_factory.mktemp("ws")
    for n in range(8):
        lines = [f"def function_{n}_{i}(value):  # helper {i} of module {n}" for i in range(300)]
        (ws / f"mod{n}.py").write_text("\n".join(lines) + "\n")
    return ws


def settings_for(name: str, **extra: Any) -> Settings:
    return Settings(
        context_window=WINDOW,
        keep_rounds=3,
        strategy=name,
        strategies=SMALL[name],
        data_dir=None,
        **extra,
    )


def new_agent(
    store: Store, settings: Settings, provider: OfflineProvider, workspace: Path, sid: int | None
) -> Agent:
    session = (
        store.get_session(sid)
        if sid
        else store.create_session(str(workspace), "run", strategy=settings.strategy)
    )
    return Agent(store, session, settings, provider, workspace)


def asks(i: int) -> str:
    return f"read mod{i % 8}.py" if i % 4 else "ls ."


EXPECTED_PLACEMENT = {
    "layered": "system_block",
    "reset-hint": "system_hint",
    "mock-user": "mock_pair",
    "message-window": "assistant_message",
    "head-middle-tail": "user_message",
}


@pytest.mark.parametrize("name", list(SMALL))
def test_forty_asks_compact_several_times_with_valid_requests(
    name: str,
    workspace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = settings_for(name)
    store = Store.open(tmp_path / "runs.db")
    provider = Validating()
    agent = new_agent(store, settings, provider, workspace, None)
    for i in range(40):
        assert agent.run(asks(i)).status == RoundStatus.FINISHED
    peak = max(count_request(r.system, r.messages, r.tools) for r in provider.requests)
    assert peak < WINDOW
    done = [c for c in store.compactions(agent.session_id) if c.outcome == Outcome.SUCCESS]
    sid = agent.session_id
    store.close()

    # `ctxscope context` with the same numbers, from the environment
    monkeypatch.setenv("CTXSCOPE_CONTEXT_WINDOW", str(WINDOW))
    monkeypatch.setenv("CTXSCOPE_STRATEGIES__MASKING__KEEP_LAST_OBSERVATIONS", "3")
    assert main(["context", str(sid), "--json", "--db", str(tmp_path / "runs.db")]) == 0
    shown = json.loads(capsys.readouterr().out)
    request = shown["request"]
    assert not validate_request(ProviderRequest.model_validate(request))
    assert shown["strategy"]["name"] == name
    if name == "masking":
        # no compaction at all; older observations go as one-line placeholders
        assert done == []
        results = [
            b["content"]
            for m in request["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ]
        assert sum(r.startswith("[observation masked: ") for r in results) == len(results) - 3
        return
    assert len(done) >= 2
    assert {c.placement for c in done} == {EXPECTED_PLACEMENT[name]}
    assert shown["strategy"]["placement"] == EXPECTED_PLACEMENT[name]
    first = request["messages"][0]["content"][0]["text"]
    if name == "layered":
        assert request["system"][-1]["text"].startswith("## 📌 Archived Session Summary")
    elif name == "reset-hint":
        assert request["system"][-1]["text"].startswith("[执行历史摘要 - 之前会话已压缩]")
    elif name == "mock-user":
        assert first == MOCK_USER_PROMPT
        assert "<compact_summary>" in request["messages"][1]["content"][0]["text"]
    elif name == "message-window":
        assert request["messages"][1]["role"] == "assistant"
        assert request["messages"][1]["content"][0]["text"].startswith("Summary of the earlier")
    else:
        assert first.startswith("GOAL AND KEY DECISIONS:")


@pytest.mark.parametrize("name", ["mock-user", "head-middle-tail", "masking"])
def test_one_long_round_is_compacted_inside_the_round(
    name: str, workspace: Path, tmp_path: Path
) -> None:
    settings = settings_for(name, max_steps=100)
    store = Store.open(tmp_path / "long.db")
    provider = Reader([f"mod{n}.py" for n in range(8)], steps=64)
    agent = new_agent(store, settings, provider, workspace, None)
    question = "read every module, one at a time"
    outcome = agent.run(question)

    assert outcome.status == RoundStatus.FINISHED and outcome.steps == 65
    assert len(provider.requests) == 65
    for request in provider.requests:
        assert count_request(request.system, request.messages, request.tools) < WINDOW
        texts = [
            b.get("text", "") for m in request.messages if m["role"] == "user" for b in m["content"]
        ]
        assert sum(question in t for t in texts) == 1  # the round's own input, once
    compactions = [c for c in store.compactions(agent.session_id) if c.outcome == "success"]
    if name == "masking":
        assert compactions == []
        last = provider.requests[-1].messages
        masked = [
            b
            for m in last
            for b in m["content"]
            if b.get("type") == "tool_result" and b["content"].startswith("[observation masked")
        ]
        assert len(masked) == 64 - 3
    else:
        assert len(compactions) >= 2
        assert all(c.rounds_compacted == 1 for c in compactions)  # inside round 1 itself


@pytest.mark.parametrize("name", list(SMALL))
def test_emergency_compaction_retries_with_a_valid_request(
    name: str, workspace: Path, tmp_path: Path
) -> None:
    class TooLongOnce(Validating):
        refused = False

        def complete(self, request, on_event, cancel=None):  # type: ignore[no-untyped-def]
            if len(self.requests) == 5 and not self.refused:  # round 3's first request
                self.refused = True
                raise ProviderError("prompt_too_long", "prompt is too long: 230000 tokens")
            return super().complete(request, on_event, cancel)

    settings = settings_for(name)
    store = Store.open(tmp_path / "emergency.db")
    provider = TooLongOnce()
    agent = new_agent(store, settings, provider, workspace, None)
    for i in range(8):
        assert agent.run(asks(i)).status == RoundStatus.FINISHED
    assert provider.refused
    emergency = [c for c in store.compactions(agent.session_id) if c.trigger == "emergency"]
    assert len(emergency) == 1 and emergency[0].outcome in ("success", "fallback")


def test_switching_and_resuming_keep_every_request_valid(workspace: Path, tmp_path: Path) -> None:
    db = tmp_path / "switch.db"
    store = Store.open(db)
    sid: int | None = None
    order = ["layered", "mock-user", "head-middle-tail", "message-window", "reset-hint", "masking"]
    for name in order:
        if sid is not None:
            store.switch_strategy(sid, name)
        settings = settings_for(name)
        provider = Validating()
        agent = new_agent(store, settings, provider, workspace, sid)  # resumed: a new Agent
        assert agent.strategy.name == name
        sid = agent.session_id
        for i in range(8):
            assert agent.run(asks(i)).status == RoundStatus.FINISHED
        assert provider.requests
    assert [w.strategy for w in store.strategy_switches(sid or 0)] == order[1:]
    # a resumed session keeps its strategy even when the settings name another
    resumed = new_agent(store, settings_for("layered"), Validating(), workspace, sid)
    assert resumed.strategy.name == "masking"


def test_ask_refuses_a_silent_strategy_change(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "cli.db")
    base = ["--db", db, "--workspace", str(workspace)]
    assert main(["ask", "ls .", *base, "--strategy", "masking"]) == 0
    capsys.readouterr()
    assert main(["ask", "ls .", "--session", "1", "--db", db, "--strategy", "mock-user"]) == 1
    err = capsys.readouterr().err
    assert "session 1 uses the masking strategy" in err
    assert "ctxscope strategy 1 mock-user" in err
    assert main(["strategy", "1", "mock-user", "--db", db, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["strategy"] == "mock-user"
    assert [(s["previous"], s["strategy"]) for s in data["switches"]] == [("masking", "mock-user")]


CRASH = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from engine.session import Agent
    from engine.settings.config import Settings
    from engine.llm.offline import OfflineProvider
    from engine.models import Trigger
    from engine.store import Store
    from engine.store.archive import ArchiveStore

    def die(self, message_ids, segment):
        os._exit(9)  # summary, compaction and segment rows written; the archive is next

    name, db, ws = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    store = Store.open(db)
    own = {
        "head-middle-tail": {"context_limit": 100000, "tail_retention_ratio": 0.05},
        "message-window": {"keep_last": 4},
    }
    settings = Settings(context_window=30000, keep_rounds=1, strategy=name, strategies=own)
    session = store.create_session(str(ws), "crash", strategy=name)
    agent = Agent(store, session, settings, OfflineProvider(), ws)
    for i in range(4):
        agent.run(f"read mod{i}.py")
    print(session.id, flush=True)
    ArchiveStore._archive_messages = die  # the store's archive part writes the archive
    # masking archives only on the emergency path
    agent.compact(trigger=Trigger.EMERGENCY if name == "masking" else Trigger.MANUAL)
    """
)


@pytest.mark.parametrize("name", list(SMALL))
def test_kill_during_compaction_leaves_a_valid_conversation(
    name: str, workspace: Path, tmp_path: Path
) -> None:
    db = tmp_path / "crash.db"
    proc = subprocess.run(
        [sys.executable, "-c", CRASH, name, str(db), str(workspace)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
        timeout=120,
    )
    assert proc.returncode == 9, proc.stderr
    sid = int(proc.stdout.split()[0])
    store = Store.open(db)
    history = store.history(sid)
    assert history.summaries == [] and store.segments(sid) == []
    assert len([m for m in history.messages if m.role == "user"]) == 4  # nothing archived
    agent = Agent(store, store.get_session(sid), settings_for(name), Validating(), workspace)
    assert not validate_request(agent.preview().request)
    assert agent.run("ls .").status == RoundStatus.FINISHED


def test_debug_mode_stops_an_invalid_request_before_it_is_sent(
    workspace: Path, tmp_path: Path
) -> None:
    from engine.context.history import HistoryManager
    from engine.models import Message, MessageMeta, ToolCall
    from engine.session import InvalidRequest

    store = Store.open(tmp_path / "bad.db")
    settings = settings_for("layered")
    assert settings.validate_requests  # the suite's conftest turns the debug mode on
    provider = Validating()
    agent = new_agent(store, settings, provider, workspace, None)
    manager = HistoryManager(store, agent.session_id, settings)
    for n in (1, 2):  # two rounds whose calls share one id, as a careless import would store
        rnd, _ = manager.open_round(f"round {n}")
        call = ToolCall(id="toolu_same", name="LS", input={"path": "."})
        manager.append(rnd.index, Message(role="assistant", tool_calls=[call]))
        manager.append(
            rnd.index,
            Message(role="tool", content="{}", meta=MessageMeta(tool_use_id="toolu_same")),
        )
        manager.append(
            rnd.index, Message(role="assistant", content="ok", meta=MessageMeta(final=True))
        )
        manager.finish_round(rnd.index, RoundStatus.FINISHED)
    agent = new_agent(store, settings, provider, workspace, agent.session_id)
    with pytest.raises(InvalidRequest, match="duplicate tool_use id toolu_same"):
        agent.run("ls .")
    assert provider.requests == []  # nothing was sent
