"""No strategy ever sends a request larger than the window (issue 20, "Always fits").

The provider here is the offline one with the session's settings, so it refuses any request
over ``context_window`` as the Messages API does ("prompt is too long"); it also records the
size of every request the engine tried to send.

The figures: 30 files of 300 lines of ~55 characters; one file read whole (with line numbers)
is about 6 000 tokens, so 30 of them are far over a 30 000-token window.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.context.builder import validate_request
from engine.events import Event, Notice
from engine.llm.base import ProviderError
from engine.llm.offline import OfflineProvider
from engine.messages.tokens import count_request
from engine.models import Outcome, RoundStatus
from engine.session import Agent
from engine.session.fitting import SET_ASIDE
from engine.session.fitting import UNSHRINKABLE as SET_ASIDE_NOT
from engine.settings.config import Settings
from engine.store import Store

WINDOW = 30_000
FILES = 30
SMALL: dict[str, dict[str, Any]] = {
    "layered": {},
    "reset-hint": {"reset-hint": {"context_limit": WINDOW}},
    "mock-user": {"mock-user": {"trigger_tokens": 8_000, "keep_recent_steps": 1}},
    "message-window": {"message-window": {"max_messages": 12, "keep_last": 6}},
    "head-middle-tail": {},
    "masking": {"masking": {"keep_last_observations": 3}},
}


OWN_ROOM = {"mock-user", "masking"}
"""Strategies whose own projection makes room for 30 results: seed 002 sends a result over
5 000 characters as its first and last 1 000 (each read here is ~16 000 characters), masking
sends only the last 3 observations whole. The others need the engine's last resort."""


class Recording(OfflineProvider):
    """The offline provider with the window; every attempted request's size is kept."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.sizes: list[int] = []
        self.refused = 0

    def complete(self, request, on_event, cancel=None):  # type: ignore[no-untyped-def]
        assert not validate_request(request)
        self.sizes.append(count_request(request.system, request.messages, request.tools))
        try:
            return super().complete(request, on_event, cancel)
        except ProviderError:
            self.refused += 1
            raise


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("fits")
    for n in range(FILES):
        lines = [f"def function_{n}_{i}(value):  # helper {i} of module {n}" for i in range(300)]
        (ws / f"f{n}.py").write_text("\n".join(lines) + "\n")
    return ws


def run_one_round(
    name: str, workspace: Path, db: Path, text: str
) -> tuple[Agent, Recording, list[Event], Any]:
    settings = Settings(
        context_window=WINDOW,
        keep_rounds=3,
        strategy=name,
        strategies=SMALL[name],
        data_dir=None,
        atfile_max=FILES,
    )
    store = Store.open(db)
    session = store.create_session(str(workspace), "fits", strategy=name)
    events: list[Event] = []
    provider = Recording(settings)
    agent = Agent(store, session, settings, provider, workspace, events=events.append)
    # an earlier round first: the last resort must also be able to archive earlier history
    assert agent.run("read f0.py").status == RoundStatus.FINISHED
    outcome = agent.run(text)
    return agent, provider, events, outcome


def test_the_offline_provider_refuses_a_request_over_the_window(workspace: Path) -> None:
    """The API's answer to an oversized prompt: 400 "prompt is too long: N tokens > M
    maximum"; the offline provider gives the same kind of error."""
    settings = Settings(context_window=1_000)
    from engine.messages.request import ProviderRequest

    request = ProviderRequest(
        model="offline",
        max_tokens=100,
        system=[{"type": "text", "text": "word " * 2_000}],
        messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        tools=[],
    )
    with pytest.raises(ProviderError) as caught:
        OfflineProvider(settings).complete(request, lambda _e: None)
    assert caught.value.kind == "prompt_too_long"
    assert str(caught.value).startswith("prompt is too long: ")
    assert str(caught.value).endswith(" tokens > 1000 maximum")


