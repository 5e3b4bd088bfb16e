"""Issue 44: what the workbench's first full frame waits for, and what it no longer does first.

The collector is paused from the app's start to the first session's frame (``tui.gc_pause``),
what was made meanwhile frozen then until another session opens or the app closes;
the first opening shows no loading indicator (there is no session on screen to mark stale), a
later one does; the panes are drawn once, with the first session, unless it takes long
(``tui.first_frame``); the narrow layout's tabs are composed only where they are shown; the dialogs
are imported when first opened; ``MainScreen.session_shown`` says when the session is on screen
(what ``bench/bench_recorded_open.py`` waits for).
"""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Tabs

from engine.recordings.importing import import_session
from engine.settings.config import Settings
from engine.store import Store
from tests.tui.conftest import AppFactory
from tests.tui.helpers import opened, settle, wait_until
from tui import first_frame
from tui.first_frame import PanesWait
from tui.gc_pause import GcPause
from tui.screens.main_screen import MainScreen, on_screen
from tui.screens.main_workers import SessionWorkers
from tui.session_loader import OpenedSession
from tui.widgets.block_view import BlockView
from tui.widgets.chat_view import ChatEntry, ChatView
from tui.widgets.history_view import HistoryView

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.anyio

MAROT = ROOT / "tests/data/corpus/marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"


@pytest.fixture
def collector_on() -> Iterator[None]:
    """Each test starts with the collector running and nothing frozen, and leaves the collector
    as it found it (nothing frozen)."""
    was = gc.isenabled()
    gc.enable()
    gc.unfreeze()
    yield
    gc.unfreeze()
    if not was:
        gc.disable()


def test_the_panes_wait_counts_cpu_and_the_clock() -> None:
    """The wait ends at WAIT_CPU seconds of CPU or WAIT_WALL on the clock, whichever first;
    a wait never begun is over."""
    cpu, clock = [10.0], [100.0]
    wait = PanesWait(cpu=lambda: cpu[0], clock=lambda: clock[0])
    assert wait.over()
    wait.start()
    assert not wait.over()
    cpu[0] += first_frame.WAIT_CPU * 0.9
    clock[0] += first_frame.WAIT_WALL * 0.9
    assert not wait.over()
    cpu[0] += first_frame.WAIT_CPU * 0.2
    assert wait.over()
    wait.start()  # a loaded machine: the clock runs, the CPU count hardly moves
    clock[0] += first_frame.WAIT_WALL
    assert wait.over()


