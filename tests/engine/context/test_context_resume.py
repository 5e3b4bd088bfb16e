"""The context builder resumes its last wire after a change in the middle of history (a
projection such as masking's moving window): every request must equal, byte for byte, the one
a builder with no memory of earlier builds makes, and the earlier request must stay as sent."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from engine.context.builder import BuiltContext, ContextBuilder, ScratchStep, validate_request
from engine.llm.offline import OfflineProvider
from engine.messages import wire as wire_module
from engine.models import History, Message, MessageMeta, RoundStatus, ToolCall
from engine.replay.runner import replay
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store

TOOLS: list[dict[str, Any]] = [
    {
        "name": "Read",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
    }
]
SYSTEM = "You are a test agent."


def one_round(n: int) -> list[Message]:
    """Input, a one-call step, a two-call step (one result an error), the answer."""

    def tool(use_id: str, text: str, error: bool = False) -> Message:
        meta = MessageMeta(tool_use_id=use_id, tool_name="Read", is_error=error)
        return Message(role="tool", content=text, meta=meta)

    def call(use_id: str) -> ToolCall:
        return ToolCall(id=use_id, name="Read", input={"file_path": f"{use_id}.py"})

    return [
        Message(role="user", content=f"question {n}"),
        Message(role="assistant", content=f"read {n}", tool_calls=[call(f"t{n}a")]),
        tool(f"t{n}a", f"lines of t{n}a"),
        Message(role="assistant", content="two more", tool_calls=[call(f"t{n}b"), call(f"t{n}c")]),
        tool(f"t{n}b", f"lines of t{n}b"),
        tool(f"t{n}c", "no such file", error=True),
        Message(role="assistant", content=f"answer {n}", meta=MessageMeta(final=True)),
    ]


def sent(built: BuiltContext) -> str:
    """The request as bytes on the wire (what the API would receive)."""
    return json.dumps(built.request.model_dump(), sort_keys=True)


def fresh_build(tmp_path: Path, history: History, question: str) -> BuiltContext:
    return ContextBuilder(tmp_path, Settings(), TOOLS, SYSTEM).build(history, [], question)


def masked(msg: Message) -> Message:
    return msg.model_copy(update={"content": "[observation masked]", "tokens": None})


@pytest.mark.parametrize(
    ("index", "change"),
    [
        (9, masked),  # round 2's first result: the turn it opens is placed again
        (12, masked),  # the second result of a two-call step: its turn began one message back
        (15, lambda m: m.model_copy(update={"content": "other question"})),  # an input
        (16, lambda m: m.model_copy(update={"content": "other thought"})),  # an assistant turn
        # a result turned into a user text: a turn of its own before the next result
        (11, lambda m: Message(role="user", content="a note instead of the result")),
        # a step turned into a user text: it merges into the input's turn, which the first
        # request also holds (so it must be a copy)
        (8, lambda m: Message(role="user", content="a note instead of the step")),
        # a call dropped from a step: its result is now an orphan, sent as text (a warning)
        (10, lambda m: m.model_copy(update={"tool_calls": m.tool_calls[:1]})),
    ],
)
def test_a_change_in_the_middle_resumes_and_builds_what_a_fresh_builder_builds(
    tmp_path: Path, index: int, change: Any
) -> None:
    messages = [m for n in range(1, 5) for m in one_round(n)]
    builder = ContextBuilder(tmp_path, Settings(), TOOLS, SYSTEM)
    first = builder.build(History(messages=messages), [], "next")
    first_bytes = sent(first)
    changed = [*messages[:index], change(messages[index]), *messages[index + 1 :]]
    got = builder.build(History(messages=changed), [], "next")
    want = fresh_build(tmp_path, History(messages=changed), "next")
    assert sent(got) == sent(want)
    assert got.layers == want.layers and got.total == want.total
    assert got.warnings == want.warnings
    assert not validate_request(got.request)
    # resumed, not rebuilt: round 1's turns are the very dicts of the first request
    assert got.request.messages[0] is first.request.messages[0]
    assert got.request.messages[3] is first.request.messages[3]
    # and the first request was not touched by the second build
    assert sent(first) == first_bytes


def test_the_orphan_warning_is_reported_once_after_a_resume(tmp_path: Path) -> None:
    # round 1's second step loses its calls: its two results are sent as text, with a warning
    # each, in a full build and in a resumed one alike (round 2 is resumed from the first
    # build's wire)
    messages = [m for n in range(1, 3) for m in one_round(n)]
    messages[3] = messages[3].model_copy(update={"tool_calls": []})
    builder = ContextBuilder(tmp_path, Settings(), TOOLS, SYSTEM)
    builder.build(History(messages=messages), [], "q")
    changed = [*messages[:9], masked(messages[9]), *messages[10:]]
    got = builder.build(History(messages=changed), [], "q")
    assert got.warnings == [
        "tool result t1b has no matching call; sent as text",
        "tool result t1c has no matching call; sent as text",
    ]
    assert got.warnings == fresh_build(tmp_path, History(messages=changed), "q").warnings


def test_a_history_change_before_the_first_turn_rebuilds(tmp_path: Path) -> None:
    messages = one_round(1)
    builder = ContextBuilder(tmp_path, Settings(), TOOLS, SYSTEM)
    first = builder.build(History(messages=messages), [], "q")
    changed = [messages[0].model_copy(update={"content": "another start"}), *messages[1:]]
    got = builder.build(History(messages=changed), [], "q")
    assert got.request.messages[0]["content"] == [{"type": "text", "text": "another start"}]
    assert first.request.messages[0]["content"] == [{"type": "text", "text": "question 1"}]
    assert sent(got) == sent(fresh_build(tmp_path, History(messages=changed), "q"))


def test_a_chain_of_resumed_builds_leaves_every_request_sent_before_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each build takes the last build's wire over (a resumed state is used up): a chain of
    them — grown after a question joined the last turn, grown, changed in the middle, grown,
    the same again, after a build that failed half-way — builds what a fresh builder builds,
    and no request sent before changes."""
    messages = [m for n in range(1, 6) for m in one_round(n)]
    middle = [*messages[:9], masked(messages[9]), *messages[10:21]]
    # the first ends with results: the question joins their user turn in that request
    chain = [messages[:13], messages[:14], messages[:21], middle, [*middle, *messages[21:28]]]
    chain.append(list(chain[-1]))
    builder = ContextBuilder(tmp_path, Settings(), TOOLS, SYSTEM)
    sent_before: list[tuple[BuiltContext, str]] = []
    for history in chain:
        got = builder.build(History(messages=history), [], "next")
        assert sent(got) == sent(fresh_build(tmp_path, History(messages=history), "next"))
        assert all(sent(built) == as_sent for built, as_sent in sent_before)
        sent_before.append((got, sent(got)))
    # a build that fails after placing some of another history leaves no half-placed wire
    # behind: the next build of the last history built is still what a fresh builder builds
    place = wire_module.Wire.add_history

    def fails_half_way(wire: Any, history: list[Message], found: list[str], start: int) -> None:
        place(wire, history[:3], found, start)
        raise RuntimeError("placing failed")

    monkeypatch.setattr(wire_module.Wire, "add_history", fails_half_way)
    with pytest.raises(RuntimeError):
        builder.build(History(messages=messages), [], "next")
    monkeypatch.undo()
    for history in (chain[-1], messages):
        got = builder.build(History(messages=history), [], "next")
        assert sent(got) == sent(fresh_build(tmp_path, History(messages=history), "next"))
    assert all(sent(built) == as_sent for built, as_sent in sent_before)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(3):
        (ws / f"m{n}.py").write_text("".join(f"x{n}_{i} = {i}\n" for i in range(80)))
    return ws