@pytest.mark.parametrize("name", list(SMALL))
def test_thirty_parallel_reads_in_one_step_fit_the_window(
    name: str, workspace: Path, tmp_path: Path
) -> None:
    """One answer with 30 Read calls: their results alone are ~80 000 tokens, so only the
    last resort (observations set aside, oldest first) can make the next request fit."""
    text = "\n".join(f"read f{n}.py" for n in range(FILES))
    agent, provider, events, outcome = run_one_round(name, workspace, tmp_path / "p.db", text)

    assert outcome.status == RoundStatus.FINISHED
    assert outcome.steps == 2  # the 30 calls, then the report
    assert provider.refused == 0
    assert max(provider.sizes) <= WINDOW
    notices = [e.message for e in events if isinstance(e, Notice) and "-token window" in e.message]
    # the report still names each of the 30 reads: every call kept its tool_use
    assert sum(f"Read f{n}.py:" in outcome.answer for n in range(FILES)) == FILES
    if name in OWN_ROOM:
        assert notices == [] and SET_ASIDE not in outcome.answer
    else:
        assert len(notices) == 1
        assert "set aside" in notices[0] and "(Read f0.py, Read f1.py," in notices[0]
        assert SET_ASIDE in outcome.answer
    bad = [c for c in agent.store.compactions(agent.session_id) if c.outcome == Outcome.FAILED]
    assert bad == []


@pytest.mark.parametrize("name", list(SMALL))
def test_a_chain_of_thirty_single_reads_fits_and_finishes(
    name: str, workspace: Path, tmp_path: Path
) -> None:
    """Issue 20, deviation 1: 30 mentioned files, read one per step — seed 000 C3: "Read 调用：
    模型必须按顺序逐个调用 Read 工具获取内容" (the model must call Read for each file, in
    order, one by one): 31 steps, never a file read twice — a compaction inside the round must
    not make the offline model lose its plan (it comes from the round's input)."""
    text = " ".join(f"@f{n}.py" for n in range(FILES)) + " please"
    agent, provider, events, outcome = run_one_round(name, workspace, tmp_path / "c.db", text)

    assert outcome.status == RoundStatus.FINISHED, outcome.error
    assert outcome.steps == FILES + 1
    assert provider.refused == 0
    assert max(provider.sizes) <= WINDOW
    reads = [
        c.input["file_path"]
        for m in agent.store.all_messages(agent.session_id)
        if m.meta.round == 2
        for c in m.tool_calls
    ]
    assert reads == [f"f{n}.py" for n in range(FILES)]
    for comp in agent.store.compactions(agent.session_id):
        assert comp.outcome in (Outcome.SUCCESS, Outcome.FALLBACK, Outcome.SKIPPED)
        if comp.outcome != Outcome.SKIPPED:
            assert comp.tokens_after < comp.tokens_before


def test_masking_after_prompt_too_long_repeats_no_tool_use_id(
    workspace: Path, tmp_path: Path
) -> None:
    """Issue 20, deviation 13: after a simulated "prompt is too long" inside a round, the
    emergency cut archives the round's older steps; the offline model must not number its next
    call as one already made (the Messages API refuses a request with a repeated
    ``tool_use`` id; seed 000 B: "工具调用完整性：tool_use / tool_result 必须成对保留，不得拆分"
    — each tool_use and its tool_result stay a pair, which a repeated id breaks)."""

    class TooLongOnce(Recording):
        def complete(self, request, on_event, cancel=None):  # type: ignore[no-untyped-def]
            if len(self.sizes) == 6 and not self.refused:
                self.sizes.append(0)
                self.refused += 1
                raise ProviderError("prompt_too_long", "prompt is too long: 230000 tokens")
            ids = [
                b["id"]
                for m in request.messages
                if isinstance(m["content"], list)
                for b in m["content"]
                if b.get("type") == "tool_use"
            ]
            assert len(ids) == len(set(ids)), ids
            return super().complete(request, on_event, cancel)

    settings = Settings(strategy="masking", data_dir=None, atfile_max=FILES)
    store = Store.open(tmp_path / "m.db")
    session = store.create_session(str(workspace), "m", strategy="masking")
    provider = TooLongOnce(settings)
    agent = Agent(store, session, settings, provider, workspace)
    outcome = agent.run(" ".join(f"@f{n}.py" for n in range(10)))
    assert outcome.status == RoundStatus.FINISHED and provider.refused == 1
    calls = [c.id for m in store.all_messages(agent.session_id) for c in m.tool_calls]
    assert len(calls) == 10 and len(set(calls)) == 10


