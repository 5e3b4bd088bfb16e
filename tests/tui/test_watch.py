"""Issue 19: the workbench (``ctxscope watch`` without ``--jsonl``) while a real file grows.

A copy of the corpus' marot session (Claude Code 2.1.39, the one with a real automatic
compaction) is written into ``tmp_path`` a few records at a time, and record by record around
the compaction, each write ending half-way through the next line. The expected figures come
from the file itself, read here with plain ``json`` (tests/data/corpus_facts/README.md, §1):

- 1,863 lines, one record each; the ``compact_boundary`` is line 1256 (preTokens 167094), the
  ``isCompactSummary`` user record line 1257;
- the last usage before the boundary: input 1, cache_read 165803, cache_creation 955, output
  301 (``jq -c 'select(.type=="assistant" and .message.id=="msg_01Gecb8FT9G9F5uN7S6DTJ9p")
  .message.usage' $M | tail -1``), so 167,060 in context: over 85 % of the 167,000 trigger;
- 186 ``tool_use`` blocks, every one answered.

The follow worker never ends while the app runs (it is the watch), so these tests never wait
for *all* workers (``settle`` would wait forever: that is what hung the first attempt); they
wait for a condition, with a deadline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from engine.models import Summary
from engine.recordings.follow import Follower
from engine.store import Store
from tests.engine.recordings.corpus import MAROT
from tests.tui.helpers import main_screen, offline_settings, wait_until
from tui.watch import WatchApp, WatchBar
from tui.widgets.history_view import HistoryView

pytestmark = pytest.mark.anyio

BOUNDARY, SUMMARY = 1256, 1257
"""marot's compact_boundary line and the summary's line (1-based)."""


def marot_lines() -> list[bytes]:
    return MAROT.read_bytes().split(b"\n")[:-1]


def tool_uses(lines: list[bytes]) -> int:
    """Distinct tool_use ids in the assistant records of ``lines`` (plain json, no ctxscope)."""
    ids = set()
    for raw in lines:
        rec = json.loads(raw)
        content = rec.get("message", {}).get("content") if rec["type"] == "assistant" else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                ids.add(block["id"])
    return len(ids)


def watch_app(path: Path, db_path: Path, workspace: Path, **settings: Any) -> WatchApp:
    """What ``ctxscope watch PATH`` builds (cli/watch.py ``_workbench``): one first look,
    stored, then the workbench opened on that session."""
    config = offline_settings(watch_poll_interval=0.05, **settings)
    store = Store.open(db_path)
    follower = Follower(path, config, store)
    follower.poll()
    assert follower.session is not None and follower.session.id is not None
    store.close()
    return WatchApp(
        follower, db_path=db_path, workspace=workspace, settings=config, resume=follower.session.id
    )


def bar(app: WatchApp) -> str:
    return str(main_screen(app).query_one(WatchBar).render())


def redraw_idle(app: WatchApp) -> bool:
    return not any(w.group == "watch-redraw" and w.is_running for w in app.workers)


async def opened(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, WatchApp)
    await wait_until(
        pilot, lambda: main_screen(app).agent is not None and bool(app.query(WatchBar))
    )


async def test_workbench_shows_each_record_once_and_the_compaction_as_it_lands(
    tmp_path: Path, workspace: Path, db_path: Path
) -> None:
    lines = marot_lines()
    assert len(lines) == 1863
    full = MAROT.read_bytes()
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    f = tmp_path / "258c7280.jsonl"
    f.write_bytes(full[: starts[100] + 25])  # 100 records and the head of the 101st
    app = watch_app(f, db_path, workspace)
    assert len(app.follower.records) == 100
    # Chunks, then one record at a time from just before the boundary to just after the
    # summary, then chunks to the end; every write but the last stops 25 bytes into a line.
    cuts = [*range(160, 1240, 180), *range(1240, 1263), *range(1400, 1863, 230), 1863]
    written = starts[100] + 25
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        assert "compactions 0" in bar(app)
        with open(f, "ab") as out:
            for end in cuts:
                target = starts[end] + 25 if end < len(lines) else len(full)
                out.write(full[written:target])
                out.flush()
                written = target
                await wait_until(pilot, lambda end=end: app.records_shown == end, 20)
                # What the screen shows is the file's prefix, counted here from the raw lines.
                assert app.figures is not None
                assert app.figures.tool_calls == tool_uses(lines[:end]), end
                if end == BOUNDARY:
                    # The boundary alone: the summary has not landed yet.
                    assert "compactions 0" in bar(app)
                    assert "in 1 · cache read 165,803 · cache write 955 · out 301" in bar(app)
                    assert bar(app).startswith("⚠ auto-compact near")
                if end == SUMMARY:
                    assert "compactions 1" in bar(app)
                    await wait_until(pilot, lambda: redraw_idle(app), 20)
                    history = main_screen(app).query_one(HistoryView)
                    await wait_until(
                        pilot,
                        lambda h=history: any(isinstance(b.data, Summary) for b in h.blocks),
                        20,
                    )
        await wait_until(pilot, lambda: redraw_idle(app), 20)
        # Every record once, in order: the follower's records are lines 1..1863, and the
        # worker read exactly the 1,763 written after the first look.
        assert [n for n, _ in app.follower.records] == list(range(1, 1864))
        assert app.records_seen == 1863 - 100
        assert app.figures is not None and app.figures.tool_calls == 186 == tool_uses(lines)
        assert app.figures.compactions == 1
        sid = app.follower.session.id if app.follower.session else None
        assert sid is not None
        stored = app.store.all_messages(sid)
        assert sum(len(m.tool_calls) for m in stored) == 186
        assert len(app.store.compactions(sid)) == 1
        assert app.updates <= len(cuts)