def test_masking_replay_sends_at_every_step_what_a_fresh_builder_builds(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Masking (keep 2) changes a message in the middle of history at nearly every round; the
    builder resumes before it. Each request is checked against a builder that never resumes."""
    settings = Settings(context_window=50_000, keep_rounds=2)
    store = Store.open(tmp_path / "live.db")
    session = store.create_session(str(workspace), "live", strategy="layered")
    agent = Agent(store, session, settings, OfflineProvider(), workspace)
    for text in ["read m0.py", "read m1.py", "ls .", "read m2.py", "read m0.py", "ls ."] * 2:
        assert agent.run(text).status == RoundStatus.FINISHED
    assert session.id is not None

    original_build = ContextBuilder.build
    checked: list[int] = []

    def build(
        self: ContextBuilder,
        history: History,
        scratchpad: list[ScratchStep],
        question: str,
        todo_recap: str = "",
        *,
        injected_system: Sequence[str] = (),
    ) -> BuiltContext:
        got = original_build(
            self, history, scratchpad, question, todo_recap, injected_system=injected_system
        )
        fresh = ContextBuilder(self.workspace, self.settings, self.tools, self.system_prompt)
        want = original_build(
            fresh, history, scratchpad, question, todo_recap, injected_system=injected_system
        )
        assert sent(got) == sent(want), f"build {len(checked) + 1}"
        assert got.layers == want.layers and got.warnings == want.warnings
        checked.append(got.total)
        return got

    resumed_at: list[int] = []
    original_resume_at = wire_module.Wire.resume_at.__func__  # type: ignore[attr-defined]

    def resume_at(cls: Any, state: Any, at: int, layers: Any, warnings: Any) -> Any:
        resumed_at.append(state.marks[at].index)
        return original_resume_at(cls, state, at, layers, warnings)

    monkeypatch.setattr(ContextBuilder, "build", build)
    monkeypatch.setattr(wire_module.Wire, "resume_at", classmethod(resume_at))
    masking = Settings(context_window=50_000, strategies={"masking": {"keep_last_observations": 2}})
    result = replay(store, session.id, "masking", masking, workspace)
    store.close()
    assert len(result.steps) == 24  # 12 rounds: one call and one answer each
    assert len(checked) >= 24
    # the window moved in the middle of history, and the builder resumed there (not at 0)
    assert len(resumed_at) >= 8 and min(resumed_at) > 0
