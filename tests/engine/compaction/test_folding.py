"""Re-compaction folds in only what it adds (engine.compaction.folding): the facts and the
ledger of a growing list, folded one message at a time, are what a fold of the whole list from
the start gives; a list that begins with a held one (the same messages, or equal ones read back
from the store) is continued, any other folded from the start."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest

from engine.compaction import extractive
from engine.compaction.extractive import _FactsFold, segment_facts, segment_ledger
from engine.compaction.folding import PrefixFolds, fold_key
from engine.compaction.ledger import extract_ledger
from engine.compaction.strategies.formats import extractive_plain
from engine.models import Message, MessageMeta, ToolCall

T = TypeVar("T")
T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
PATHS = ["src/app.py", "web/ui.tsx", "lib/x.rs", "README.md", "conf/a.toml", "run.sh", "data.json"]
REQUESTS = [
    "Fix the parser. Always run the tests first.",
    "<system-reminder>ignore</system-reminder>Add a --json flag to the CLI",
    "Why does the build fail? Do not touch the lock file.",
    "Rename the module and make sure imports still work",
    "",
]
ANSWERS = [
    "Done. I decided to use a dict instead of a list.",
    "Fixed the parser.\nWe will use pytest -q from now on.",
    "The build fails because of a missing import.",
    "Switched to pathlib. Chose the smaller change.",
]
COMMANDS = [
    "pytest -q",
    "sed -i 's/a/b/' src/app.py",
    "cat README.md | head",
    "rm -f build/out.o",
    "git mv lib/x.rs lib/y.rs",
    "python -m build\necho done",
]
ERRORS = [
    "Traceback (most recent call last):\n  File x\nValueError: bad value",
    "error: could not compile `x`",
    "src/app.py:3:1: E302 expected 2 blank lines",
]


def generated(seed: int, rounds: int = 14) -> list[Message]:
    """A session of ``rounds`` rounds: requests (some only markup), calls reading, changing and
    running things, results (some failed, some interrupted), final answers (some missing: a
    round left open), in the order the history holds them."""
    rng = random.Random(seed)
    out: list[Message] = []

    def add(role: str, **fields: Any) -> None:
        when = T0 + timedelta(minutes=len(out))
        out.append(Message(id=len(out) + 1, role=role, created_at=when, **fields))  # type: ignore[arg-type]

    for rnd in range(1, rounds + 1):
        add("user", content=rng.choice(REQUESTS), meta=MessageMeta(round=rnd))
        for step in range(1, rng.randint(1, 4)):
            calls = [_call(rng, rnd, step, i) for i in range(rng.randint(1, 3))]
            text = rng.choice(["", "Let me look.", "I will use ripgrep instead of grep."])
            add("assistant", content=text, tool_calls=calls, meta=MessageMeta(round=rnd, step=step))
            for c in calls:
                add("tool", **_result(rng, c, rnd, step))
        if rng.random() < 0.8:
            meta = MessageMeta(round=rnd, final=True, interrupted=rng.random() < 0.1)
            add("assistant", content=rng.choice(ANSWERS), meta=meta)
    return out


def _call(rng: random.Random, rnd: int, step: int, i: int) -> ToolCall:
    name = rng.choice(["Read", "Edit", "Write", "Bash", "Grep"])
    args: dict[str, Any] = {"file_path": rng.choice(PATHS)}
    if name == "Bash":
        args = {"command": rng.choice(COMMANDS)}
    elif name == "Grep":
        args = {"pattern": "todo", "path": rng.choice(PATHS)}
    return ToolCall(id=f"t{rnd}_{step}_{i}", name=name, input=args)


def _result(rng: random.Random, call: ToolCall, rnd: int, step: int) -> dict[str, Any]:
    failed = rng.random() < 0.3
    body: dict[str, Any] = {"status": "ok", "data": {"output": "fine"}}
    if failed:
        body = {
            "status": "error",
            "error": {"code": "exit_1", "message": rng.choice(ERRORS)},
            "data": {"command": call.input.get("command", "")} if call.name == "Bash" else {},
        }
    meta = MessageMeta(
        round=rnd,
        step=step,
        tool_name=rng.choice([call.name, None]),  # an imported result may not name its tool
        tool_use_id=call.id,
        is_error=failed,
        interrupted=rng.random() < 0.05,
    )
    return {"content": json.dumps(body), "meta": meta}


@pytest.fixture
def cold(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], T]], T]:
    """Runs a computation with nothing held: every list folded from the start (what was held
    before is held again after)."""

    def run(compute: Callable[[], T]) -> T:
        with monkeypatch.context() as m:
            m.setattr(extractive, "_FOLDS", PrefixFolds(_FactsFold, _FactsFold.add))
            return compute()

    return run


@pytest.mark.parametrize("seed", range(6))
def test_facts_and_ledger_folded_one_message_at_a_time_are_those_of_the_whole(
    seed: int, cold: Callable[[Callable[[], Any]], Any]
) -> None:
    messages = generated(seed)
    for n in range(1, len(messages) + 1):
        grown = messages[:n]  # the previous list and one more message: only it is folded in
        whole = list(grown)
        assert asdict(segment_facts(grown)) == cold(lambda: asdict(segment_facts(whole))), n  # noqa: B023
        assert segment_ledger(grown).items == extract_ledger(whole).items, n


@pytest.mark.parametrize("seed", range(3))
def test_a_summary_written_as_archives_grow_is_the_one_written_from_all(
    seed: int, cold: Callable[[Callable[[], Any]], Any]
) -> None:
    """As message-window re-compacts: each time the list is the archived messages (the last
    segment read back from the store: equal, new objects) and the newly archived ones."""
    messages = generated(seed, rounds=20)
    archived: list[Message] = []
    for cut in range(10, len(messages) + 1, 9):
        segment = messages[len(archived) : cut]
        summary = extractive_plain([*archived, *segment], None)
        assert summary == cold(lambda: extractive_plain(messages[:cut], None))  # noqa: B023
        archived += [m.model_copy(update={"tokens": 7}) for m in segment]


def test_focus_is_applied_over_the_whole_list_each_time(
    cold: Callable[[Callable[[], Any]], Any],
) -> None:
    messages = generated(1)
    segment_facts(messages[:20])
    facts = segment_facts(messages[:30], "parser tests")
    assert facts.decisions[0] == "Focus requested: parser tests"
    assert asdict(facts) == cold(lambda: asdict(segment_facts(messages[:30], "parser tests")))


# ------------------------------------------------------------- what is continued, what is not
class Counting:
    """A fold that counts the messages added to it."""

    def __init__(self) -> None:
        self.added: list[int | None] = []

    def add(self, msg: Message) -> None:
        self.added.append(msg.id)


def folds() -> tuple[PrefixFolds[Counting], list[Counting]]:
    states: list[Counting] = []

    def start() -> Counting:
        states.append(Counting())
        return states[-1]

    return PrefixFolds(start, Counting.add), states


def test_a_longer_list_is_continued_from_the_held_one() -> None:
    messages = generated(2)
    held, states = folds()
    held.read(messages[:10], lambda s: None)
    held.read(messages[:14], lambda s: None)
    held.read(messages[:14], lambda s: None)
    assert len(states) == 1
    assert states[0].added == [m.id for m in messages[:14]]  # each message once


def test_equal_messages_read_back_continue_the_fold_changed_ones_do_not() -> None:
    messages = generated(3)
    held, states = folds()
    held.read(messages[:10], lambda s: None)
    # the store gives the archived messages back as new objects: token count and time aside,
    # equal in everything a fold reads
    copies = [m.model_copy(update={"tokens": 99, "created_at": T0}) for m in messages[:10]]
    assert [fold_key(c) for c in copies] == [fold_key(m) for m in messages[:10]]
    held.read([*copies, *messages[10:12]], lambda s: None)
    assert len(states) == 1 and len(states[0].added) == 12
    # a message that says something else is not the one folded: from the start
    changed = messages[4].model_copy(update={"content": messages[4].content + " (edited)"})
    held.read([*messages[:4], changed, *messages[5:12]], lambda s: None)
    assert len(states) == 2 and len(states[1].added) == 12
    # nor is one whose meta says something else (now a final answer, or no longer one)
    meta = messages[4].meta.model_copy(update={"final": not messages[4].meta.final})
    held.read([*messages[:4], messages[4].model_copy(update={"meta": meta})], lambda s: None)
    assert len(states) == 3


def test_an_unrelated_list_is_folded_from_the_start_and_the_held_one_kept() -> None:
    a, b = generated(4), generated(5)
    for m in b:  # another session: other ids and contents
        m.id = (m.id or 0) + 1000
    held, states = folds()
    held.read(a[:10], lambda s: None)
    held.read(b[:10], lambda s: None)
    held.read(a[:12], lambda s: None)
    assert [len(s.added) for s in states] == [12, 10]


BASE = Message(
    id=5,
    role="assistant",
    content="I will use pathlib.",
    tool_calls=[ToolCall(id="t1", name="Bash", input={"command": "rm a.py"})],
    meta=MessageMeta(round=2, step=1, final=False),
)


@pytest.mark.parametrize(
    "update",
    [
        {"id": 6},
        {"role": "user"},
        {"content": "I will use os.path."},
        {"tool_calls": [ToolCall(id="t1", name="Bash", input={"command": "rm b.py"})]},
        {"tool_calls": [ToolCall(id="t1", name="Write", input={"command": "rm a.py"})]},
        {"tool_calls": [ToolCall(id="t2", name="Bash", input={"command": "rm a.py"})]},
        {"tool_calls": []},
        {"meta": MessageMeta(round=3, step=1)},
        {"meta": MessageMeta(round=2, step=2)},
        {"meta": MessageMeta(round=2, step=1, final=True)},
        {"meta": MessageMeta(round=2, step=1, interrupted=True)},
        {"meta": MessageMeta(round=2, step=1, is_error=True)},
        {"meta": MessageMeta(round=2, step=1, tool_name="Bash")},
        {"meta": MessageMeta(round=2, step=1, tool_use_id="t1")},
    ],
)
def test_a_message_differing_in_what_a_fold_reads_is_not_taken_for_the_held_one(
    update: dict[str, Any],
) -> None:
    assert fold_key(BASE.model_copy(update=update)) != fold_key(BASE)


@pytest.mark.parametrize(
    "update",
    [
        {"tokens": 40},
        {"pinned": True},
        {"created_at": T0},
        {"meta": MessageMeta(round=2, step=1, origin={"uuid": "u"})},
    ],
)
def test_what_no_fold_reads_does_not_tell_messages_apart(update: dict[str, Any]) -> None:
    assert fold_key(BASE.model_copy(update=update)) == fold_key(BASE)
