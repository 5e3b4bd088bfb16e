"""Degenerate compactions flagged (engine/recordings/degenerate.py): a fixture of each kind,
flagged at import (a warning line) and by ``watch`` (the compaction event and a notice), with
the untouched fixture as the control that is not flagged.

The Codex fixtures are cut from ``fixtures/codex-0.104-compacted.jsonl`` (25 lines): its last
call before the compaction (line 17) sent 9,650 tokens (``total_tokens``: Codex's context, the
reader's ``preTokens``), its ``compacted`` record (line 20) keeps the user's request and a
summary in ``replacement_history``, and the first call after it (line 23) sent 1,200 input
tokens: 88 % freed, not degenerate.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.recordings.degenerate import session_flags
from engine.recordings.follow import Follower
from engine.settings.config import Settings
from engine.store import Store
from tests.cli_run import run_main as run
from tests.engine.recordings.corpus import MAROT, MOREDIP_AGENT

CODEX = Path(__file__).parent / "fixtures" / "codex-0.104-compacted.jsonl"
PERMISSIONS = "<permissions instructions>x</permissions instructions>"
CONTEXT = "<environment_context>\n  <cwd>/home/dev/shop</cwd>\n</environment_context>"
ENVELOPE = [
    {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": PERMISSIONS}],
    },
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": CONTEXT}]},
]
"""What Codex 0.145's replacement history held (openai/codex#36642): the start-up envelope."""


