"""What a followed session's look and save keep from the last one instead of doing again: the
counts over the items (``watch``'s messages, tool calls and compactions, and what the agent's
rules read of the parse), each item's signature (what tells which part of the parse changed),
and the live messages and observations a save goes on from (of the rounds it did not write
again). After every look of a real file grown a few records at a time, what it kept is what
doing it again gives: the counts of every item and the rules' facts as
:func:`recorded_of_parsed` reads them, the signatures of every item parsed, the messages no
compaction archived of the rounds the next save goes on from as the store reads them
(:meth:`Store.history`), and their observations as the store reads them by round. marot
(Claude Code: its tail parser keeps the items before the last round's input between looks;
one automatic compaction, line 1256), oh-my-posh 2.1.217 (a manual ``/compact`` that keeps a
preserved segment, line 543), and the Codex rollout (parsed whole at every look: no item is
kept). That the stored session is the one ``import`` stores is
``test_watch_equals_import.py``'s."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.recordings.agents.protocol import recorded_of_parsed
from engine.recordings.follow import Follower, _signature
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.corpus import CORPUS, MAROT, OMP_MANUAL

ROLLOUT = CORPUS / "yoavf__ai-sessions__codex-pomodor-timer.jsonl"
PACE = (1, 3, 7, 50)


@pytest.mark.parametrize(
    ("source", "kept_items"), [(MAROT, True), (OMP_MANUAL, True), (ROLLOUT, False)]
)
def test_what_a_save_keeps_is_what_doing_it_again_gives(
    tmp_path: Path, source: Path, kept_items: bool
) -> None:
    lines = source.read_bytes().split(b"\n")[:-1]
    path = tmp_path / source.name
    path.write_bytes(b"")
    store = Store.open(tmp_path / "w.db")
    follower = Follower(path, Settings(), store)
    at, turn, saves, reused, kept_live = 0, 0, 0, 0, 0
    with open(path, "ab") as out:
        while at < len(lines):
            step = PACE[turn % len(PACE)]
            out.write(b"".join(line + b"\n" for line in lines[at : at + step]))
            out.flush()
            at, turn = at + step, turn + 1
            before = list(zip(follower._signed, follower._stored, strict=True))
            if follower.poll() is None or follower.session is None:
                continue
            saves += 1
            parsed = follower.parsed
            assert parsed is not None and follower.session.id is not None
            counts = follower._tally.counts(parsed.items)  # what the look counted
            assert counts.recorded(parsed) == recorded_of_parsed(parsed)
            assert (counts.messages, counts.tool_calls, counts.compactions) == (
                sum(1 for i in parsed.items if i.kind != "summary"),
                sum(len(i.calls) for i in parsed.items),
                sum(1 for i in parsed.items if i.kind == "summary"),
            )
            assert follower._signed == parsed.items
            assert follower._stored == [_signature(i) for i in parsed.items]
            reused += sum(
                1
                for (item, sig), now in zip(before, follower._stored, strict=False)
                if now is sig and item in parsed.items
            )
            if follower._live is not None:
                kept_live += 1
                sid = follower.session.id
                upto = follower._live_upto  # the rounds the next save goes on from
                live = [
                    m
                    for m in store.history(sid).messages
                    if m.meta.round is None or m.meta.round <= upto
                ]
                assert follower._live == live
                ids = {m.id for m in live}
                rounds = sorted({m.meta.round for m in live if m.meta.round is not None})
                assert follower._live_observations == [
                    o for r in rounds for o in store.observations(sid, r) if o.message_id in ids
                ]
    assert saves > 10
    # the saves went on from what they kept (not every save read it back)
    assert kept_live > saves // 2
    assert (reused > 0) is kept_items
