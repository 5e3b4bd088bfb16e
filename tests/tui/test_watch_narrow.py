"""Issue 30: the watch bar keeps the most important figures first at 80 columns — the context
against the window, the tokens until the agent's own auto-compaction, the compactions so far —
and leaves out the last call's usage first."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.recordings.follow import Figures
from tests.tui.helpers import main_screen, wait_until
from tests.tui.test_watch import MAROT, opened, watch_app
from tui.watch import WatchBar, bar_text

pytestmark = pytest.mark.anyio

# The figures of issue 30's example: 164,745 of Claude Code's 200,000 window, 167,000 - 164,745
# = 2,255 to its auto-compaction.
NEAR = Figures(
    context_tokens=164_745,
    context_window=200_000,
    until_compact=2_255,
    compact_at=167_000,
    compactions=1,
    warning=True,
    last_usage={"input": 1, "cache_read": 162_399, "cache_write": 1_925, "output": 420},
)


@pytest.mark.parametrize("warning", [True, False])
def test_at_78_columns_the_three_figures_come_whole(warning: bool) -> None:
    fig = Figures(**{**NEAR.__dict__, "warning": warning})
    line = bar_text(fig, 78)  # an 80-column terminal less the bar's padding
    assert len(line) <= 78
    assert line.startswith(("⚠ " if warning else "") + "context 164,745 / 200,000 (82.4%)")
    assert "until auto-compact 2,255 · compactions 1" in line


def test_wide_enough_the_bar_is_whole_and_the_usage_goes_first_when_not() -> None:
    whole = bar_text(NEAR)
    assert bar_text(NEAR, len(whole)) == whole
    assert whole.endswith("last call: in 1 · cache read 162,399 · cache write 1,925 · out 420")
    middle = bar_text(NEAR, 125)  # the figures (78 characters), then the usage said shorter
    assert len(middle) <= 125 and middle.endswith(
        "compactions 1 · in 1 · read 162.4k · write 1.9k · out 420"
    )


async def test_the_watch_bar_at_80_columns(tmp_path: Path, workspace: Path, db_path: Path) -> None:
    f = tmp_path / "258c7280.jsonl"
    f.write_bytes(MAROT.read_bytes())  # the whole file: its one compaction recorded
    app = watch_app(f, db_path, workspace)
    async with app.run_test(size=(80, 30)) as pilot:
        await opened(pilot)
        widget = main_screen(app).query_one(WatchBar)
        # The figures may come before the bar is laid out; the line is made at drawing time
        # for the width the bar has then (CI once caught a line made before the bar had one).
        await wait_until(pilot, lambda: widget.figures is not None and widget.size.width > 0)
        assert widget.size.width == 78  # 80 columns less the bar's padding
        shown = str(widget.render())
        assert len(shown) <= 78
        assert shown.startswith("context ")
        assert (
            " · until auto-compact " in shown
            and shown.endswith(" · compactions 1")
            or (" · compactions 1 · " in shown)
        )
