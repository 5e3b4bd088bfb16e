"""Compactions as Claude Code 2.1.2xx writes them, in two fixtures built in the exact shapes
of a real 2.1.221 ``compact_boundary`` (``{"parentUuid":null,"logicalParentUuid":…,
"type":"system","subtype":"compact_boundary","content":"Conversation compacted","level":"info",
"compactMetadata":{"trigger","preTokens","postTokens","cumulativeDroppedTokens","durationMs",
"preCompactDiscoveredTools","preservedSegment":{"headUuid","anchorUuid","tailUuid"}}}``,
the summary a ``user`` record with ``isCompactSummary`` and ``isVisibleInTranscriptOnly``
whose parent is the boundary; two boundaries of 2.1.226 published verbatim show the same
fields, ``logicalParentUuid`` equal to ``preservedSegment.tailUuid``, and
``cumulativeDroppedTokens = preTokens - postTokens`` for a session's first compaction:
801,920 - 19,650 = 782,270 and 28,139 - 3,673 = 24,466) and of Claude Code's own loader
(``applyPreservedSegmentRelinks``: the kept head hangs off the anchor, the anchor's other
children off the kept tail):

``fixtures/claude-code-2.1.217-preserved-segment.jsonl`` (19 lines): a manual ``/compact``
that keeps the last exchange. Lines 2-7 are the first round (``u1``: Bash ``toolu_01``, Read
``toolu_02``, a final answer), lines 8-11 the second (``u2`` Edit ``toolu_03``, answer ``a5``),
line 13 the boundary (``preservedSegment`` head ``u2``, anchor the summary ``s1``, tail
``a5``), line 14 the summary, and line 15 the next prompt ``u3`` whose parent is ``a5`` (the
kept tail), then Bash ``toolu_04`` and the answer. Read by its own parents the chain is
18 → … → 15 → 11 → … → 8 → 7 → … → 2: no boundary, no summary, all four calls live.

``fixtures/claude-code-2.1.219-starts-at-boundary.jsonl`` (7 lines): a file whose line 1 is
an auto compaction's boundary (its ``logicalParentUuid`` in an earlier file), line 2 the
summary, then the agent going on (Bash ``toolu_11``, an answer) and one more prompt.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from cli.main import main
from engine.recordings import claude_code
from engine.recordings.follow import Follower
from engine.recordings.writer import CONTINUED, check, write
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.helpers import FIXTURES, import_all
from tests.engine.recordings.test_claude_code_follow import follow_both

PRESERVED = FIXTURES / "claude-code-2.1.217-preserved-segment.jsonl"
STARTS = FIXTURES / "claude-code-2.1.219-starts-at-boundary.jsonl"


def test_a_kept_segment_follows_the_summary_and_the_compacted_calls_are_archived(
    tmp_path: Path,
) -> None:
    """The compaction is found and everything before the kept head is archived under it.

    By hand from the fixture: items in the order Claude Code loads them, the compacted-away
    round (lines 2-7), the summary (line 14), the kept records (lines 8-11), what came after
    (lines 15-18). Rounds: 1 (``u1``, archived), 2 (``u2``), 3 (``u3``). Archived calls:
    Bash + Read; live: Edit (kept) + Bash (after). Messages in history: u2, a4, its result,
    a5, u3, a6, its result, a7 = 8. Seven assistant records, each with usage: 7 usage
    records, output 40+35+60+80+12+30+9 = 266 tokens, each counted once."""
    parsed = claude_code.parse(PRESERVED.read_text(), PRESERVED.name)
    assert [i.line for i in parsed.items] == [2, 3, 4, 5, 6, 7, 14, 8, 9, 10, 11, 15, 16, 17, 18]
    assert parsed.warnings == []
    store = Store.open(tmp_path / "s.db")
    [got] = import_all(store, PRESERVED)
    sid = got.report.session.id
    assert sid is not None
    assert (got.report.rounds, got.report.compactions) == (3, 1)
    [comp] = store.compactions(sid)
    assert comp.trigger.value == "manual"
    assert comp.rounds_compacted == 1
    assert (
        comp.stats["recorded_pre_tokens"],
        comp.stats["recorded_post_tokens"],
        comp.stats["recorded_duration_ms"],
        comp.stats["recorded_cumulative_dropped_tokens"],
    ) == (297190, 16970, 41234, 280220)
    live = store.history(sid).messages
    assert [m.role for m in live] == ["user", "assistant", "tool", "assistant"] * 2
    assert [m.content for m in live if m.role == "user"] == [
        "Now also add a test for empty input",
        "Run the whole suite",
    ]
    assert [c.name for m in live for c in m.tool_calls] == ["Edit", "Bash"]
    archived = [m for m in got.messages if m not in live]
    assert [c.name for m in archived for c in m.tool_calls] == ["Bash", "Read"]
    assert len(got.usages) == 7
    assert sum(u.usage.output_tokens for u in got.usages) == 266


def test_a_file_that_begins_at_its_compaction_stores_the_compaction(tmp_path: Path) -> None:
    """The summary is a compaction, not the first user message; ``cumulativeDroppedTokens``
    names what was compacted before the file.

    By hand: this compaction dropped 998,659 - 18,101 = 980,558 tokens; the file says
    1,392,903 dropped so far, so 1,392,903 - 980,558 = 412,345 tokens were compacted before
    the file begins. Rounds: the one standing for the earlier file (archived by the
    compaction), the agent going on after the summary (a round the writer opens with
    ``CONTINUED``), the prompt on line 6: 3 rounds, 1 compaction; in history the summary
    and 6 messages (CONTINUED, a1, its result, a2, u1, a3)."""
    store = Store.open(tmp_path / "s.db")
    [got] = import_all(store, STARTS)
    report = got.report
    sid = report.session.id
    assert sid is not None
    assert (report.rounds, report.compactions) == (3, 1)
    assert report.recorded["compacted_before_file"] == 412345
    assert "412,345 tokens compacted before this file begins" in report.warnings
    assert (
        "line 1: the file begins at a compaction (its logicalParentUuid 5b2d6e10-gone is in "
        "an earlier file)"
    ) in report.warnings
    [comp] = store.compactions(sid)
    assert comp.trigger.value == "auto"
    assert (comp.stats["recorded_pre_tokens"], comp.stats["recorded_post_tokens"]) == (
        998659,
        18101,
    )
    assert comp.stats["recorded_duration_ms"] == 63012
    history = store.history(sid)
    assert [s.content.startswith("This session is being continued") for s in history.summaries] == [
        True
    ]
    assert [m.content for m in history.messages if m.role == "user"] == [
        CONTINUED,
        "Check the row counts",
    ]
    assert len(history.messages) == 6


def test_watch_grown_record_by_record_stores_what_import_stores(tmp_path: Path) -> None:
    """``watch`` on both files, one record per look, against the whole file imported: the
    same messages in the same rounds, the same compaction with its recorded figures (the
    numbers as in the two tests above), and the tail parser gives the whole parser's items
    at every look (``follow_both``)."""
    settings = Settings()
    for path in (PRESERVED, STARTS):
        lines = path.read_text().splitlines()
        follow_both(lines)
        f = tmp_path / path.name
        f.write_text("")
        store = Store.open(tmp_path / f"w-{path.stem}.db")
        follower = Follower(f, settings, store)
        events: list[str] = []
        with open(f, "a") as out:
            for line in lines:
                out.write(line + "\n")
                out.flush()
                update = follower.poll()
                if update is not None:
                    events += update.events
        assert events.count("compaction") == 1
        assert follower.session is not None and follower.session.id is not None
        sid = follower.session.id
        ref = Store.open(tmp_path / f"r-{path.stem}.db")
        parsed = claude_code.parse(path.read_text(), path.name)
        assert not check(parsed)
        report = write(ref, parsed, "/x", settings)
        assert report.session.id is not None

        def rows(s: Store, i: int) -> list[tuple[str, str, int | None, bool]]:
            live = {m.id for m in s.history(i).messages}
            return [(m.role, m.content, m.meta.round, m.id in live) for m in s.all_messages(i)]

        assert rows(store, sid) == rows(ref, report.session.id)
        [mine] = store.compactions(sid)
        [theirs] = ref.compactions(report.session.id)
        keys = ("recorded_pre_tokens", "recorded_post_tokens", "recorded_duration_ms")
        assert [mine.stats[k] for k in keys] == [theirs.stats[k] for k in keys]


def test_a_kept_segment_whose_tail_does_not_lead_to_its_head_is_read_by_its_own_parents() -> None:
    """Claude Code fails closed when the tail → head walk breaks; so does the reader, with
    a warning naming the boundary's line (13), and the file's own parents decide (the
    chain of the module docstring: 14 items, no summary)."""
    lines = PRESERVED.read_text().splitlines()
    lines[12] = lines[12].replace('"headUuid":"u2"', '"headUuid":"not-there"')
    parsed = claude_code.parse("\n".join(lines) + "\n", PRESERVED.name)
    assert [i.kind for i in parsed.items].count("summary") == 0
    assert len(parsed.items) == 14
    assert parsed.warnings == [
        "line 13: the compaction's kept records (not-there … a5) are not all in the file; "
        "what follows is read by its own parents"
    ]
    assert list(itertools.islice((i.line for i in parsed.items), 3)) == [2, 3, 4]


def test_show_and_watch_name_the_recorded_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ctxscope show`` names the recorded compaction's context before and after and its
    duration (297,190 → 16,970 tokens, 41,234 ms = 41.2 s, from line 13); ``watch``'s
    compaction event carries the same figures."""
    db = tmp_path / "s.db"
    assert main(["import", str(PRESERVED), "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["show", "1", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert (
        "recorded: made by the original agent (its context 297,190 → 16,970 tokens, 41.2 s)"
    ) in out
    f = tmp_path / PRESERVED.name
    f.write_text(PRESERVED.read_text())
    update = Follower(f, Settings(), Store.open(tmp_path / "w.db")).poll()
    assert update is not None and update.compaction is not None
    assert (update.compaction["pre_tokens"], update.compaction["post_tokens"]) == (297190, 16970)
    assert update.compaction["duration_ms"] == 41234
    assert update.compaction["cumulative_dropped_tokens"] == 280220