def test_an_observation_set_aside_is_found_by_recall(workspace: Path, tmp_path: Path) -> None:
    """Issue 20: the round's older observations go "(recallable, with a pointer in their
    place)". While the round runs, the pointer names f1.py's read, and Recall (the tool the
    agent calls, through its context) finds a line only f1.py holds: ``def function_1_17``
    (written by the ``workspace`` fixture), marked as set aside, not as an archived segment."""
    from tools.recall import hit_line

    seen: dict[str, Any] = {}

    class Probing(Recording):
        def complete(self, request, on_event, cancel=None):  # type: ignore[no-untyped-def]
            sent = str(request.messages)
            if SET_ASIDE in sent and "hits" not in seen:
                seen["hits"] = agent.tool_ctx.recall("function_1_17", 3)
                seen["none"] = agent.tool_ctx.recall("no_such_word_anywhere", 3)
            return super().complete(request, on_event, cancel)

    settings = Settings(context_window=WINDOW, strategy="layered", data_dir=None, atfile_max=FILES)
    store = Store.open(tmp_path / "r.db")
    session = store.create_session(str(workspace), "recall", strategy="layered")
    agent = Agent(store, session, settings, Probing(settings), workspace)
    text = "\n".join(f"read f{n}.py" for n in range(FILES))
    assert agent.run(text).status == RoundStatus.FINISHED

    hits = seen["hits"]
    assert len(hits) == 1
    assert hits[0].segment_id is None and hits[0].round == 1 and hits[0].tool_name == "Read"
    assert "[function_1_17]" in hits[0].snippet and "helper 17 of module 1" in hits[0].snippet
    assert hit_line(hits[0].model_dump()).startswith("set aside · round 1 · message ")
    assert seen["none"] == []


def test_too_long_counts_the_recorded_agents_prefix(workspace: Path, tmp_path: Path) -> None:
    """Issue 39: a replay plans with the recorded agent's hidden prefix beside what ctxscope
    builds; the round that cannot fit said "needs 19,408 tokens … over the 32,000-token
    window", leaving out the prefix (22,519 tokens), so the figure was under the window. The
    figure now counts it, and says so."""
    settings = Settings(
        context_window=WINDOW,
        keep_rounds=3,
        strategy="layered",
        data_dir=None,
        atfile_max=FILES,
    )
    store = Store.open(tmp_path / "c.db")
    session = store.create_session(str(workspace), "prefix", strategy="layered")
    agent = Agent(store, session, settings, Recording(settings), workspace)
    question = "read f1.py"
    # room beside the prefix for what cannot shrink (system, tools, the input) and 50 more
    fixed = sum(agent.core.build(question).layers[k] for k in SET_ASIDE_NOT)
    prefix = WINDOW - fixed - 50
    agent.extra_prefix_tokens = prefix
    outcome = agent.run(question)
    assert outcome.status == RoundStatus.ERROR and outcome.error is not None, outcome
    needs = int(outcome.error.split("needs ")[1].split(" tokens")[0].replace(",", ""))
    assert needs > WINDOW  # "over the window" is true of the figure given
    assert f"the recorded agent's {prefix:,}-token prefix included" in outcome.error
