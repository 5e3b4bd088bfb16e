"""The workbench's pure parts: wrapping, formatting, gauge maths, completion, the bridge, CLI."""

from __future__ import annotations

import argparse
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from cli.common import CliError
from cli.workbench import parse_resume
from cli.workbench import run_tui as run
from engine.events import Notice, TextDelta
from engine.llm.base import OFFLINE_NAME
from engine.messages.tokens import BudgetCheck
from engine.models import Compaction, Trigger, Usage, UsageRecord
from engine.settings.config import Settings
from tests.tui.helpers import WORKSPACE_FILES
from tui.bridge import EngineBridge
from tui.formatting import provider_label, relative_time, strip_reminders
from tui.gauge_state import Decision, GaugeState, severity, steps_and_marks
from tui.text_wrap import wrap_rows
from tui.widgets.block_view import Block, BlockView
from tui.widgets.chat_input import WorkspaceSuggester, workspace_files
from tui.widgets.layer_bar import bar_cells


def test_wrap_rows_words_cells_and_cap() -> None:
    assert wrap_rows("alpha beta gamma", 11, None) == ["alpha beta", "gamma"]
    assert wrap_rows("abcdefghij", 4, None) == ["abcd", "efgh", "ij"]
    assert wrap_rows("中文字符", 4, None) == ["中文", "字符"]
    assert wrap_rows("a\tb\x1b", 10, None) == ["a   b\\x1b"]
    capped = wrap_rows("1\n2\n3\n4\n5", 10, 2)
    assert capped[:2] == ["1", "2"]
    assert capped[2].startswith("… 3 more lines")


def test_relative_time_and_labels() -> None:
    now = datetime(2025, 3, 14, 15, 0, tzinfo=UTC)
    assert relative_time(now - timedelta(seconds=30), now) == "just now"
    assert relative_time(now - timedelta(minutes=5), now) == "5 min ago"
    assert relative_time(now - timedelta(hours=3), now) == "3 h ago"
    assert relative_time(now - timedelta(days=2), now) == "2 d ago"
    assert relative_time(now - timedelta(days=90), now) == "2024-12-14"
    assert provider_label(OFFLINE_NAME, "offline").startswith("OFFLINE")
    assert provider_label("anthropic", "claude-x") == "anthropic · claude-x"
    text = "fix @a.py\n\n<system-reminder>\nThe user mentioned @a.py.\n</system-reminder>"
    assert strip_reminders(text) == "fix @a.py"


def test_gauge_severity_estimate_and_marks() -> None:
    assert severity(10, 100) == "ok"
    assert severity(75, 100) == "near"
    assert severity(100, 100) == "over"
    budget = BudgetCheck(
        last_usage=790,
        input_estimate=0,
        estimated_total=790,
        threshold=800,
        message_count=5,
        fire=False,
        source="api",
    )
    state = GaugeState(context_window=1000, threshold=800, budget=budget)
    assert state.next_estimate == 790 and not state.fires
    typed = state.typing(30)  # 30 chars // 3 = 10 tokens: 800 reaches the threshold
    assert typed.next_estimate == 800 and typed.severity == "over"
    # Whether it compacts first is the strategy's decision, not the estimate's.
    assert not typed.fires
    refused = Decision("layered", "x 800 >= 800", fires=True, compacts=False, reason="crowded")
    assert not replace(typed, decision=refused).fires
    assert refused.warning == "x 800 >= 800, but layered will not compact: crowded"
    agreed = Decision("layered", "x 800 >= 800", fires=True, compacts=True)
    assert replace(typed, decision=agreed).fires and agreed.warning is None
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    usages = [
        UsageRecord(
            session_id=1,
            round_index=1,
            step=i,
            created_at=t0 + timedelta(minutes=i),
            usage=Usage(input_tokens=100 * i),
        )
        for i in range(1, 5)
    ]
    comp = Compaction(
        session_id=1,
        trigger=Trigger.MANUAL,
        strategy="layered",
        created_at=t0 + timedelta(minutes=2, seconds=30),
    )
    skipped = comp.model_copy(update={"outcome": "skipped"})
    assert steps_and_marks(usages, [comp, skipped]) == ((100, 200, 300, 400), (2,))