async def test_the_panes_come_with_the_session(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The header and key bar are drawn at once, the panes with the session: below the screen
    while it opens (laid out: the chat knows its width; the text box focused already: typing
    works), on it when the session is applied. (The wait made long: a loaded test machine may
    take longer than the real one to open.)"""
    monkeypatch.setattr(first_frame, "WAIT_CPU", 60.0)
    monkeypatch.setattr(first_frame, "WAIT_WALL", 60.0)
    seen: list[tuple[bool, bool, bool]] = []
    opened_now = SessionWorkers._opened

    def opening(part: SessionWorkers, result: OpenedSession) -> None:
        screen = part.screen
        chat = screen.query_one(ChatView)
        seen.append((screen.panes_shown, screen.query_one("#input").has_focus, chat.size.width > 0))
        opened_now(part, result)

    monkeypatch.setattr(SessionWorkers, "_opened", opening)  # before the worker can end
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        assert seen == [(False, True, True)]  # not drawn yet, but laid out: its size known
        assert screen.panes_shown


async def test_a_slow_session_shows_the_panes_first(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An opening that takes longer than the wait: the panes are shown without the session
    (empty, the input usable), and the session fills them when it comes."""
    monkeypatch.setattr(first_frame, "WAIT_WALL", 0.0)
    release = threading.Event()
    app = make_app()
    open_session = app.open_session

    def slow(*args: object, **kwargs: object) -> object:
        release.wait(30)
        return open_session(*args, **kwargs)  # type: ignore[arg-type]

    app.open_session = slow  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.main_screen
        assert isinstance(screen, MainScreen)
        await wait_until(pilot, lambda: screen.panes_shown)
        assert screen.agent is None and screen.busy == "opening"
        release.set()
        await opened(pilot)
        assert screen.agent is not None and screen.panes_shown


def test_a_pause_stops_and_resumes_the_collector(collector_on: None) -> None:
    pause = GcPause()
    pause.start()
    assert not gc.isenabled() and pause.paused
    pause.end()
    assert gc.isenabled() and not pause.paused
    pause.end()  # a second end changes nothing
    assert gc.isenabled()


def test_a_pause_ended_at_the_frame_freezes_what_was_made(collector_on: None) -> None:
    """At the frame the collector runs again with every object there frozen (left out of its
    collections: the 2,000 made during the pause among them), until thawed, once."""
    pause = GcPause()
    pause.start()
    made = [{"n": n} for n in range(1000)] + [[n] for n in range(1000)]
    pause.end_at_frame()
    assert gc.isenabled() and not pause.paused and pause.frozen
    assert gc.get_freeze_count() >= len(made)
    pause.thaw()
    assert gc.get_freeze_count() == 0 and not pause.frozen
    gc.freeze()  # someone else's freeze: a second thaw leaves it alone
    pause.thaw()
    assert gc.get_freeze_count() > 0


def test_a_pause_that_stopped_nothing_freezes_nothing(collector_on: None) -> None:
    """The collector was off already: the pause neither turns it on nor freezes at the frame."""
    gc.disable()
    pause = GcPause()
    pause.start()
    pause.end_at_frame()
    assert not gc.isenabled() and not pause.frozen and gc.get_freeze_count() == 0


def test_a_pause_leaves_a_stopped_collector_stopped(collector_on: None) -> None:
    """A caller that disabled the collector itself keeps it so: the pause did not stop it."""
    gc.disable()
    pause = GcPause()
    pause.start()
    pause.end()
    assert not gc.isenabled()


async def test_the_first_opening_runs_paused_and_unmarked(
    make_app: AppFactory, collector_on: None
) -> None:
    """Inside the open worker: the collector paused and no loading indicator (first opening);
    after the frame: the collector back, the start-up's objects frozen. Opening again marks the
    history pane as loading and thaws them; so does closing the app."""
    app = make_app()
    seen: list[tuple[bool, bool]] = []
    open_session = app.open_session

    def watched(*args: object, **kwargs: object) -> object:
        screen = app.main_screen
        assert screen is not None
        seen.append((gc.isenabled(), screen.query_one(HistoryView).loading))
        return open_session(*args, **kwargs)  # type: ignore[arg-type]

    app.open_session = watched  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await wait_until(pilot, gc.isenabled)
        assert seen == [(False, False)]
        assert app.gc_pause.frozen and gc.get_freeze_count() > 0
        screen.open(screen.session_id)
        await wait_until(pilot, lambda: len(seen) == 2)
        await settle(pilot)
        assert seen[1] == (True, True)
        assert not app.gc_pause.frozen and gc.get_freeze_count() == 0
    closing = make_app()
    async with closing.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await wait_until(pilot, gc.isenabled)
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


async def test_the_narrow_tabs_are_made_where_they_show(make_app: AppFactory) -> None:
    """Wide: no tabs (the layout never shows them); narrowed: mounted, on the pane shown, and
    following F7. Narrow from the start: composed with the screen, and a click on a tab shows
    its pane (the tabs' message handled by its name: Textual's Tabs are imported with them)."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        assert screen.has_class("-wide") and not screen.query("#pane-tabs")
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        tabs = screen.query_one("#pane-tabs", Tabs)
        assert screen.has_class("-narrow") and tabs.active == "tab-history"
        await pilot.press("f7")
        await pilot.pause()
        assert screen.pane == "gauge" and tabs.active == "tab-gauge"
    narrow = make_app()
    async with narrow.run_test(size=(80, 24)) as pilot:
        screen = await opened(pilot)
        assert screen.query_one("#pane-tabs", Tabs).active == "tab-history"
        await pilot.click("#tab-scratch")
        await settle(pilot)
        assert screen.pane == "scratch" and screen.has_class("-pane-scratch")


def test_the_dialogs_wait_for_their_first_use() -> None:
    """Importing the workbench imports none of the dialogs a first frame does not show (nor
    Textual's TextArea, which the message dialog brings), nor the keys list, the compaction bar
    (mounted after the first frame), the narrow layout's tabs or the compaction's progress bar
    (with Textual's widgets for them)."""
    later = (
        "tui.screens.detail_modal",
        "tui.screens.search_modal",
        "tui.screens.workspace_modal",
        "tui.screens.permission_modal",
        "textual.widgets._text_area",
        "tui.screens.keys_modal",
        "tui.widgets.compact_bar",
        "textual.widgets._tabs",
        "textual.widgets._progress_bar",
    )
    code = f"import sys, tui.app; print([m for m in {later!r} if m in sys.modules])"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )  # fmt: skip
    assert done.stdout.strip() == "[]"


async def test_a_recording_is_on_screen_when_the_screen_says_so(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """marot's last input and answer (read off the file: its last ``user`` record with a string
    content, ``did you push?``, and the text of its last ``assistant`` record) are the chat's
    last entries once ``session_shown`` holds, the panes placed on the screen then and their
    rows wrapped."""
    store = Store.open(db_path)
    report = import_session(store, MAROT, str(workspace), settings=Settings())
    store.close()
    sid = report.session.id
    app = make_app(resume=sid)
    ended: list[bool] = []
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.main_screen
        assert isinstance(screen, MainScreen) and not screen.session_shown
        original = screen.opening_drawn

        def drawn() -> None:
            original()
            views = [v for v in screen.query(BlockView) if on_screen(v)]
            placed = screen.query_one("#panes").region.y
            ended.append((screen.session_shown, all(v.rows_ready for v in views), placed))

        screen.opening_drawn = drawn  # type: ignore[method-assign]
        await wait_until(pilot, lambda: bool(ended), 30)
        # the chat's and history's rows wrapped at their width by then (drawn, not pending),
        # and the panes laid out in their place, under the one-row header (in about half the
        # runs, the refresh after they were brought up came before that layout: parked still)
        assert ended == [(True, True, 1)] and screen.session_id == sid
        entries = [b.data for b in screen.query_one(ChatView).blocks]
        last_two = [e for e in entries if isinstance(e, ChatEntry)][-2:]
        assert [e.role for e in last_two] == ["user", "answer"]
        assert last_two[0].text == "did you push?"
        assert last_two[1].text.startswith("Yes — everything is pushed and clean:")


def test_the_pause_begins_before_the_workbench_is_imported(
    collector_on: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ctxscope`` pauses the collector before it imports the workbench (the import's heap is
    most of what a full collection walks) and hands the pause to the app; when the app never
    reaches a frame — an unknown ``--resume`` id, refused before any screen — the collector
    runs again after the command."""
    import cli.workbench as workbench
    from cli.main import main

    seen: list[bool] = []
    real = workbench._open

    def opening(*args: object) -> int:
        seen.append(gc.isenabled())
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(workbench, "_open", opening)
    argv = ["--workspace", str(tmp_path), "--db", str(tmp_path / "t.db"), "--resume", "9"]
    code = main(argv, run_tui=workbench.run_tui)
    assert code != 0
    assert seen == [False]
    assert gc.isenabled()


async def test_closing_at_the_first_frame_is_clean(make_app: AppFactory) -> None:
    """The app closed as soon as the first session's frame is up (what the benchmark does):
    the compaction bar, mounted after that frame, finds the screen going and mounts nothing
    (it raised MountError, which ``run_test`` raises again, and which ``ctxscope`` printed with
    a traceback as it closed)."""
    app = make_app()
    ended: list[bool] = []
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.main_screen
        assert isinstance(screen, MainScreen)
        original = screen.opening_drawn

        def drawn() -> None:
            original()  # asks for the compaction bar after the next refresh
            ended.append(True)
            app.call_after_refresh(app.exit, 0)

        screen.opening_drawn = drawn  # type: ignore[method-assign]
        await wait_until(pilot, lambda: bool(ended), 30)
    assert ended == [True] and app.return_code == 0
