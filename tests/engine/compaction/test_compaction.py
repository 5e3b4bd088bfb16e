"""Round-aligned compaction (seed A4, A5, C2, C6, E2): what goes, what stays, what is kept."""

from __future__ import annotations

import time

import pytest

from engine.compaction.extractive import extractive_summary
from engine.compaction.policy import PolicyView
from engine.compaction.strategies.layered import LayeredStrategy
from engine.compaction.summary import TIMEOUT_NOTICE, SummaryCompressor
from engine.context.history import HistoryManager
from engine.events import CompactionFailed, CompactionFinished, Event, Notice
from engine.models import Message, Outcome, Trigger
from engine.settings.config import Settings
from engine.store import Store
from engine.store.archive import ArchiveStore
from prompts.agents_prompts.summary_prompt import SUMMARY_HEADING
from tests.engine.builders import write_round


class ExtractiveSummariser:
    is_model = True

    def __init__(self) -> None:
        self.calls: list[tuple[list[Message], str | None]] = []

    def summarize(self, messages, prompt, focus, timeout):  # type: ignore[no-untyped-def]
        self.calls.append((messages, focus))
        return extractive_summary(messages, focus)


class SlowSummariser:
    is_model = True

    def summarize(self, messages, prompt, focus, timeout):  # type: ignore[no-untyped-def]
        time.sleep(timeout * 5)
        return "never used"


class BrokenSummariser:
    is_model = True

    def summarize(self, messages, prompt, focus, timeout):  # type: ignore[no-untyped-def]
        raise RuntimeError("overloaded_error: upstream busy")


def compact(manager: HistoryManager, settings: Settings, summariser=None, **kw):  # type: ignore[no-untyped-def]
    return manager.compactions.compact(
        LayeredStrategy(settings),
        SummaryCompressor(summariser or ExtractiveSummariser(), settings.summary_timeout),
        kw.pop("trigger", Trigger.MANUAL),
        **kw,
    )


def test_keeps_last_keep_rounds_whole_and_archives_exactly_the_rest(
    manager: HistoryManager, store: Store, session_id: int, settings: Settings
) -> None:
    for n in range(1, 9):
        write_round(manager, n, tools=2)
    before = {m.id: m for m in manager.history.messages}
    result = compact(manager, settings)

    kept = manager.history.messages
    assert {m.meta.round for m in kept} == {6, 7, 8}  # keep_rounds=3, whole rounds
    assert kept[0].role == "user"
    # tool pairs intact: every tool_use kept has its tool_result kept, and vice versa
    uses = {c.id for m in kept for c in m.tool_calls}
    results = {m.meta.tool_use_id for m in kept if m.role == "tool"}
    assert uses == results
    # the archive holds exactly the removed messages, whole
    assert result.segment is not None
    archived_ids = [m.id for m in result.segment.messages]
    expected = [mid for mid, m in before.items() if m.meta.round in {1, 2, 3, 4, 5}]
    assert archived_ids == expected
    assert all(m == before[m.id] for m in result.segment.messages)
    assert (result.segment.first_round, result.segment.last_round) == (1, 5)
    # the compaction record
    c = result.compaction
    assert c.outcome is Outcome.SUCCESS and c.rounds_compacted == 5
    assert c.messages_compacted == len(expected) and c.messages_retained == len(kept)
    assert c.tokens_after < c.tokens_before
    assert c.tokens_after == manager.tokens()
    # the summary is in L3, in A5 form, linked to the segment
    assert result.summary is not None and result.summary.content.startswith(SUMMARY_HEADING)
    assert manager.history.summaries == [result.summary]
    assert result.segment.summary_id == result.summary.id
    assert [r.archived for r in store.rounds(session_id)] == [True] * 5 + [False] * 3


