"""Issue 44: over a generated history (bench/make_history.py), ``sessions --json`` and
``report --json`` give each session the figures ``show`` and ``context`` give for it alone,
those are the recordings' own, and the report's totals are the sum of its sessions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.make_history import make_history
from tests.cli_run import run

SESSIONS = 8
"""Files made: the four corpus recordings in turn (two copies of each), and the two copies
of moredip's session bring their subagent: 10 sessions."""

# Each recording's requests and tokens, worked out once from the corpus file itself with a
# Python one-liner, not with ctxscope: Claude Code's assistant records grouped by
# ``message.id`` (a response written as several records repeats its usage), the last usage
# of each group summed, cache writes split by ``cache_creation``'s 5-minute and 1-hour
# figures; Codex's ``token_count`` events with a ``total_token_usage`` unlike the previous
# one (each is written twice), their ``last_token_usage`` summed, input being
# ``input_tokens - cached_input_tokens``. Costs by hand at the providers' list prices per
# million tokens: Opus 4.5 / 4.6 $5 in, $25 out, $0.50 cache read, $6.25 5-minute and $10
# 1-hour cache write; Sonnet 4.5 $3, $15, $0.30, $3.75; gpt-5-codex $1.25 in, $0.125 cached
# in, $10 out; each rounded to the millionth as ctxscope prints it.
# (requests, input, output, cache read, cache write 5m, cache write 1h, cost)
MAROT = (152, 180, 38899, 14771617, 0, 349474, 11.853924)
"""180·5 + 38,899·25 + 14,771,617·0.5 + 349,474·10 per million = 11.8539235."""
POMODORO = (40, 265, 12700, 1295467, 55442, 0, 0.787843)
"""265·3 + 12,700·15 + 1,295,467·0.3 + 55,442·3.75 per million = 0.7878426."""
MOREDIP = (2, 18, 4, 32772, 6682, 0, 0.058339)
"""18·5 + 4·25 + 32,772·0.5 + 6,682·6.25 per million = 0.0583385."""
MOREDIP_AGENT = (2, 4, 8, 11560, 12675, 0, 0.085219)
"""4·5 + 8·25 + 11,560·0.5 + 12,675·6.25 per million = 0.08521875."""
CODEX = (21, 33995, 14976, 181760, 0, 0, 0.214974)
"""33,995·1.25 + 181,760·0.125 + 14,976·10 per million = 0.21497375."""
BY_MODEL = {
    "claude-opus-4-6": MAROT,
    "claude-sonnet-4-5-20250929": POMODORO,
    "gpt-5-codex": CODEX,
}


def expected(row: dict[str, Any]) -> tuple[int, int, int, int, int, int, float]:
    """What the recording a session was copied from holds (moredip's two by parent)."""
    if row["model"] == "claude-opus-4-5-20251101":
        return MOREDIP_AGENT if row["parent_session_id"] else MOREDIP
    return BY_MODEL[row["model"]]


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    make_history(home, SESSIONS)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("CTXSCOPE_DB", str(tmp_path / "db.sqlite"))
    monkeypatch.chdir(tmp_path)
    return home


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    return json.loads(out)


def test_listing_and_report_give_each_session_its_own_figures(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every session's requests, tokens and cost agree across ``sessions``, ``report``,
    ``show`` and ``context`` and with its recording; the report's totals are their sum."""
    imported = as_json(capsys, "import", "--json")
    assert imported["files"]["new"] == SESSIONS
    listed = {row["id"]: row for row in as_json(capsys, "sessions", "--json")}
    report = as_json(capsys, "report", "--json")
    reported = {row["id"]: row for row in report["sessions"]}
    assert len(listed) == len(reported) == SESSIONS + 2
    for sid, row in reported.items():
        requests, inp, out, read, write_5m, write_1h, cost = expected(row)
        tokens = row["tokens"]
        assert (row["requests"], tokens["input"], tokens["output"]) == (requests, inp, out)
        assert (tokens["cache_read"], tokens["cache_write_5m"]) == (read, write_5m)
        assert tokens["cache_write_1h"] == write_1h
        assert row["cost"]["total"] == pytest.approx(cost, abs=1e-6)
        alone = [
            listed[sid]["figures"],
            as_json(capsys, "show", str(sid), "--json")["figures"],
            as_json(capsys, "context", str(sid), "--json")["figures"],
        ]
        for figures in alone:
            assert figures["requests"] == requests
            assert figures["tokens"]["input"] == inp
            assert figures["tokens"]["output"] == out
            assert figures["tokens"]["cache_read"] == read
            assert figures["tokens"]["cache_write"] == write_5m + write_1h
            assert figures["cost"] == pytest.approx(cost, abs=1e-6)
    totals = report["totals"]
    assert totals["sessions"] == SESSIONS + 2
    # two copies of each recording: 2 × (152 + 40 + 2 + 2 + 21) requests
    assert totals["requests"] == 434 == sum(r["requests"] for r in reported.values())
    for kind in ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h"):
        assert totals["tokens"][kind] == sum(r["tokens"][kind] for r in reported.values())
    # 2 × (11.853924 + 0.787843 + 0.058339 + 0.085219 + 0.214974), each priced unrounded
    assert totals["cost"]["total"] == pytest.approx(26.000598, abs=1e-5)
