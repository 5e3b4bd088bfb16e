"""Issue 30: a recorded session shown through its own agent — the header names the recorded
model (never OFFLINE), the gauge has one countdown, to Claude Code's own auto-compact point,
and ctxscope's strategy threshold shows only as a labelled what-if."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from tests.tui.conftest import AppFactory
from tests.tui.helpers import opened, screen_lines
from tests.tui.test_recorded_readonly import imported
from tui.widgets.layer_bar import LayerBar
from tui.widgets.session_header import SessionHeader
from tui.widgets.token_gauge import TokenGauge

pytestmark = pytest.mark.anyio

# The corpus file's last assistant record with usage (python over the jsonl: the last
# `type == "assistant"` line with `message.usage`): input 3, cache read 77,272, cache write 59,
# output 85; Claude Code on a 200,000 window compacts at 167,000 (docs/watch.md: the one
# recorded auto compaction fired at preTokens 167,094).
CONTEXT = 3 + 77_272 + 59 + 85  # 77,419
UNTIL = 167_000 - CONTEXT  # 89,581


async def test_header_and_gauge_are_the_recorded_agents(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    sid = imported(db_path, workspace)
    app = make_app(resume=sid)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        header = str(screen.query_one(SessionHeader).render())
        # the recorded cost: $11.853923 worked out by hand in tests/cli/test_recorded_figures.py
        assert "Claude Code · claude-opus-4-6 · $11.85" in header and "recorded" in header
        assert "OFFLINE" not in header
        lines = screen_lines(app)
        text = "\n".join(lines)
        assert "OFFLINE" not in text and "offline" not in text.lower()
        gauge = str(screen.query_one(TokenGauge).query_one("#gauge-figures").render())
        assert f"context {CONTEXT:,} / 200,000 window" in gauge
        assert f"{UNTIL:,} until auto-compact (Claude Code compacts at 167,000)" in gauge
        # one countdown: ctxscope's own threshold is a labelled what-if, not a countdown
        assert gauge.count(" until ") == 1 and "until compaction" not in gauge
        assert "what-if, not what Claude Code does: ctxscope's layered would compact" in gauge
        bar = screen.query_one(LayerBar)
        assert bar.state is not None and bar.state.threshold == 167_000
        assert "auto-compact 167.0k" in str(bar.render())
        assert "% threshold" not in str(bar.render())
        # the input box says what typing there does
        assert "forks this recording" in text


async def test_the_gauge_shows_the_tools_a_recording_lists_apart(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """The corpus' Claude Code 2.1.284 session lists the 14 tools its requests carried (its
    prompt snapshot, line 30): the gauge's L1 is the tools apart ("its 14 tools (recorded)",
    the same count `context` prints: tests/engine/recordings/test_corpus_newer.py) and the
    rest of the hidden prefix (30,212 in all) as the system prompt and the rest; its context
    35,604 as the last call reported it (input 2 + cache read 32,480 + cache write 2,956 +
    output 166: the file's last usage, line 57)."""
    from engine.recordings.importing import import_session
    from engine.settings.config import Settings
    from engine.store import Store
    from tests.engine.recordings.corpus import CORPUS
    from tui.screens.main_screen import MainScreen
    from tui.widgets.token_gauge import legend

    name = "KuzniAI__opencode-entire-plugin__entire__K0_01M3Q4WPN518QH04367X86D6K0_0_full.jsonl"
    store = Store.open(db_path)
    report = import_session(store, CORPUS / name, str(workspace), settings=Settings())
    store.close()
    app = make_app(resume=report.session.id)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        assert isinstance(screen, MainScreen)
        state = screen.query_one(TokenGauge).state
        assert state is not None
        tools, system = state.layers["L1 tools"], state.layers["L1 system"]
        assert tools > 0 and tools + system == 30_212
        assert state.layers["L3 history"] + tools + system == 35_604
        console = Console(width=200, record=True, file=io.StringIO())
        console.print(legend(state, 2))
        text = " ".join(console.export_text().split())
        assert f"its 14 tools (recorded) {tools:,}" in text
        assert "Claude Code's system prompt & the rest (est.)" in text


async def test_the_gauge_says_a_runs_own_totals_where_it_records_no_call(
    make_app: AppFactory, db_path: Path, workspace: Path
) -> None:
    """The corpus' SWE-agent trajectory records its calls in total only (its info.model_stats:
    5 api_calls, 52,861 tokens sent, 326 received, instance_cost 0.53839): the gauge's cost
    is ctxscope's "–" and, below it, the run's own totals, said as its own (the line `context`
    and `show` print: tests/test_one_truth.py)."""
    from tests.tui.test_recorded_readonly import SWE_AGENT

    app = make_app(resume=imported(db_path, workspace, SWE_AGENT))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        gauge = str(screen.query_one(TokenGauge).query_one("#gauge-figures").render())
        text = " ".join(gauge.split())
        assert "0 compactions recorded · cost –" in text
        assert (
            "SWE-agent's own totals (no call recorded one by one): 5 calls, 52,861 tokens "
            "sent, 326 received, $0.54" in text
        )