def test_summaries_are_never_recompacted_only_appended(
    manager: HistoryManager, settings: Settings
) -> None:
    summariser = ExtractiveSummariser()
    for n in range(1, 6):
        write_round(manager, n)
    first = compact(manager, settings, summariser)
    for n in range(6, 9):
        write_round(manager, n)
    second = compact(manager, settings, summariser)

    assert first.summary is not None and second.summary is not None
    assert [s.id for s in manager.history.summaries] == [first.summary.id, second.summary.id]
    assert manager.history.summaries[0].content == first.summary.content
    # the second summary call saw only user/assistant/tool messages of rounds 3-5, no summary
    seen = summariser.calls[1][0]
    assert {m.meta.round for m in seen} == {3, 4, 5}
    assert {m.role for m in seen} <= {"user", "assistant", "tool"}
    assert (second.summary.first_round, second.summary.last_round) == (3, 5)


def test_nothing_to_compact_is_recorded_as_skipped(
    manager: HistoryManager, store: Store, session_id: int, settings: Settings
) -> None:
    events: list[Event] = []
    manager.events = events.append
    for n in range(1, 4):
        write_round(manager, n)
    result = compact(manager, settings)
    assert result.compaction.outcome is Outcome.SKIPPED
    assert "last 3" in (result.compaction.error or "")
    assert len(manager.history.messages) == 12
    assert isinstance(events[-1], CompactionFailed)
    assert store.compactions(session_id)[0].outcome is Outcome.SKIPPED


def test_focus_reaches_the_summariser(manager: HistoryManager, settings: Settings) -> None:
    summariser = ExtractiveSummariser()
    for n in range(1, 6):
        write_round(manager, n)
    result = compact(manager, settings, summariser, focus="keep the auth decisions")
    assert summariser.calls[0][1] == "keep the auth decisions"
    assert result.compaction.focus == "keep the auth decisions"
    assert "keep the auth decisions" in (result.summary.content if result.summary else "")


@pytest.mark.parametrize(
    ("summariser", "notice"),
    [(SlowSummariser(), TIMEOUT_NOTICE), (BrokenSummariser(), "Summary generation failed")],
)
def test_summary_timeout_or_error_falls_back_and_still_archives(
    manager: HistoryManager, settings: Settings, summariser: object, notice: str
) -> None:
    fast = settings.model_copy(update={"summary_timeout": 0.2})
    events: list[Event] = []
    manager.events = events.append
    for n in range(1, 6):
        write_round(manager, n)
    began = time.monotonic()
    result = compact(manager, fast, summariser)
    assert time.monotonic() - began < 0.2 * 5  # did not wait for the stuck call
    assert result.compaction.outcome is Outcome.FALLBACK
    assert result.summary is not None and result.summary.fallback
    assert result.summary.content.startswith(SUMMARY_HEADING)
    assert "Fallback" in result.summary.content
    assert "src/mod1.py" in result.summary.content  # the removed rounds are still represented
    assert result.segment is not None and len(result.segment.messages) == 8
    assert any(isinstance(e, Notice) and e.message.startswith(notice) for e in events)
    assert isinstance(events[-1], CompactionFinished)


def test_emergency_goes_below_keep_zone_but_never_takes_round_in_progress(
    manager: HistoryManager, settings: Settings
) -> None:
    for n in range(1, 3):
        write_round(manager, n)
    rnd, _ = manager.open_round("the round in progress")
    view = PolicyView(history=manager.history, in_progress=rnd.index)
    result = compact(manager, settings, trigger=Trigger.EMERGENCY, view=view)
    assert result.segment is not None
    assert (result.segment.first_round, result.segment.last_round) == (1, 2)
    assert {m.meta.round for m in manager.history.messages} == {rnd.index}


def test_store_failure_leaves_history_unchanged(
    manager: HistoryManager, store: Store, session_id: int, settings: Settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    for n in range(1, 6):
        write_round(manager, n)
    before = store.history(session_id)

    def boom(self, message_ids, segment):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk full")

    monkeypatch.setattr(ArchiveStore, "_archive_messages", boom)  # the store's archive part
    result = compact(manager, settings)
    assert result.compaction.outcome is Outcome.FAILED
    assert "disk full" in (result.compaction.error or "")
    assert store.history(session_id) == before
    assert store.segments(session_id) == []
    assert all(not r.archived for r in store.rounds(session_id))
