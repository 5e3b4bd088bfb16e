"""One truth per figure (issue 37), the workbench's half: every corpus recording opened in the
workbench shows, in its header and its gauge, the window, auto-compact point, context and cost
that ``import --json`` gives (tests/test_one_truth.py runs the command-line surfaces).

The figures are read off the screen as a user reads them — the gauge's text and the header's
line — never from the record the surfaces share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_run import run_redirected as run
from tests.test_one_truth import CORPUS, MAIN_FILES
from tests.tui.conftest import AppFactory
from tests.tui.helpers import opened
from tui.widgets.session_header import SessionHeader
from tui.widgets.token_gauge import TokenGauge

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("name", MAIN_FILES)
async def test_the_workbench_shows_the_imported_figures(
    name: str, make_app: AppFactory, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code, out, err = run("import", str(CORPUS / name), "--db", str(db_path), "--json")
    assert code == 0, err
    imported = json.loads(out)
    figures = imported["figures"]
    app = make_app(resume=imported["session_id"])
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await opened(pilot)
        header = str(screen.query_one(SessionHeader).render())
        gauge = str(screen.query_one(TokenGauge).query_one("#gauge-figures").render())
        scale = str(screen.query_one(TokenGauge).query_one("#gauge-bar").render()).splitlines()[-1]
    cost = figures["cost"]
    assert ("–" if cost is None else f"${cost:,.2f}") in header
    if figures["context_tokens"] is None:
        assert "context – (no API usage recorded)" in gauge
    else:
        assert (
            f"context {figures['context_tokens']:,} / {figures['context_window']:,} window "
            f"({figures['percent']}%)" in gauge
        )
    if figures["auto_compact_at"] is not None:
        assert f"{figures['until_auto_compact']:,} until auto-compact" in gauge
        assert f"compacts at {figures['auto_compact_at']:,})" in gauge
        # the bar's mark says it whole (at 967,000 of 1,000,000 the window's "1.0M" once
        # overwrote its end: "967.1.0M")
        label = f"auto-compact {figures['auto_compact_at'] / 1000:.1f}k"
        assert label + " ▲" in scale or "▲ " + label in scale, scale
    else:
        assert "auto-compact point is not known" in gauge