def _codex_lines() -> list[dict]:
    return [json.loads(line) for line in CODEX.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _kinds(tmp_path: Path, src: Path, capsys: pytest.CaptureFixture[str]) -> tuple[list[str], str]:
    db = tmp_path / "d.db"
    code, out, _ = run(capsys, "import", str(src), "--db", str(db))
    assert code == 0
    store = Store.open(db, read_only=True)
    try:
        kinds = [f.kind for f in session_flags(store, 1, Settings())]
    finally:
        store.close()
    return kinds, out


def test_the_untouched_codex_compaction_is_not_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kinds, out = _kinds(tmp_path, _write(tmp_path / "c.jsonl", _codex_lines()), capsys)
    assert kinds == [] and "degenerate" not in out


def test_an_envelope_only_replacement_history_is_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Line 20's history replaced by the envelope alone, ``message`` empty: nothing of the
    conversation is left (2 items, 0 conversation); the summary is the reader's placeholder, so
    it is opaque too."""
    records = _codex_lines()
    records[19]["payload"]["replacement_history"] = ENVELOPE
    kinds, out = _kinds(tmp_path, _write(tmp_path / "c.jsonl", records), capsys)
    assert kinds == ["opaque", "envelope_only"]
    assert (
        "warning: degenerate compaction: session 1, compaction 1: envelope_only — the "
        "replacement history holds 2 items, all start-up envelope: none of the conversation"
    ) in out


def test_a_server_compaction_with_no_readable_summary_is_opaque(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Line 20 (the ``compacted`` record) removed: only ``event_msg/context_compacted`` is
    left, Codex's compaction on the server whose summary is encrypted."""
    records = _codex_lines()
    del records[19]
    kinds, _ = _kinds(tmp_path, _write(tmp_path / "c.jsonl", records), capsys)
    assert kinds == ["opaque"]


def test_a_compaction_that_freed_little_is_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The call after the compaction (line 23) made to send 9,500 input tokens: 1 − 9,500 /
    9,650 = 1.6 % freed, under the default 20 %."""
    records = _codex_lines()
    records[22]["payload"]["info"]["last_token_usage"]["input_tokens"] = 9_500
    kinds, out = _kinds(tmp_path, _write(tmp_path / "c.jsonl", records), capsys)
    assert kinds == ["freed_little"]
    assert "freed_little — freed 2% of 9,650 tokens (9,500 after)" in out


USAGE = {"input_tokens": 100, "output_tokens": 10}


def _anthropic(summaries: list[str], between: int) -> list[dict]:
    """A request, a call, a compaction; ``between`` calls; then a second compaction."""
    t = iter(f"2026-03-01T10:00:{s:02d}Z" for s in range(60))
    lines = [
        {"role": "user", "content": "fix it", "timestamp": next(t)},
        {"role": "assistant", "content": "working", "usage": USAGE, "timestamp": next(t)},
        {"role": "user", "content": summaries[0], "compact_summary": True, "timestamp": next(t)},
    ]
    for n in range(between):
        lines += [
            {"role": "user", "content": f"go on {n}", "timestamp": next(t)},
            {"role": "assistant", "content": "ok", "usage": USAGE, "timestamp": next(t)},
        ]
    lines.append(
        {"role": "user", "content": summaries[1], "compact_summary": True, "timestamp": next(t)}
    )
    lines += [
        {"role": "user", "content": "last", "timestamp": next(t)},
        {"role": "assistant", "content": "done", "usage": USAGE, "timestamp": next(t)},
    ]
    return lines


def test_an_empty_summary_is_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The first summary empty, four calls before the second compaction (no spiral)."""
    src = _write(tmp_path / "a.jsonl", _anthropic(["", "The user asked to fix it."], 4))
    kinds, out = _kinds(tmp_path, src, capsys)
    assert kinds == ["empty"]
    assert "compaction 1: empty — the summary is empty: 2 messages went with nothing" in out


def test_a_compaction_right_after_another_is_a_spiral_with_its_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two summaries one call apart (≤ 3, the default): a spiral. The file names no model, so
    no price: the cost is not known. With ``degenerate_spiral_requests`` 0 it is not one."""
    src = _write(tmp_path / "a.jsonl", _anthropic(["Fixing it.", "Still fixing it."], 1))
    kinds, out = _kinds(tmp_path, src, capsys)
    assert kinds == ["spiral"]
    assert "compaction 2: spiral — 1 API calls after compaction 1" in out
    store = Store.open(tmp_path / "d.db", read_only=True)
    try:
        assert session_flags(store, 1, Settings(degenerate_spiral_requests=0)) == []
    finally:
        store.close()


def test_two_compaction_agents_for_one_boundary_are_flagged_with_the_extra_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """marot's one compaction with two ``agent-acompact-*`` files beside it (moredip's real
    subagent transcript twice, as in tests/cli/test_report.py): two agents wrote a summary for
    one boundary; the extra one's cost is its usage at Opus 4.5's list price, the same as the
    call the report prices (``call.cost``)."""
    project = tmp_path / "p"
    calls = project / "marot" / "subagents"
    calls.mkdir(parents=True)
    shutil.copy(MAROT, project / "marot.jsonl")
    shutil.copy(MOREDIP_AGENT, calls / "agent-acompact-a1.jsonl")
    shutil.copy(MOREDIP_AGENT, calls / "agent-acompact-b2.jsonl")
    db = tmp_path / "d.db"
    code, out, _ = run(capsys, "import", str(project / "marot.jsonl"), "--db", str(db))
    assert code == 0
    store = Store.open(db, read_only=True)
    try:
        (flag,) = session_flags(store, 1, Settings())
    finally:
        store.close()
    assert flag.kind == "duplicate_agents"
    assert flag.detail == "2 compaction agents wrote a summary for this one boundary"
    code, out, _ = run(capsys, "report", "--db", str(db), "--json")
    (only,) = json.loads(out)["compactions"]["list"]
    assert flag.cost is not None and flag.cost == pytest.approx(only["call"]["cost"], abs=1e-9)


def test_watch_flags_a_degenerate_compaction_in_its_event_and_a_notice(tmp_path: Path) -> None:
    """The freed-little rollout followed: first up to the compaction (lines 1-19), then the
    rest. The look that sees the compaction carries the flag in its figures, and a notice (the
    warning line ``watch`` shows) names it."""
    records = _codex_lines()
    records[22]["payload"]["info"]["last_token_usage"]["input_tokens"] = 9_500
    f = _write(tmp_path / "rollout-x.jsonl", records[:19])
    follower = Follower(f, Settings(), Store.open(tmp_path / "w.db"))
    assert follower.poll() is not None
    follower.take_notices()
    with open(f, "a", encoding="utf-8") as out:
        out.write("".join(json.dumps(r) + "\n" for r in records[19:]))
    update = follower.poll()
    assert update is not None and "compaction" in update.events
    assert update.compaction is not None
    (flag,) = update.compaction["degenerate"]
    assert flag["kind"] == "freed_little"
    assert any(
        n.startswith("degenerate compaction: session 1, compaction 1: freed_little — freed 2%")
        for n in follower.take_notices()
    )


def test_show_report_and_the_page_name_a_spiral(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The spiral fixture: ``show`` has a degenerate line under compaction 2, ``report
    --json`` counts it by kind, the HTML page marks it."""
    src = _write(tmp_path / "a.jsonl", _anthropic(["Fixing it.", "Still fixing it."], 1))
    db = str(tmp_path / "d.db")
    assert run(capsys, "import", str(src), "--db", db)[0] == 0
    _, text, _ = run(capsys, "show", "1", "--db", db)
    assert "  degenerate: session 1, compaction 2: spiral — 1 API calls after compaction 1" in text
    _, out, _ = run(capsys, "show", "1", "--db", db, "--json")
    assert [f["kind"] for f in json.loads(out)["degenerate"]] == ["spiral"]
    _, out, _ = run(capsys, "report", "--db", db, "--json")
    degenerate = json.loads(out)["compactions"]["degenerate"]
    assert degenerate["count"] == 1 and degenerate["by_kind"]["spiral"] == 1
    assert (
        run(capsys, "export", "1", "--db", db, "--format", "html", "-o", str(tmp_path / "p.html"))[
            0
        ]
        == 0
    )
    page = (tmp_path / "p.html").read_text(encoding="utf-8")
    assert '<p class="flag">degenerate: spiral — 1 API calls after compaction 1' in page


def test_report_html_lists_the_degenerate_compactions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The empty-summary fixture: ``report --html`` has the table of flags."""
    src = _write(tmp_path / "a.jsonl", _anthropic(["", "The user asked to fix it."], 4))
    db = str(tmp_path / "d.db")
    assert run(capsys, "import", str(src), "--db", db)[0] == 0
    out = tmp_path / "r.html"
    assert run(capsys, "report", "--db", db, "--html", "-o", str(out))[0] == 0
    page = out.read_text(encoding="utf-8")
    assert '<h3 class="flag">Degenerate compactions: 1</h3>' in page
    assert "<td>empty</td>" in page