def test_bar_cells_add_up_to_the_used_share() -> None:
    layers = {"L1 system": 100, "L1 tools": 250, "L3 history": 149}
    cells = dict(bar_cells(layers, 1000, 50))
    assert sum(cells.values()) == 25  # 499 / 1000 of 50 cells, rounded once
    assert cells["L1 system"] == 5 and cells["scratchpad"] == 0


def test_suggester_completes_the_trailing_mention(tmp_path: Path) -> None:
    for rel in WORKSPACE_FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.py").write_text("x")
    files = workspace_files(tmp_path)
    assert "build/out.py" not in files
    assert files.index("README.md") < files.index("src/calc.py")  # shallow first
    suggester = WorkspaceSuggester(files)
    assert suggester.complete("look at @src/ca") == "look at @src/calc.py"
    assert suggester.complete("mail me@src") is None  # preceded by a letter: not a mention
    assert suggester.complete("@nothing/") is None
    assert suggester.complete("no mention") is None


def test_bridge_posts_one_text_message_per_step_until_read() -> None:
    posted: list[object] = []

    class Target:
        def post_message(self, message: object) -> bool:
            posted.append(message)
            return True

    bridge = EngineBridge(Target())  # type: ignore[arg-type]
    for i in range(1000):
        bridge(TextDelta(round_index=1, step=1, text=str(i % 10)))
    assert len(posted) == 1
    assert len(bridge.take_text(1, 1)) == 1000
    bridge(TextDelta(round_index=1, step=1, text="!"))
    bridge(TextDelta(round_index=1, step=2, text="?"))
    bridge(Notice(message="hello"))
    assert [type(m).__name__ for m in posted] == [
        "TextStreamed",
        "TextStreamed",
        "TextStreamed",
        "EventReceived",
    ]
    first, second = posted[0], posted[1]
    assert isinstance(first, EngineBridge.TextStreamed)
    assert first.can_replace(second)  # type: ignore[arg-type]
    assert not first.can_replace(posted[2])  # type: ignore[arg-type]
    assert bridge.take_text(1, 1).endswith("!")


class BlockApp(App[None]):
    def compose(self) -> ComposeResult:
        yield BlockView(id="view")


@pytest.mark.anyio
async def test_block_view_appends_replaces_and_pops() -> None:
    app = BlockApp()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.query_one(BlockView)
        view.set_blocks(
            [Block(body=f"row {i}", header=((f"h{i}", "block-view--header"),)) for i in range(20)]
        )
        await pilot.pause()
        assert view.row_count == 40
        assert view.is_vertical_scroll_end is False
        view.scroll_end(animate=False, immediate=True)
        view.append_block(Block(body="tail one\ntail two"))
        assert view.row_count == 42
        assert view.scroll_y == view.max_scroll_y  # followed the tail
        view.replace_last(Block(body="tail"))
        assert view.row_count == 41
        assert view.pop_last() is not None and view.row_count == 40
        assert view.block_at_row(0) == 0 and view.block_at_row(39) == 19
        assert view.block_at_row(40) is None
        view.focus()
        await pilot.press("home", "down", "down")
        assert view.cursor == 2
        line = view.render_line(0)
        assert "h" in line.text


def test_parse_resume_and_run_errors(tmp_path: Path) -> None:
    assert parse_resume(None) is None
    assert parse_resume("latest") == "latest"
    assert parse_resume("12") == 12
    with pytest.raises(CliError, match="session id"):
        parse_resume("abc")
    args = argparse.Namespace(workspace=tmp_path / "missing", resume=None, db=tmp_path / "x.db")
    with pytest.raises(CliError, match="not a directory"):
        run(args, Settings(model="offline"))


def test_run_opens_the_requested_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.store import SessionNotFound, Store
    from tui.app import CtxscopeApp

    store = Store.open(tmp_path / "s.db")
    store.create_session(str(tmp_path), "kept")
    store.close()
    seen: list[object] = []

    def fake_run(self: CtxscopeApp) -> None:
        seen.append(self.resume)
        self.store.close()

    monkeypatch.setattr(CtxscopeApp, "run", fake_run)
    args = argparse.Namespace(workspace=tmp_path, resume="1", db=tmp_path / "s.db")
    assert run(args, Settings(model="offline")) == 0
    args.resume = "latest"
    assert run(args, Settings(model="offline")) == 0
    assert seen == [1, "latest"]
    args.resume = "7"
    with pytest.raises(SessionNotFound):
        run(args, Settings(model="offline"))
