"""The figures ``watch`` keeps as it stores a followed session are the store's own, after every
look: real Claude Code files (marot, one automatic compaction at line 1256; oh-my-posh 2.1.217,
a manual one that keeps a segment) and a real Codex rollout grown a few records at a time.

After each look that stored something, the figures ``watch --jsonl`` prints
(:func:`session_figures` in the watcher's process, which reads the copy the follower kept:
:mod:`engine.recordings.followed_figures`) are compared field for field with the figures made
from every usage row of a fresh read of the database (:func:`made_figures` in a second
:class:`Store` on the same file) and with what that fresh store's :func:`session_figures` gives.

The final state is also checked against figures worked out from the files alone, with plain
Python (``json`` only) and the providers' published prices (tests/engine/recordings/
test_corpus_costs.py has the prices and the same token counts):

- marot: each API response once (its ``message.id``): 152 requests, input 180, cache read
  14,771,617, cache write 349,474 (all 1-hour), output 38,899; $11.853924 at Claude Opus 4.6's
  list prices. The context at the last call (the last ``assistant`` record with ``usage``:
  input 3 + cache read 77,272 + cache write 59 + output 85) is 77,419; window 200,000 (the
  model's), Claude Code's auto-compact point 167,000 (test_watch.py), so 89,581 until it; one
  compaction (the ``compact_boundary`` on line 1256)::

      ids = {}
      for line in open(MAROT):
          r = json.loads(line)
          if r.get("type") == "assistant" and r["message"].get("usage"):
              ids[r["message"]["id"]] = r["message"]["usage"]
      len(ids), sum(u["input_tokens"] for u in ids.values()), ...

- the Codex rollout: its last ``token_count`` event's ``info``: ``total_token_usage`` input
  215,755 of which cached 181,760 (so input 33,995), output 14,976; ``last_token_usage``
  total 19,856 (the context); ``model_context_window`` 272,000 and Codex's trigger at 90 % of
  it, 244,800 (test_watch_codex.py), so 224,944 until it; 21 requests (turn contexts); no
  compaction; $0.214974 at gpt-5-codex's list prices.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.figures import SessionFigures
from engine.recordings.figures import made_figures, session_figures
from engine.recordings.follow import Follower
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.corpus import CORPUS, MAROT, OMP_MANUAL

ROLLOUT = CORPUS / "yoavf__ai-sessions__codex-pomodor-timer.jsonl"
PACE = (1, 3, 7, 50)
"""Records appended at each look, in turn: a round grows a record at a time and by many."""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own: no real ~/.claude or ~/.codex settings are read."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    return folder


def grown(tmp_path: Path, source: Path, db: Path) -> tuple[Follower, list[tuple[str, ...]]]:
    """``source`` appended to a followed file a few records at a time; after each look that
    stored, the watcher's figures against a fresh read's (the differing fields, by name)."""
    lines = source.read_bytes().split(b"\n")[:-1]
    path = tmp_path / source.name
    path.write_bytes(b"")
    settings = Settings()
    follower = Follower(path, settings, Store.open(db))
    differences: list[tuple[str, ...]] = []
    at, turn = 0, 0
    with open(path, "ab") as out:
        while at < len(lines):
            step = PACE[turn % len(PACE)]
            out.write(b"".join(line + b"\n" for line in lines[at : at + step]))
            out.flush()
            at, turn = at + step, turn + 1
            if follower.poll() is None or follower.session is None:
                continue
            assert follower.store is not None
            assert follower.session.id is not None
            watched = session_figures(follower.store, follower.session, settings)
            fresh = Store.open(db)
            try:
                session = fresh.get_session(follower.session.id)
                kept = fresh.stored_figures([follower.session.id])[follower.session.id]
                assert kept.figures is not None  # the watcher's figures are the kept copy
                made = made_figures(fresh, session, settings)
                read = session_figures(fresh, session, settings)
            finally:
                fresh.close()
            differences.append(_differing(watched, made) + _differing(read, made))
    return follower, differences


def _differing(a: SessionFigures, b: SessionFigures) -> tuple[str, ...]:
    return tuple(k for k, v in a.to_json().items() if b.to_json()[k] != v) + (
        ("cost (unrounded)",) if a.cost != b.cost else ()
    )


def test_marot_grown_keeps_the_store_s_figures(tmp_path: Path, home: Path) -> None:
    follower, differences = grown(tmp_path, MAROT, tmp_path / "w.db")
    assert len(differences) > 60  # every look stored (1,863 records, 61 at a time at most)
    assert [d for d in differences if d] == []
    assert follower.store is not None and follower.session is not None
    final = session_figures(follower.store, follower.session, Settings())
    assert (final.requests, final.tokens.input, final.tokens.cache_read) == (152, 180, 14_771_617)
    assert (final.tokens.cache_write, final.tokens.output) == (349_474, 38_899)
    assert final.cost is not None and round(final.cost, 6) == 11.853924
    assert (final.context_tokens, final.window, final.auto_compact_at) == (77_419, 200_000, 167_000)
    assert (final.until_auto_compact, final.compactions) == (89_581, 1)


def test_codex_rollout_grown_keeps_the_store_s_figures(tmp_path: Path, home: Path) -> None:
    follower, differences = grown(tmp_path, ROLLOUT, tmp_path / "w.db")
    assert len(differences) > 10
    assert [d for d in differences if d] == []
    assert follower.store is not None and follower.session is not None
    final = session_figures(follower.store, follower.session, Settings())
    assert (final.requests, final.tokens.input, final.tokens.cache_read) == (21, 33_995, 181_760)
    assert (final.tokens.cache_write, final.tokens.output) == (0, 14_976)
    assert final.cost is not None and round(final.cost, 6) == 0.214974
    assert (final.context_tokens, final.window, final.auto_compact_at) == (19_856, 272_000, 244_800)
    assert (final.until_auto_compact, final.compactions) == (224_944, 0)


def test_a_look_reads_back_the_rows_of_the_rounds_stored_again(tmp_path: Path, home: Path) -> None:
    """marot's last 20 records appended one at a time to a follower that stored the rest: each
    store reads back only the usage rows of the last round (marot's last round, from its
    last user input on, holds fewer than 152 rows, every row of the session)."""
    lines = MAROT.read_bytes().split(b"\n")[:-1]
    path = tmp_path / MAROT.name
    path.write_bytes(b"".join(line + b"\n" for line in lines[:-20]))
    store = Store.open(tmp_path / "w.db")
    follower = Follower(path, Settings(), store)
    follower.poll()
    assert follower.session is not None and follower.session.id is not None
    sid = follower.session.id
    with open(path, "ab") as out:
        for line in lines[-20:]:
            before = follower.stored_figures.reads
            out.write(line + b"\n")
            out.flush()
            follower.poll()
            rows = store.usages(sid)
            last_round = max(u.round_index or 0 for u in rows)
            in_last_round = sum(1 for u in rows if u.round_index == last_round)
            assert follower.stored_figures.reads - before <= in_last_round < len(rows)
    assert len(store.usages(sid)) == 152


def test_a_manual_compaction_keeping_a_segment_keeps_the_store_s_figures(
    tmp_path: Path, home: Path
) -> None:
    """oh-my-posh 2.1.217: a manual ``/compact`` at line 543 that keeps a preserved segment
    (its summary's tokens are in the history tokens from then on)."""
    follower, differences = grown(tmp_path, OMP_MANUAL, tmp_path / "w.db")
    assert len(differences) > 10
    assert [d for d in differences if d] == []
    assert follower.store is not None and follower.session is not None
    assert session_figures(follower.store, follower.session, Settings()).compactions == 1
