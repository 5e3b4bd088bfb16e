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

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.pilot import Pilot

from engine.models import Summary
from engine.recordings.follow import Follower
from engine.store import Store
from tests.engine.recordings.corpus import CORPUS, MAROT
from tests.tui.helpers import main_screen, offline_settings, wait_until
from tui.watch import WatchApp, WatchBar
from tui.widgets.chat_input import ChatInput
from tui.widgets.history_view import HistoryView

pytestmark = pytest.mark.anyio

BOUNDARY, SUMMARY = 1256, 1257
"""marot's compact_boundary line and the summary's line (1-based)."""
ANSWER_BOUND = 0.5
"""Seconds a key may take to be answered while a burst is read: bench_watch.py's bound (the
median write-to-output target, docs/benchmarks.md#watch)."""


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
                    # 120 columns: the usage is said shorter, after the figures (issue 30)
                    assert "in 1 · read 165.8k · write 955 · out 301" in bar(app)
                    # the context at the last call (line 1245's usage: 1 + 165,803 read +
                    # 955 written + 301 out), the figure `context` and the gauge print
                    assert bar(app).startswith("⚠ context 167,060 / 200,000")
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
        # one update per write, or two where a look caught a write of many pages half-way
        # (a loaded machine does: seen once in a whole-suite run); a follower reporting at
        # every look, or the same records again, would give hundreds
        assert len(cuts) // 2 <= app.updates <= 2 * len(cuts)


async def answer_time(app: WatchApp, box: ChatInput, key: str) -> float:
    """Seconds from a key reaching the app (posted as the terminal driver posts it) to the
    question box holding it. Not ``pilot.press``: it also waits until the process looks idle
    (up to a second, twice), which it never does while a worker thread parses."""
    before = box.value.count(key)
    began = time.perf_counter()
    app.post_message(events.Key(key, key))
    while box.value.count(key) == before:
        if time.perf_counter() - began > 5:
            raise AssertionError(f"{key!r} not answered in 5 s")
        await asyncio.sleep(0.002)
    return time.perf_counter() - began


async def test_a_burst_of_1000_records_keeps_the_workbench_answering(
    tmp_path: Path, workspace: Path, db_path: Path
) -> None:
    """The whole of marot (2.76 MB, tests/data/corpus/README.md) as a session being written:
    its first 863 records are there when the workbench opens, then the other 1,000 (the
    compaction among them) arrive in one write. Keys typed while the worker reads, parses,
    stores and redraws are each answered within ANSWER_BOUND, and the burst is one update (a
    reader can catch the write half-way: two at most).

    On a loaded machine every key is slower, burst or not: the bound is ANSWER_BOUND or 5x the
    slowest of five keys answered just before the burst, in this run, whichever is larger (a
    worker holding the event loop takes seconds, far over either)."""
    full = MAROT.read_bytes()
    lines = marot_lines()
    head = sum(len(line) + 1 for line in lines[:863])
    f = tmp_path / "258c7280.jsonl"
    f.write_bytes(full[:head])
    app = watch_app(f, db_path, workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await wait_until(pilot, lambda: app.figures is not None)
        box = main_screen(app).query_one(ChatInput)
        await wait_until(pilot, lambda: not box.disabled)
        updates = app.updates
        calm = []
        for n in range(5):
            calm.append(await answer_time(app, box, "xy"[n % 2]))
            await asyncio.sleep(0.05)
        bound = max(ANSWER_BOUND, 5 * max(calm))
        with open(f, "ab") as out:
            out.write(full[head:])  # 1,000 records in one write
        took: list[float] = []
        during = 0
        deadline = time.monotonic() + 120
        while not (app.records_shown == 1863 and redraw_idle(app)) or len(took) < 3:
            assert time.monotonic() < deadline, "the burst was not shown in 120 s"
            busy = app.records_shown < 1863 or not redraw_idle(app)
            took.append(await answer_time(app, box, "xy"[len(took) % 2]))
            during += busy
            await asyncio.sleep(0.05)
        assert during >= 3, "no key was pressed while the burst was processed"
        assert max(took) <= bound, ([round(t, 3) for t in took], [round(t, 3) for t in calm])
        assert 1 <= app.updates - updates <= 2
        assert app.records_seen == 1000
        assert app.figures is not None and app.figures.compactions == 1
        assert app.figures.tool_calls == 186 == tool_uses(lines)


async def test_the_workbench_follows_a_codex_rollout(
    tmp_path: Path, workspace: Path, db_path: Path
) -> None:
    """The corpus' Codex CLI 0.47 rollout (tests/data/corpus_facts/README.md, §5): its first
    60 lines, then the rest. The bar shows the window the rollout records (272,000), Codex's
    trigger without a config (90 %: 244,800) and, at the end, the last call's usage: input
    18,733 of which 18,432 cached, output 1,123 (line 151's ``last_token_usage``)."""
    rollout = CORPUS / "yoavf__ai-sessions__codex-pomodor-timer.jsonl"
    lines = rollout.read_bytes().split(b"\n")[:-1]
    f = tmp_path / "rollout-2025-10-21T20-02-50-019a085e.jsonl"
    f.write_bytes(b"".join(line + b"\n" for line in lines[:60]))
    app = watch_app(f, db_path, workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        assert "/ 272,000" in bar(app)
        with open(f, "ab") as out:
            out.write(b"".join(line + b"\n" for line in lines[60:]))
        await wait_until(pilot, lambda: app.records_shown == 153, 20)
        text = bar(app)
        assert "in 301 · read 18.4k · write 0" in text  # said shorter at 120 columns
        assert "context 19,856 / 272,000 (7.3%)" in text
        assert f"until auto-compact {244_800 - 19_856:,}" in text
        await wait_until(pilot, lambda: redraw_idle(app), 20)
        assert app.figures is not None and app.figures.tool_calls == 18


def test_the_bar_puts_the_context_and_until_compact_first() -> None:
    """What a watcher looks for must survive a narrow terminal: at 120 columns the bar's first
    120 characters hold the context against the window and the tokens left before the agent's
    auto-compaction (Claude Code's 167,000: 167,000 - 164,745 = 2,255), the warning ahead."""
    from engine.recordings.follow import Figures
    from tui.watch import bar_text

    fig = Figures(
        messages=215,
        tool_calls=88,
        context_tokens=164_745,
        context_window=200_000,
        until_compact=2_255,
        compact_at=167_000,
        compactions=0,
        warning=True,
        last_usage={"input": 1, "cache_read": 162_399, "cache_write": 1_925, "output": 420},
    )
    line = bar_text(fig)
    assert line[:120].startswith("⚠ auto-compact near · context 164,745 / 200,000 (82.4%)")
    assert "until auto-compact 2,255 · compactions 0" in line[:120]
    assert line.endswith("last call: in 1 · cache read 162,399 · cache write 1,925 · out 420")


def test_the_workbench_and_watch_jsonl_run_the_engines_one_loop() -> None:
    """One follow loop, in the engine: ``watch --jsonl`` and the watch screen both run
    :func:`engine.recordings.watching.follow` (neither keeps a loop of its own)."""
    import ast
    import inspect
    import textwrap

    import cli.watch
    import tui.watch
    from engine.recordings import watching

    # cli.watch imports the loop when `watch` runs (its module stays light for the parser)
    source = inspect.getsource(cli.watch._follow_jsonl)
    assert "from engine.recordings.watching import follow" in source
    assert "follow(" in source
    assert tui.watch.follow is watching.follow
    worker = ast.parse(textwrap.dedent(inspect.getsource(tui.watch.WatchApp.follow_worker)))
    assert not any(isinstance(node, ast.While) for node in ast.walk(worker))
